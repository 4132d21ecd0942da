"""The re-ingest fast path: a grown log's new lines appended to its stored boot with sqlite3 alone.

`bootlog ingest FILE` on a file ingested before (the hook, watch, a cron job) usually finds a few
hundred new runtime lines that only extend the boot already stored. Importing SQLAlchemy and the
ORM models costs ~0.15 s, far more than reading and storing those lines, so for an existing
SQLite database at the current schema ingest first gets a Lite store: the position and
last-boot lookups and the extend-only write are a handful of plain SQL statements on the same
tables, with the same rows (store/rows.py builds them for both writers). Anything else (new
boots, a new source, a database to create or migrate) goes to the SQLAlchemy store, opened only
then.  tests/test_lite.py holds both paths to identical tables on real logs.
"""
from __future__ import annotations

import json
import os
import sqlite3
from typing import Any, Callable

from bootlog.errors import StoreError
from bootlog.records import Boot
from bootlog.store import rows
from bootlog.store.where import HEAD_REVISION, plain_sqlite_file, resolve_url

BUSY_TIMEOUT_MS = 30_000  # as store/db.py's engine


class PositionMoved(Exception):
    """Another ingest stored this file's new lines first: the read must start again."""


def _json(value: Any) -> str:
    # what SQLAlchemy's JSON type writes on SQLite (json.dumps, default separators)
    return json.dumps(value)


class Lite:
    """Just enough of the store for a resumed read of one file (see the module doc)."""

    lite = True

    def __init__(self, conn: sqlite3.Connection, full: Callable[[], Any]) -> None:
        self.conn = conn
        self._full = full  # opens the SQLAlchemy engine when the fast path cannot do a write
        self._engine = None

    # ------------------------------------------------------------ reads (autocommit)

    def get_position(self, key: str) -> tuple[int, str] | None:
        row = self._read("SELECT byte_offset, head_fingerprint FROM positions WHERE source_key = ?", (key,))
        return (row[0], row[1]) if row else None

    def last_boot_of_source(self, name: str) -> tuple[int, str] | None:
        row = self._read(
            "SELECT boots.id, boots.status FROM boots JOIN sources ON sources.id = boots.source_id "
            "WHERE sources.name = ? ORDER BY boots.last_line DESC, boots.id DESC LIMIT 1", (name,))
        return (row[0], row[1]) if row else None

    def _read(self, sql: str, params: tuple) -> tuple | None:
        try:
            return self.conn.execute(sql, params).fetchone()
        except sqlite3.Error as err:
            raise StoreError(f"cannot read database: {err}") from err

    # ------------------------------------------------------------ writes

    def engine(self):
        """The SQLAlchemy engine on the same database (opened on first call)."""
        if self._engine is None:
            self._engine = self._full()
        return self._engine

    def save_boots(self, src: rows.SourceInfo, boots: list[Boot], position: tuple[str, int, str] | None = None,
                   extend: int | None = None, resumed_from: int | None = None) -> list[tuple[int, bool]]:
        """queries.save_boots for a resumed read whose lines only extend the stored boot `extend`
        (or are no vLLM lines at all); everything else is handed to queries.save_boots."""
        only_extend = (extend is not None and len(boots) == 1 and boots[0].continued) or \
            (extend is None and not boots)
        if only_extend and position is not None:
            try:
                done = self._extend(src, boots[0] if boots else None, extend, position, resumed_from)
            except sqlite3.Error as err:
                raise StoreError(f"cannot write database: {err}") from err
            if done is not None:
                return done
        from bootlog.store.queries import save_boots

        return save_boots(self.engine(), src, boots, position=position, extend=extend)

    def _extend(self, src: rows.SourceInfo, boot: Boot | None, boot_id: int | None,
                position: tuple[str, int, str], resumed_from: int | None) -> list[tuple[int, bool]] | None:
        conn = self.conn
        conn.execute("BEGIN IMMEDIATE")  # the write lock first, as the SQLAlchemy writer does
        try:
            if conn.execute("SELECT id FROM sources WHERE key = ?", (src.key,)).fetchone() is None:
                conn.execute("ROLLBACK")
                return None  # a new source row (another --host): the full store makes it
            key, offset, head = position
            if resumed_from is not None:
                now_at = conn.execute("SELECT byte_offset FROM positions WHERE source_key = ?", (key,)).fetchone()
                if now_at is None or now_at[0] != resumed_from:
                    raise PositionMoved(key)
            out: list[tuple[int, bool]] = []
            if boot is not None:
                self._extend_boot(boot_id, boot)
                out.append((boot_id, False))
            stamp = rows._now()
            if not conn.execute("UPDATE positions SET byte_offset = ?, head_fingerprint = ?, updated = ? "
                                "WHERE source_key = ?", (offset, head, stamp, key)).rowcount:
                conn.execute("INSERT INTO positions (source_key, byte_offset, head_fingerprint, updated) "
                             "VALUES (?, ?, ?, ?)", (key, offset, head, stamp))
            conn.execute("COMMIT")
            return out
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise

    def _extend_boot(self, boot_id: int, b: Boot) -> None:
        """queries._extend_tx, statement for statement."""
        conn = self.conn
        row = conn.execute("SELECT status, failure, last_line, ended_at FROM boots WHERE id = ?",
                           (boot_id,)).fetchone()
        if row is None:
            raise PositionMoved(f"boot {boot_id}")  # deleted meanwhile (prune): read again
        status, failure, last_line, _ = row
        sets: dict[str, Any] = {"last_line": max(last_line, b.last_line)}
        if b.ended_at is not None:
            sets["ended_at"] = rows._iso(b.ended_at)
        if failure is None and b.failure:
            sets["failure"], sets["failure_message"] = b.failure, b.failure_message
            if status != "ready":
                sets["status"] = b.status
        conn.execute("UPDATE boots SET " + ", ".join(f"{k} = ?" for k in sets) + " WHERE id = ?",
                     (*sets.values(), boot_id))
        for table, make, cols in (("metrics", rows._metric_rows, _METRIC_COLS), ("events", rows._event_rows, _EVENT_COLS)):
            base = conn.execute(f"SELECT max(seq) FROM {table} WHERE boot_id = ?", (boot_id,)).fetchone()[0]
            add = base + 1 if base is not None else 0
            data = [_row(dict(r, seq=r["seq"] + add, boot_id=boot_id), cols) for r in make(b)]
            if data:
                conn.executemany(_insert_sql(table, cols), data)
        if b.samples:
            sql = _insert_sql("samples", _SAMPLE_COLS)
            batch: list[tuple] = []
            for r in rows._sample_rows(b):
                batch.append((boot_id, r["line"], r["ts"], _json(r["values"])))
                if len(batch) >= 5000:
                    conn.executemany(sql, batch)
                    batch = []
            if batch:
                conn.executemany(sql, batch)
        known = {k for (k,) in conn.execute("SELECT key FROM config WHERE boot_id = ?", (boot_id,))}
        cfg = [(boot_id, r["key"], r["value"]) for r in rows._config_rows(b) if r["key"] not in known]
        if cfg:
            conn.executemany(_insert_sql("config", ("boot_id", "key", "value")), cfg)

    def close(self) -> None:
        self.conn.close()


