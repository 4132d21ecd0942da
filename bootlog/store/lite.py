"""The SQLite store for `bootlog ingest`, with the standard library's sqlite3 alone.

Importing SQLAlchemy and the ORM models costs ~0.15 s, more than reading a few hundred new lines
of a grown log (the hook, watch, a cron job) or a whole small one, so `ingest` into a SQLite
database writes through this module: the same transaction as queries.save_boots (same dedup and
replace decisions, same rows in the same order, built by store/rows.py and store/samplerows.py for
both), the resume lookups, and a new database's schema (as create_all writes it).  Databases that
need a migration, PostgreSQL, and every other command use the SQLAlchemy store.
tests/test_lite.py holds the two writers to identical tables on every fixture log.
"""
from __future__ import annotations

import os
import sqlite3

TYPE_CHECKING = False
if TYPE_CHECKING:  # (typing for the annotations only: importing it costs ~5 ms of every start)
    from typing import Any, Sequence

from bootlog.errors import StoreError
from bootlog.jsontext import dumps
from bootlog.records import Boot
from bootlog.store import rows, samplerows
from bootlog.store.rows import PositionMoved
from bootlog.store.where import HEAD_REVISION, PAGE_SIZE, create_private_file, plain_sqlite_file, resolve_url

BUSY_TIMEOUT_MS = 30_000  # as store/db.py's engine
_SPILL = "bootlog_spill"  # schema name of ingest's spill file while a save reads from it


def _json(value: Any) -> str:
    # what SQLAlchemy's JSON type writes on SQLite (json.dumps, default separators)
    return dumps(value)


class Lite:
    """The store as `ingest` uses it (see the module doc): resume lookups and save_boots."""

    lite = True

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn
        self._attached: str | None = None  # the spill file attached as _SPILL during a save

    # ------------------------------------------------------------ reads (autocommit)

    def get_position(self, key: str) -> tuple[int, str] | None:
        row = self._read("SELECT byte_offset, head_fingerprint FROM positions WHERE source_key = ?", (key,))
        return (row[0], row[1]) if row else None

    def last_boot_of_source(self, key: str, ends_at: int | None = None) -> tuple[int, str] | None:
        """queries.last_boot_of_source."""
        where, order, params = ("", "boots.last_line DESC, ", (key,)) if ends_at is None else \
            (" AND boots.last_line = ?", "", (key, ends_at))
        row = self._read("SELECT boots.id, boots.status FROM boots JOIN sources ON sources.id = boots.source_id "
                         f'WHERE sources."key" = ?{where} ORDER BY {order}boots.id DESC LIMIT 1', params)
        return (row[0], row[1]) if row else None

    def boot_status(self, boot_id: int) -> str | None:
        """queries.boot_status."""
        row = self._read("SELECT status FROM boots WHERE id = ?", (boot_id,))
        return row[0] if row else None

    def _read(self, sql: str, params: tuple) -> tuple | None:
        try:
            return self.conn.execute(sql, params).fetchone()
        except sqlite3.Error as err:
            raise StoreError(f"cannot read database: {err}") from err

    # ------------------------------------------------------------ writes

    def save_boots(self, src: rows.SourceInfo, boots: Sequence[Boot], position: tuple[str, int, str] | None = None,
                   extend: int | None = None, resumed_from: int | None = None,
                   planned: bool = False) -> list[tuple[int, bool]]:
        """queries.save_boots (same rows, same ids, same decisions) in one sqlite3 transaction.
        resumed_from: the stored offset a resumed read started at; if another ingest moved it
        meanwhile, nothing is written and PositionMoved says to read again.
        boots: any sequence; each is asked for (ingest.Boots reads it back from disk) once for
        its row and once for its children, and none is kept meanwhile."""
        if extend is not None and not (boots and boots[0].continued):
            raise ValueError("extend needs a continued boot first")
        if not boots and position is None:
            return []
        prepared = [(rows.boot_row(src, b), k) for k, b in enumerate(boots)]
        for attempt in range(_ATTEMPTS):
            try:
                return self._save(src, prepared, position, extend, resumed_from, boots, planned)
            except sqlite3.OperationalError as err:
                # another writer held the lock past the busy timeout: the whole transaction again
                # (rolled back, so nothing half-written), as db.retry does for the SQLAlchemy store
                if attempt == _ATTEMPTS - 1 or not _locked(err):
                    raise StoreError(f"cannot write database: {err}") from err
                import random  # (only a retry waits: not imported by every save)
                import time

                time.sleep(0.05 * (2 ** attempt) * (0.5 + random.random()))
            except sqlite3.Error as err:
                raise StoreError(f"cannot write database: {err}") from err
        raise AssertionError("unreachable")

    def _save(self, src: rows.SourceInfo, prepared: list[tuple[dict[str, Any], int]],
              position: tuple[str, int, str] | None, extend: int | None,
              resumed_from: int | None, boots: Sequence[Boot], planned: bool = False) -> list[tuple[int, bool]]:
        conn = self.conn
        spill = getattr(getattr(boots, "spill", None), "path", None)
        self._attached = None
        if spill is not None and getattr(boots.spill, "conn", None) is not None:
            try:  # ingest's spill file: sample rows are copied from it (ATTACH: not in a transaction)
                conn.execute(f"ATTACH DATABASE ? AS {_SPILL}", (spill,))
                self._attached = spill
            except sqlite3.Error:
                pass  # (they are read back and inserted row by row, as from any other sequence)
        try:
            return self._save_tx(src, prepared, position, extend, resumed_from, boots, planned)
        finally:
            if self._attached is not None:
                self._attached = None
                try:
                    conn.execute(f"DETACH DATABASE {_SPILL}")
                except sqlite3.Error:
                    pass

    def _save_tx(self, src: rows.SourceInfo, prepared: list[tuple[dict[str, Any], int]],
                 position: tuple[str, int, str] | None, extend: int | None,
                 resumed_from: int | None, boots: Sequence[Boot], planned: bool = False) -> list[tuple[int, bool]]:
        conn = self.conn
        conn.execute("BEGIN IMMEDIATE")  # the write lock first, as the SQLAlchemy writer does
        try:
            if resumed_from is not None and position is not None:
                now_at = conn.execute("SELECT byte_offset FROM positions WHERE source_key = ?",
                                      (position[0],)).fetchone()
                if now_at is None or now_at[0] != resumed_from:
                    raise PositionMoved(position[0])
            out = self._save_rows(src, prepared, extend, boots, planned)
            if position is not None:
                key, offset, head = position
                head = rows.with_tail(head, [p["last_line"] for p, _ in prepared], out)
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

    def _source_id(self, src: rows.SourceInfo) -> int:
        conn = self.conn
        found = conn.execute("SELECT id FROM sources WHERE key = ?", (src.key,)).fetchone()
        if found is not None:
            return found[0]
        return conn.execute('INSERT INTO sources ("key", name, kind, container, host, created) VALUES (?, ?, ?, ?, ?, ?)',
                            (src.key, src.name, src.kind, src.container, src.host, rows._now())).lastrowid

    def _save_rows(self, src: rows.SourceInfo, prepared: list[tuple[dict[str, Any], int]],
                   extend: int | None, boots: Sequence[Boot], planned: bool = False) -> list[tuple[int, bool]]:
        """queries._save_tx between its BEGIN and its position, decision for decision."""
        conn = self.conn
        sid = self._source_id(src)
        head: list[tuple[int, bool]] = []
        if extend is not None:
            self._extend_boot(extend, boots[prepared[0][1]])
            head, prepared = [(extend, False)], prepared[1:]
        fps = list(dict.fromkeys(p["fingerprint"] for p, _ in prepared))
        by_fp: dict[str, dict[str, Any]] = {}
        for chunk in _chunks(fps):
            q = f"SELECT {_MATCH} FROM boots WHERE fingerprint IN ({', '.join('?' * len(chunk))})"
            by_fp.update({r["fingerprint"]: r for r in map(_match_row, conn.execute(q, chunk))})
        firsts = list({p["first_line"] for p, _ in prepared if p["fingerprint"] not in by_fp})
        by_start: dict[int, list[dict[str, Any]]] = {}
        for chunk in _chunks(firsts):
            q = (f"SELECT {_MATCH} FROM boots WHERE source_id = ? AND first_line IN ({', '.join('?' * len(chunk))}) "
                 "ORDER BY id")
            for r in map(_match_row, conn.execute(q, (sid, *chunk))):
                by_start.setdefault(r["first_line"], []).append(r)

        now = rows._now()
        result: list[tuple[int, bool] | None] = [None] * len(prepared)
        replaced: list[tuple[int, tuple[dict[str, Any], int]]] = []
        keep_user: list[tuple[int, int, int]] = []  # (boot id, new metrics, new events)
        new_idx, known, seen = rows.match_stored([p for p, _ in prepared], by_fp, by_start)
        for i, old in known:
            p, at = prepared[i]
            result[i] = (old["id"], False)
            b = boots[at]
            with_plan = planned or rows.has_user_rows(b)
            if self._should_replace(old, p, b, with_plan):
                values = {k: v for k, v in p.items() if k not in ("container", "host")}
                values["ingested_at"] = now
                conn.execute("UPDATE boots SET " + ", ".join(f"{k} = ?" for k in values) + " WHERE id = ?",
                             (*values.values(), old["id"]))
                replaced.append((old["id"], prepared[i]))
                if not with_plan:  # a plan's figures and events stay, after the new rows (rows.USER_PATTERN)
                    keep_user.append((old["id"], len(b.metrics), len(b.events)))

        if replaced:
            kept = {bid for bid, _, _ in keep_user}
            user_m, user_e = rows.user_sql()
            keep = {"metrics": f" AND NOT ({user_m})", "events": f" AND NOT ({user_e})"}
            for table in ("metrics", "config", "events", "samples"):
                for group, tail in (([b for b, _ in replaced if b not in kept], ""),
                                    ([b for b, _ in replaced if b in kept], keep.get(table, ""))):
                    for chunk in _chunks(group):
                        conn.execute(f"DELETE FROM {table} WHERE boot_id IN ({', '.join('?' * len(chunk))}){tail}", chunk)
            for bid, n_metrics, n_events in keep_user:  # kept rows after the new ones, in their order
                conn.execute(f"UPDATE metrics SET seq = seq + ? WHERE boot_id = ? AND {user_m}", (n_metrics, bid))
                conn.execute(f"UPDATE events SET seq = seq + ? WHERE boot_id = ? AND {user_e}", (n_events, bid))

        created: list[tuple[int, tuple[dict[str, Any], int]]] = []
        if new_idx:
            sql = _insert_sql("boots", _BOOT_COLS)
            for i in new_idx:
                p = prepared[i][0]
                bid = conn.execute(sql, tuple(dict(p, source_id=sid, ingested_at=now)[c] for c in _BOOT_COLS)).lastrowid
                result[i] = (bid, True)
                created.append((bid, prepared[i]))

        self._insert_children(created + replaced, boots)
        for i, (p, _) in enumerate(prepared):  # in-call duplicates point at the first copy
            if result[i] is None:
                result[i] = (result[seen[p["fingerprint"]]][0], False)
        return head + [r for r in result if r is not None]

    def _should_replace(self, stored: dict[str, Any], p: dict[str, Any], b: Boot, planned: bool = True) -> bool:
        """queries._should_replace."""
        old_n = stored["last_line"] - stored["first_line"] + 1
        new_n = p["last_line"] - p["first_line"] + 1
        if new_n != old_n:
            return new_n > old_n
        if stored["status"] == "incomplete" and p["status"] != "incomplete":
            return True
        user_m, user_e = rows.user_sql()
        # (read without a plan: a plan's rows stored before are not this read's to count)
        mine = ("", "", "") if planned else (f" AND NOT ({user_m})", f" AND NOT ({user_e})", "")
        counts = [self.conn.execute(f"SELECT count(*) FROM {t} WHERE boot_id = ?{cond}", (stored["id"],)).fetchone()[0]
                  for t, cond in zip(("metrics", "events", "samples"), mine)]
        n_metrics = sum(1 for m in b.metrics if rows._finite(m.value) is not None)
        return rows.counts_differ(counts, [n_metrics, len(b.events), len(b.samples)])

    def _insert_children(self, pairs: list[tuple[int, tuple[dict[str, Any], int]]], boots: Sequence[Boot]) -> None:
        """Child rows in one pass over the boots (each asked for once), each table's rows in
        boot order, as queries._insert_children inserts them (so row ids come out the same)."""
        conn = self.conn
        tables = (("metrics", rows._metric_rows, _METRIC_COLS), ("config", rows._config_rows, _CONFIG_COLS),
                  ("events", rows._event_rows, _EVENT_COLS))
        sqls = [_insert_sql(table, cols) for table, _, cols in tables]
        batches: list[list[tuple]] = [[] for _ in tables]
        for bid, (_, k) in pairs:
            b = boots[k]
            for (_, make, cols), batch, sql in zip(tables, batches, sqls):
                for r in make(b):
                    r["boot_id"] = bid
                    batch.append(_row(r, cols))
                if len(batch) >= _BATCH:
                    conn.executemany(sql, batch)
                    batch.clear()
            self._insert_samples(bid, b)
        for batch, sql in zip(batches, sqls):
            if batch:
                conn.executemany(sql, batch)

    def _insert_samples(self, boot_id: int, b: Boot) -> None:
        if not b.samples:
            return
        sql = samplerows.insert_sql(boot_id)
        spilled = getattr(b.samples, "spilled_rows", None)
        if spilled is not None and self._attached is not None:
            path, ranges = spilled()
            if path == self._attached:  # spilled by ingest as ready-made rows: copied in SQLite
                copy = (f'INSERT INTO samples (boot_id, line, ts, "values") SELECT {int(boot_id)}, line, ts, v '
                        f"FROM {_SPILL}.r WHERE rowid BETWEEN ? AND ? ORDER BY rowid")
                for lo, hi in ranges:
                    self.conn.execute(copy, (lo, hi))
                if b.samples.tail:
                    self.conn.executemany(sql, samplerows.sample_rows(b.samples.tail))
                return
        parts = getattr(b.samples, "row_parts", None)
        if parts is not None:  # spilled by ingest as ready-made rows
            for batch in parts():
                if batch:
                    self.conn.executemany(sql, batch)
            return
        samples = list(b.samples)
        for k in range(0, len(samples), _BATCH):
            self.conn.executemany(sql, samplerows.sample_rows(samples[k : k + _BATCH]))

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
        self._insert_samples(boot_id, b)
        known = {k for (k,) in conn.execute("SELECT key FROM config WHERE boot_id = ?", (boot_id,))}
        cfg = [(boot_id, r["key"], r["value"]) for r in rows._config_rows(b) if r["key"] not in known]
        if cfg:
            conn.executemany(_insert_sql("config", _CONFIG_COLS), cfg)

    def close(self) -> None:
        self.conn.close()