# column order of the inserts; tests/test_lite.py checks them against the models
_METRIC_COLS = ("boot_id", "seq", "name", "value", "unit", "rank", "line", "ts", "pattern")
_EVENT_COLS = ("boot_id", "seq", "kind", "rank", "line", "ts", "message", "detail")
_SAMPLE_COLS = ("boot_id", "line", "ts", "values")
_JSON_COLS = {"detail", "values"}


def _row(r: dict[str, Any], cols: tuple[str, ...]) -> tuple:
    return tuple(_json(r[c]) if c in _JSON_COLS else r[c] for c in cols)


def _insert_sql(table: str, cols: tuple[str, ...]) -> str:
    names = ", ".join(f'"{c}"' for c in cols)
    return f"INSERT INTO {table} ({names}) VALUES ({', '.join('?' * len(cols))})"


def open_lite(db: str | None, full: Callable[[], Any]) -> Lite | None:
    """A Lite store on the user's database when it is an existing SQLite file at the current
    schema, else None (the caller opens the SQLAlchemy store, which creates or migrates it).
    BOOTLOG_NO_LITE=1 turns the fast path off."""
    if os.environ.get("BOOTLOG_NO_LITE", "") in ("1", "true", "yes"):
        return None
    path = plain_sqlite_file(resolve_url(db))
    if path is None or not os.path.isfile(path):
        return None
    try:
        conn = sqlite3.connect(path, timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None)
    except sqlite3.Error:
        return None
    try:
        conn.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
        # as the SQLAlchemy engine's connections (store/db.py): WAL is a property of the file
        # and already set on a database bootlog made; setting it again is a no-op
        conn.execute("PRAGMA synchronous=NORMAL")
        conn.execute("PRAGMA foreign_keys=ON")
        rev = conn.execute("SELECT version_num FROM alembic_version").fetchone()
        if rev is None or rev[0] != HEAD_REVISION:
            conn.close()
            return None
        if conn.execute("PRAGMA journal_mode").fetchone()[0].lower() != "wal":
            conn.close()
            return None  # not set up by bootlog's engine yet: let it do that
    except sqlite3.Error:
        conn.close()
        return None  # not a bootlog database, locked, corrupt: the full store says what is wrong
    return Lite(conn, full)