_BATCH = 5000  # rows per executemany, as queries._BATCH
_ATTEMPTS = 4  # whole-transaction tries when the lock stays taken past the busy timeout


def _locked(err: sqlite3.OperationalError) -> bool:
    text = str(err).lower()
    return "locked" in text or "busy" in text
_CHUNK = 500  # bound on IN (...) lists, as queries._CHUNK
_MATCH = "id, fingerprint, first_line, last_line, status, started_at, vllm_version, model"
_MATCH_KEYS = tuple(_MATCH.split(", "))


def _match_row(r: tuple) -> dict[str, Any]:
    return dict(zip(_MATCH_KEYS, r))


def _chunks(items: list, n: int = _CHUNK):
    for i in range(0, len(items), n):
        yield items[i : i + n]


# column order of the inserts; tests/test_lite.py checks them against the models
_BOOT_COLS = ("source_id", "container", "host", "status", "failure", "failure_message", "vllm_version", "engine",
              "model", "started_at", "ready_at", "ended_at", "first_line", "last_line", "fingerprint",
              "config_hash", "ingested_at")
_CONFIG_COLS = ("boot_id", "key", "value")
_METRIC_COLS = ("boot_id", "seq", "name", "value", "unit", "rank", "line", "ts", "pattern")
_EVENT_COLS = ("boot_id", "seq", "kind", "rank", "line", "ts", "message", "detail")
_JSON_COLS = {"detail", "values"}


def _row(r: dict[str, Any], cols: tuple[str, ...]) -> tuple:
    return tuple(_json(r[c]) if c in _JSON_COLS else r[c] for c in cols)


def _insert_sql(table: str, cols: tuple[str, ...]) -> str:
    names = ", ".join(f'"{c}"' for c in cols)
    return f"INSERT INTO {table} ({names}) VALUES ({', '.join('?' * len(cols))})"


# The schema at HEAD_REVISION exactly as SQLAlchemy's create_all writes it on SQLite (store/db.py
# _create_fresh); tests/test_lite.py compares sqlite_master of both, so a migration that changes
# the models fails a test until this is regenerated.
_SCHEMA = (
    'CREATE TABLE sources (\n\tid INTEGER NOT NULL, \n\t"key" TEXT NOT NULL, \n\tname TEXT NOT NULL, \n\tkind VARCHAR(32) NOT NULL, \n\tcontainer TEXT, \n\thost TEXT, \n\tcreated VARCHAR(40) NOT NULL, \n\tCONSTRAINT pk_sources PRIMARY KEY (id), \n\tCONSTRAINT uq_sources_key UNIQUE ("key")\n)',
    'CREATE TABLE positions (\n\tid INTEGER NOT NULL, \n\tsource_key TEXT NOT NULL, \n\tbyte_offset BIGINT NOT NULL, \n\thead_fingerprint VARCHAR(128) NOT NULL, \n\tupdated VARCHAR(40) NOT NULL, \n\tCONSTRAINT pk_positions PRIMARY KEY (id), \n\tCONSTRAINT uq_positions_source_key UNIQUE (source_key)\n)',
    'CREATE TABLE boots (\n\tid INTEGER NOT NULL, \n\tsource_id INTEGER NOT NULL, \n\tcontainer TEXT, \n\thost TEXT, \n\tstatus VARCHAR(16) NOT NULL, \n\tfailure VARCHAR(32), \n\tfailure_message TEXT, \n\tvllm_version VARCHAR(64), \n\tengine VARCHAR(8), \n\tmodel TEXT, \n\tstarted_at VARCHAR(40), \n\tready_at VARCHAR(40), \n\tended_at VARCHAR(40), \n\tfirst_line INTEGER NOT NULL, \n\tlast_line INTEGER NOT NULL, \n\tfingerprint VARCHAR(128) NOT NULL, \n\tconfig_hash VARCHAR(64) NOT NULL, \n\tingested_at VARCHAR(40) NOT NULL, \n\tCONSTRAINT pk_boots PRIMARY KEY (id), \n\tCONSTRAINT fk_boots_source_id_sources FOREIGN KEY(source_id) REFERENCES sources (id) ON DELETE CASCADE, \n\tCONSTRAINT uq_boots_fingerprint UNIQUE (fingerprint)\n)',
    'CREATE INDEX ix_boots_host_id ON boots (host, id)',
    'CREATE INDEX ix_boots_config_hash_id ON boots (config_hash, id)',
    'CREATE INDEX ix_boots_source_id_id ON boots (source_id, id)',
    'CREATE INDEX ix_boots_container_id ON boots (container, id)',
    'CREATE TABLE metrics (\n\tid INTEGER NOT NULL, \n\tboot_id INTEGER NOT NULL, \n\tseq INTEGER NOT NULL, \n\tname VARCHAR(64) NOT NULL, \n\tvalue FLOAT NOT NULL, \n\tunit VARCHAR(16) NOT NULL, \n\trank INTEGER, \n\tline INTEGER, \n\tts VARCHAR(40), \n\tpattern VARCHAR(128), \n\tCONSTRAINT pk_metrics PRIMARY KEY (id), \n\tCONSTRAINT fk_metrics_boot_id_boots FOREIGN KEY(boot_id) REFERENCES boots (id) ON DELETE CASCADE\n)',
    'CREATE INDEX ix_metrics_boot_id_seq ON metrics (boot_id, seq)',
    'CREATE INDEX ix_metrics_name ON metrics (name)',
    'CREATE TABLE config (\n\tboot_id INTEGER NOT NULL, \n\t"key" VARCHAR(128) NOT NULL, \n\tvalue TEXT NOT NULL, \n\tCONSTRAINT pk_config PRIMARY KEY (boot_id, "key"), \n\tCONSTRAINT fk_config_boot_id_boots FOREIGN KEY(boot_id) REFERENCES boots (id) ON DELETE CASCADE\n)',
    'CREATE TABLE events (\n\tid INTEGER NOT NULL, \n\tboot_id INTEGER NOT NULL, \n\tseq INTEGER NOT NULL, \n\tkind VARCHAR(64) NOT NULL, \n\trank INTEGER, \n\tline INTEGER NOT NULL, \n\tts VARCHAR(40), \n\tmessage TEXT NOT NULL, \n\tdetail JSON NOT NULL, \n\tCONSTRAINT pk_events PRIMARY KEY (id), \n\tCONSTRAINT fk_events_boot_id_boots FOREIGN KEY(boot_id) REFERENCES boots (id) ON DELETE CASCADE\n)',
    'CREATE INDEX ix_events_boot_id_seq ON events (boot_id, seq)',
    'CREATE TABLE samples (\n\tid INTEGER NOT NULL, \n\tboot_id INTEGER NOT NULL, \n\tline INTEGER NOT NULL, \n\tts VARCHAR(40), \n\t"values" JSON NOT NULL, \n\tCONSTRAINT pk_samples PRIMARY KEY (id), \n\tCONSTRAINT fk_samples_boot_id_boots FOREIGN KEY(boot_id) REFERENCES boots (id) ON DELETE CASCADE\n)',
    'CREATE INDEX ix_samples_boot_id_line ON samples (boot_id, line)',
)


def _create(conn: sqlite3.Connection) -> None:
    """The newest schema in a new, empty database file (what store/db.py's _create_fresh makes),
    unless a racing process made it first (BEGIN IMMEDIATE: one creator)."""
    conn.execute(f"PRAGMA page_size={PAGE_SIZE}")  # (before WAL: that writes the file's header)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("BEGIN IMMEDIATE")
    try:
        if conn.execute("SELECT count(*) FROM sqlite_master").fetchone()[0] == 0:
            for stmt in _SCHEMA:
                conn.execute(stmt)
            conn.execute("CREATE TABLE alembic_version (version_num VARCHAR(32) NOT NULL, "
                         "CONSTRAINT alembic_version_pkc PRIMARY KEY (version_num))")
            conn.execute("INSERT INTO alembic_version (version_num) VALUES (?)", (HEAD_REVISION,))
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise


def _connect(path: str) -> sqlite3.Connection | None:
    """An autocommit connection that waits for locks as the SQLAlchemy engine's do, or None."""
    try:
        conn = sqlite3.connect(path, timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None)
    except sqlite3.Error:
        return None
    try:
        conn.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
    except sqlite3.Error:
        conn.close()
        return None
    return conn


def open_lite(db: str | None) -> Lite | None:
    """A Lite store on the user's database when it is a SQLite file at the current schema (a
    missing file is created with it, as the full store would), else None: the caller opens the
    SQLAlchemy store, which migrates or reports what is wrong.  BOOTLOG_NO_LITE=1 turns it off."""
    if os.environ.get("BOOTLOG_NO_LITE", "") in ("1", "true", "yes"):
        return None
    path = plain_sqlite_file(resolve_url(db))
    if path is None:
        return None
    fresh = not os.path.exists(path)
    if fresh:
        create_private_file(path)  # 0600; a --db in a missing directory is an error (StoreError)
    elif not os.path.isfile(path):
        return None
    conn = _connect(path)
    if conn is None:
        return None
    try:
        if fresh or os.path.getsize(path) == 0:
            _create(conn)
        # as the SQLAlchemy engine's connections (store/db.py); WAL is a property of the file,
        # set when bootlog created it
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
    return Lite(conn)


def open_reader(db: str | None) -> sqlite3.Connection | None:
    """A sqlite3 connection for store/reads.py (`diff`, `check`) when the database is an existing
    SQLite file at the current schema, else None: the caller opens the SQLAlchemy store, which
    creates, migrates or reports what is wrong, as before.  BOOTLOG_NO_LITE=1 turns it off."""
    if os.environ.get("BOOTLOG_NO_LITE", "") in ("1", "true", "yes"):
        return None
    path = plain_sqlite_file(resolve_url(db))
    if path is None or not os.path.isfile(path) or os.path.getsize(path) == 0:
        return None
    conn = _connect(path)
    if conn is None:
        return None
    try:
        rev = conn.execute("SELECT version_num FROM alembic_version").fetchone()
    except sqlite3.Error:
        rev = None
    if rev is None or rev[0] != HEAD_REVISION:
        conn.close()
        return None
    return conn


def reader_fetch(conn: sqlite3.Connection):
    """store/reads.py's fetch over a sqlite3 connection (rows streamed from its cursor)."""
    def fetch(sql: str, params) -> Any:
        try:
            return conn.execute(sql, tuple(params))
        except sqlite3.Error as err:
            raise StoreError(f"cannot read database: {err}") from err
    return fetch
