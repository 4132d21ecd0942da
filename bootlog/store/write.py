"""Saving parsed boots: the one writer, for SQLite and PostgreSQL alike.

Every save is one transaction (the boots, their figures, config, events, sample chunks and the
read position together), retried whole on lock contention, so a crash or a lost race leaves the
database as it was.  A boot stored before (same fingerprint, or the same start read again at
another length) is not stored twice: a longer read of it replaces its rows, keeping its id.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any, Iterable, Iterator, Sequence

from bootlog.records import EVENT_KINDS, Boot
from bootlog.safe import storable
from bootlog.store.db import Store, retry

CHUNK = 500  # bound on IN (...) lists: SQLite's variable limit is 999 on old builds
_BATCH = 5000  # rows per executemany


class PositionMoved(Exception):
    """Another ingest stored a resumed file's new lines first: the read must start again."""


@dataclass
class SourceInfo:
    name: str
    kind: str
    container: str | None = None
    host: str | None = None

    @property
    def key(self) -> str:
        return "|".join((self.kind, self.name, self.container or "", self.host or ""))


# ---------------------------------------------------------------- rows of a Boot


def iso(ts: datetime | None) -> str | None:
    return ts.isoformat() if ts is not None else None


def start_key(started_at: str | None) -> str | None:
    """A boot's place in time as sortable text: its start in UTC (a time without an offset is
    taken as it reads), fixed width so that text order is time order."""
    if not started_at:
        return None
    try:
        ts = datetime.fromisoformat(started_at)
    except ValueError:
        return None
    if ts.tzinfo is not None:
        try:
            ts = ts.astimezone(timezone.utc).replace(tzinfo=None)
        except OverflowError:
            # a stamp at the edge of the range ("9999-12-31T23:59:59-23:59" is past year 9999
            # in UTC): it sorts after (a negative offset) or before every other start
            ts = datetime.max if (ts.utcoffset() or timedelta(0)) < timedelta(0) else datetime.min
    return ts.isoformat(timespec="microseconds")  # (strftime's %Y writes year 1 as "1": not fixed width)


def now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def jsonable(obj: Any) -> Any:
    """Event details and the like as plain JSON (no datetimes, NaN or tuples; text storable:
    a lone surrogate as its escape, safe.storable)."""
    if isinstance(obj, dict):
        return {storable(str(k)): jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple, set)):
        return [jsonable(v) for v in obj]
    if isinstance(obj, datetime):
        return obj.isoformat()
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, str):
        return storable(obj)
    return obj if obj is None or isinstance(obj, (int, bool)) else storable(str(obj))


def _text(v: Any) -> Any:
    """A column value as the database can hold it (text through safe.storable)."""
    return storable(v) if isinstance(v, str) else v


def stored_name(path: str) -> str:
    """A path as the database can hold it: a file name that is not UTF-8 (os.fsdecode's
    surrogates) keeps its odd bytes as \\xNN escapes instead of failing the insert."""
    return path.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


def stored_path(path: str) -> str:
    """A log file's name as a source is stored: resolved and absolute, so what a later command
    reads again (a plan's own patterns, the report's clock) is the same file whatever directory
    it runs from (a cron job or a systemd unit runs from /)."""
    return stored_name(os.path.realpath(path))


FILE_KINDS = ("file", "gzip")  # sources that are a path on the host that read them


def relative_source(kind: str, name: str) -> bool:
    """A file source stored by a bootlog before sources were stored absolute: which file it was
    depends on a working directory nobody knows any more."""
    return kind in FILE_KINDS and not os.path.isabs(name)


def config_hash(config: dict[str, str]) -> str:
    return hashlib.sha256(json.dumps(config, sort_keys=True).encode()).hexdigest()


BOOT_COLS = (
    "container",
    "host",
    "status",
    "failure",
    "failure_message",
    "vllm_version",
    "engine",
    "model",
    "started_at",
    "ready_at",
    "ended_at",
    "first_line",
    "last_line",
    "fingerprint",
    "config_hash",
    "start_key",
    "ended",
    "kv_cache_sized_by",
)


def fallback_fingerprint(src: SourceInfo, boot: Boot) -> str:
    """A fingerprint for a boot the parser left without one: where it is and what it said
    (weaker than the content hash, but a re-ingest of the same source adds no second copy)."""
    basis = json.dumps(
        [src.key, boot.first_line, boot.vllm_version, boot.model, iso(boot.started_at), sorted(boot.config.items())],
        default=str,
    )
    return "src:" + hashlib.sha256(basis.encode()).hexdigest()


def boot_row(src: SourceInfo, b: Boot) -> dict[str, Any]:
    """The boots row of a Boot (without source_id and ingested_at, set when written)."""
    row = {
        "container": src.container,
        "host": src.host,
        "status": b.status,
        "failure": b.failure,
        "failure_message": b.failure_message,
        "vllm_version": b.vllm_version,
        "engine": b.engine,
        "model": b.model,
        "started_at": iso(b.started_at),
        "ready_at": iso(b.ready_at),
        "ended_at": iso(b.ended_at),
        "first_line": b.first_line,
        "last_line": b.last_line,
        "fingerprint": b.fingerprint or fallback_fingerprint(src, b),
        "config_hash": config_hash(b.config),
        "start_key": start_key(iso(b.started_at)),
        "ended": b.ended,
        "kv_cache_sized_by": b.kv_cache_sized_by,
    }
    return {k: _text(v) for k, v in row.items()}


def _finite(v: Any) -> bool:
    return isinstance(v, (int, float)) and math.isfinite(v)


def metric_rows(b: Boot, boot_id: int, base: int = 0) -> list[tuple]:
    # NaN/inf cannot be stored portably and mean "unread"
    return [
        (boot_id, base + i, _text(m.name), float(m.value), _text(m.unit), m.rank, m.line, iso(m.ts), _text(m.pattern))
        for i, m in enumerate(b.metrics)
        if _finite(m.value)
    ]


def event_rows(b: Boot, boot_id: int, base: int = 0) -> list[tuple]:
    return [
        (
            boot_id,
            base + i,
            _text(e.kind),
            e.rank,
            e.line,
            iso(e.ts),
            storable(e.message or ""),
            json.dumps(jsonable(e.detail or {})),
        )
        for i, e in enumerate(b.events)
    ]


def config_rows(b: Boot, boot_id: int) -> list[tuple]:
    return [(boot_id, storable(str(k)), "" if v is None else storable(str(v))) for k, v in b.config.items()]


_INSERT = {
    "metrics": "INSERT INTO metrics (boot_id, seq, name, value, unit, rank, line, ts, pattern) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
    "events": "INSERT INTO events (boot_id, seq, kind, rank, line, ts, message, detail) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
    "config": 'INSERT INTO config (boot_id, "key", value) VALUES (?, ?, ?)',
    "sample_chunks": "INSERT INTO sample_chunks (boot_id, first_line, last_line, n, data) VALUES (?, ?, ?, ?, ?)",
    "deploys": "INSERT INTO deploys (boot_id, data) VALUES (?, ?)",
}


# A plan's user patterns (ingest --plan, hook --plan) add figures (pattern "user:NAME") and
# events of the plan's own kinds.  A later read without that plan does not find them: it must
# neither count their absence as a difference nor delete them when it rewrites the boot.  The
# hook's measurements after ready (pattern "measured:probe", "measured:gpu") are no read's at
# all: a rewrite always keeps them.
USER_PATTERN = "user:"
MEASURED = "measured:"
_USER_METRIC = f"coalesce(substr(pattern, 1, {len(USER_PATTERN)}), '') = '{USER_PATTERN}'"
_MEASURED = f"coalesce(substr(pattern, 1, {len(MEASURED)}), '') = '{MEASURED}'"
_USER_EVENT = "kind NOT IN (" + ", ".join(f"'{k}'" for k in EVENT_KINDS) + ")"
TAIL = "{tail}"  # ingest ends its position's head text with this: the save puts the boot id there


def with_tail(head: str, last_lines: list[int], saved: list[tuple[int, bool]]) -> str:
    """An ingest position's head text with TAIL replaced by the id of the boot the read ended in
    (the one reaching furthest; the later of a tie): a resumed read continues that boot."""
    if not head.endswith(TAIL):
        return head
    tail = ""
    if last_lines and len(last_lines) == len(saved):
        tail = str(saved[max(range(len(last_lines)), key=lambda i: (last_lines[i], i))][0])
    return head[: -len(TAIL)] + tail


# ---------------------------------------------------------------- which boots are stored already


def same_start(stored: dict[str, Any], b: dict[str, Any]) -> bool:
    """The same boot read again at another length, though its fingerprint moved (a boot read
    while still starting has fewer than 64 catalogue lines): same source, first line and start
    time; the version agrees where both reads know it, one the start of the other where the
    shorter read ended inside the line that names it (a file copied while it was written).  (Not
    the model: the args line names it first, the engine config line later by its path.)"""
    x, y = stored["vllm_version"], b["vllm_version"]
    return (
        stored["started_at"] is not None
        and stored["started_at"] == b["started_at"]
        and stored["first_line"] == b["first_line"]
        and (x is None or y is None or x.startswith(y) or y.startswith(x))
    )


def match_stored(
    boots: list[dict[str, Any]], by_fp: dict[str, dict[str, Any]], by_start: dict[int, list[dict[str, Any]]]
) -> tuple[list[int], list[tuple[int, dict[str, Any]]], dict[str, int]]:
    """(indexes of new boots, (index, stored row) of known ones, first index of each fingerprint:
    the same boot twice in one save counts once)."""
    new_idx: list[int] = []
    known: list[tuple[int, dict[str, Any]]] = []
    claimed: set[int] = {r["id"] for r in by_fp.values()}
    seen: dict[str, int] = {}
    for i, b in enumerate(boots):
        fp = b["fingerprint"]
        if fp in seen:
            continue
        seen[fp] = i
        old = by_fp.get(fp)
        if old is None:
            old = next(
                (r for r in by_start.get(b["first_line"], []) if r["id"] not in claimed and same_start(r, b)), None
            )
            if old is not None:
                claimed.add(old["id"])
        if old is None:
            new_idx.append(i)
        else:
            known.append((i, old))
    return new_idx, known, seen


def counts_differ(stored: list[int], parsed: list[int]) -> bool:
    """Whether a stored boot of the same span needs rewriting: its [metrics, events, samples]
    counts differ from the new read's (it ended in a half-written line that is whole now).
    Samples that `prune` deleted stay deleted: a re-read of the same lines adds nothing."""
    if stored[:2] == parsed[:2] and stored[2] == 0 and parsed[2] > 0:
        return False
    return stored != parsed


# ---------------------------------------------------------------- the save


def chunks(items: list, n: int = CHUNK) -> Iterator[list]:
    for i in range(0, len(items), n):
        yield items[i : i + n]


def in_list(n: int) -> str:
    return "(" + ", ".join("?" * n) + ")"


_MATCH = ("id", "fingerprint", "first_line", "last_line", "status", "started_at", "vllm_version", "model", "source_id")


def save_boots(
    store: Store,
    src: SourceInfo,
    boots: Sequence[Boot],
    position: tuple[str, int, str] | None = None,
    extend: int | None = None,
    resumed_from: int | None = None,
    planned: bool = False,
    reread: bool = False,
) -> list[tuple[int, bool]]:
    """Store boots (and the read position) in one transaction; (boot_id, created) per boot.

    extend: the id of a stored boot that boots[0] (continued=True, a resumed read's lead-in)
    continues: its figures, events and samples are appended to it.  resumed_from: the stored
    offset a resumed read started at; if another ingest moved it meanwhile, nothing is written
    and PositionMoved says to read again.  planned: read with a plan (its user-pattern rows are
    this read's to rewrite).  reread: the source's last read ended inside a line (CUT): each boot
    of it that this read knows all the lines of is written again.  boots: any sequence (ingest's
    reads a retired boot back from its spill file each time it is asked for one)."""
    if extend is not None and not (boots and boots[0].continued):
        raise ValueError("extend needs a continued boot first")
    if not boots and position is None:
        return []
    rows = [boot_row(src, b) for b in boots]

    def run() -> list[tuple[int, bool]]:
        with store.transaction():
            if resumed_from is not None and position is not None:
                # FOR UPDATE: two ingests resuming the same grown file at once must not both extend
                # the boot (PostgreSQL's READ COMMITTED lets both read the old offset; SQLite's
                # BEGIN IMMEDIATE already lets one writer in at a time)
                now_at = store.one(
                    "SELECT byte_offset FROM positions WHERE source_key = ?" + (" FOR UPDATE" if store.pg else ""),
                    (position[0],),
                )
                if now_at is None or now_at[0] != resumed_from:
                    raise PositionMoved(position[0])
            key = storable(src.key)
            found = store.one('SELECT id FROM sources WHERE "key" = ?', (key,)) or _adopt_relative(store, src, rows)
            sid = (
                found[0]
                if found is not None
                else store.insert_id(
                    'INSERT INTO sources ("key", name, kind, container, host, created) VALUES (?, ?, ?, ?, ?, ?)',
                    (key, *map(_text, (src.name, src.kind, src.container, src.host)), now()),
                )
            )
            head: list[tuple[int, bool]] = []
            order = list(range(len(rows)))
            if extend is not None:
                _extend(store, extend, boots[0])
                head, order = [(extend, False)], order[1:]
            out = head + _save_rows(store, sid, boots, rows, order, planned, reread)
            if position is not None:
                key, offset, at = position
                save_position(store, key, offset, with_tail(at, [r["last_line"] for r in rows], out))
        return out

    return retry(run)


def _adopt_relative(store: Store, src: SourceInfo, rows: list[dict[str, Any]]) -> tuple[int] | None:
    """The source an older bootlog stored for this file under a relative path (its row renamed
    to the absolute one, in the caller's transaction), so that the file ingested again moves its
    boots to where they can be read from any directory.  It must be the same file: its relative
    name ends the absolute one and it holds a boot that starts where one of this read's does."""
    if src.kind not in FILE_KINDS or not os.path.isabs(src.name) or not rows:
        return None
    found = store.rows(
        "SELECT id, name FROM sources WHERE kind = ? AND coalesce(container, '') = ? AND coalesce(host, '') = ?",
        (src.kind, src.container or "", src.host or ""),
    )
    rel = [(sid, os.path.normpath(name)) for sid, name in found if relative_source(src.kind, name)]
    rel = [(sid, name) for sid, name in rel if not name.startswith("..") and src.name.endswith(os.sep + name)]
    for sid, _ in sorted(rel, key=lambda r: -len(r[1])):
        for r in rows[:3]:
            if store.one(
                "SELECT 1 FROM boots WHERE source_id = ? AND (fingerprint = ? OR "
                "(first_line = ? AND coalesce(started_at, '') = ?))",
                (sid, r["fingerprint"], r["first_line"], r["started_at"] or ""),
            ):
                store.execute('UPDATE sources SET "key" = ?, name = ? WHERE id = ?', (src.key, src.name, sid))
                return (sid,)
    return None


def save_position(store: Store, key: str, offset: int, head: str) -> None:
    """Set a read position (inside the caller's transaction)."""
    stamp = now()
    if not store.execute(
        "UPDATE positions SET byte_offset = ?, head_fingerprint = ?, updated = ? WHERE source_key = ?",
        (offset, head, stamp, key),
    ).rowcount:
        store.execute(
            "INSERT INTO positions (source_key, byte_offset, head_fingerprint, updated) VALUES (?, ?, ?, ?)",
            (key, offset, head, stamp),
        )


def _save_rows(
    store: Store,
    sid: int,
    boots: Sequence[Boot],
    rows: list[dict[str, Any]],
    order: list[int],
    planned: bool,
    reread: bool = False,
) -> list[tuple[int, bool]]:
    mine = [rows[i] for i in order]
    select = f"SELECT {', '.join(_MATCH)} FROM boots WHERE "
    by_fp: dict[str, dict[str, Any]] = {}
    for chunk in chunks(list(dict.fromkeys(r["fingerprint"] for r in mine))):
        for r in store.rows(select + f"fingerprint IN {in_list(len(chunk))}", chunk):
            by_fp[r[1]] = dict(zip(_MATCH, r))
    by_start: dict[int, list[dict[str, Any]]] = {}
    for chunk in chunks(list({r["first_line"] for r in mine if r["fingerprint"] not in by_fp})):
        for r in store.rows(
            select + f"source_id = ? AND first_line IN {in_list(len(chunk))} ORDER BY id", (sid, *chunk)
        ):
            by_start.setdefault(r[2], []).append(dict(zip(_MATCH, r)))

    stamp = now()
    # a boot that printed no time of its own sits right after the boot before it in the log,
    # else where it was stored (`last` is the latest started: reads.py)
    key = None
    for i in sorted(range(len(mine)), key=lambda i: mine[i]["first_line"]):
        key = mine[i]["start_key"] = mine[i]["start_key"] or key or start_key(stamp)
    result: list[tuple[int, bool] | None] = [None] * len(mine)
    children: list[tuple[int, int]] = []  # (boot id, index into boots) whose rows are written below
    new_idx, known, seen = match_stored(mine, by_fp, by_start)
    read_end = max((r["last_line"] for r in mine), default=0)
    cols = [c for c in BOOT_COLS if c not in ("container", "host")]
    for i, old in known:
        result[i] = (old["id"], False)
        b = boots[order[i]]
        with_plan = (
            planned
            or any((m.pattern or "").startswith(USER_PATTERN) for m in b.metrics)
            or any(e.kind not in EVENT_KINDS for e in b.events)
        )  # (this read holds a plan's rows)
        if not _should_replace(store, old, mine[i], b, with_plan, sid, read_end, reread):
            if b.deploy is not None:
                save_deploy(store, old["id"], b.deploy)
            continue
        store.execute(
            "UPDATE boots SET " + ", ".join(f"{c} = ?" for c in cols) + ", ingested_at = ? WHERE id = ?",
            (*[mine[i][c] for c in cols], stamp, old["id"]),
        )
        _delete_children(store, old["id"], keep_user=not with_plan, new=(len(b.metrics), len(b.events)))
        children.append((old["id"], order[i]))
    sql = (
        "INSERT INTO boots (source_id, "
        + ", ".join(BOOT_COLS)
        + ", ingested_at) VALUES ("
        + ", ".join("?" * (len(BOOT_COLS) + 2))
        + ")"
    )
    for i in new_idx:
        bid = store.insert_id(sql, (sid, *[mine[i][c] for c in BOOT_COLS], stamp))
        result[i] = (bid, True)
        children.append((bid, order[i]))
    _insert_children(store, children, boots)
    for i, row in enumerate(mine):  # in-save duplicates point at the first copy
        if result[i] is None:
            result[i] = (result[seen[row["fingerprint"]]][0], False)
    return [r for r in result if r is not None]


def _should_replace(
    store: Store,
    stored: dict[str, Any],
    new: dict[str, Any],
    b: Boot,
    planned: bool,
    sid: int,
    read_end: int,
    reread: bool,
) -> bool:
    """The stored copy was read while the boot was still running, or ended in a half-written
    line: the new read knows more.  A read of the same source that reaches past the stored
    copy's lines (read_end: its last line) knows them all, even where it ends the boot sooner (the
    lines after were the next boot's start); a shorter read (a truncated file) does not."""
    old_n = stored["last_line"] - stored["first_line"] + 1
    new_n = new["last_line"] - new["first_line"] + 1
    if stored["source_id"] == sid and stored["last_line"] <= read_end:  # this read saw all its lines
        if reread or (new_n < old_n and stored["last_line"] < read_end):
            return True
    if new_n != old_n:
        return new_n > old_n
    if stored["status"] == "incomplete" and new["status"] != "incomplete":
        return True
    # (read without a plan: a plan's rows stored before are not this read's to count)
    m_cond, e_cond = (
        (f" AND NOT ({_MEASURED})", "")
        if planned
        else (f" AND NOT ({_USER_METRIC}) AND NOT ({_MEASURED})", f" AND NOT ({_USER_EVENT})")
    )
    counts = [
        store.one(f"SELECT count(*) FROM metrics WHERE boot_id = ?{m_cond}", (stored["id"],))[0],
        store.one(f"SELECT count(*) FROM events WHERE boot_id = ?{e_cond}", (stored["id"],))[0],
        store.one("SELECT coalesce(sum(n), 0) FROM sample_chunks WHERE boot_id = ?", (stored["id"],))[0],
    ]
    n_metrics = sum(1 for m in b.metrics if _finite(m.value))
    return counts_differ([int(c) for c in counts], [n_metrics, len(b.events), len(b.samples)])


def _delete_children(store: Store, boot_id: int, *, keep_user: bool, new: tuple[int, int]) -> None:
    """Drop a boot's rows before it is written again; keep_user: a plan's figures and events stay,
    renumbered after the new ones (a read without the plan cannot make them again), and so do
    the hook's measurements, always."""
    store.execute("DELETE FROM config WHERE boot_id = ?", (boot_id,))
    store.execute("DELETE FROM sample_chunks WHERE boot_id = ?", (boot_id,))
    keep_m = f"({_USER_METRIC}) OR ({_MEASURED})" if keep_user else _MEASURED
    for table, cond, n in (("metrics", keep_m, new[0]), ("events", _USER_EVENT if keep_user else "0 = 1", new[1])):
        store.execute(f"DELETE FROM {table} WHERE boot_id = ? AND NOT ({cond})", (boot_id,))
        store.execute(f"UPDATE {table} SET seq = seq + ? WHERE boot_id = ? AND ({cond})", (n, boot_id))


def _insert_children(store: Store, pairs: Iterable[tuple[int, int]], boots: Sequence[Boot]) -> None:
    """Metrics, config, events and sample chunks of the boots, in bounded batches."""
    batches: dict[str, list[tuple]] = {t: [] for t in _INSERT}

    def add(table: str, rows: list[tuple]) -> None:
        batch = batches[table]
        batch.extend(rows)
        if len(batch) >= _BATCH:
            store.executemany(_INSERT[table], batch)
            batch.clear()

    for bid, k in pairs:
        b = boots[k]  # (asked for once: a retired boot is read back from disk)
        add("metrics", metric_rows(b, bid))
        add("config", config_rows(b, bid))
        add("events", event_rows(b, bid))
        for first, last, n, text in b.samples.chunk_rows():
            add("sample_chunks", [(bid, first, last, n, text)])
        if b.deploy is not None:
            save_deploy(store, bid, b.deploy)
    for table, batch in batches.items():
        store.executemany(_INSERT[table], batch)


def save_deploy(store: Store, boot_id: int, data: dict) -> None:
    """A boot's deploy context (inside the caller's transaction): what is said now wins, but a
    value known before is not forgotten for one not said (a died event gives a run's exit code
    alone; the hook's context of that run, stored while it ran, keeps its image and command)."""
    row = store.one("SELECT data FROM deploys WHERE boot_id = ?", (boot_id,))
    if row is not None:
        old = json.loads(row[0]) if isinstance(row[0], (str, bytes)) else row[0]
        if isinstance(old, dict):
            data = {**old, **{k: v for k, v in data.items() if v is not None or k not in old}}
    store.execute("DELETE FROM deploys WHERE boot_id = ?", (boot_id,))
    store.execute(_INSERT["deploys"], (boot_id, json.dumps(jsonable(data))))


def _append(store: Store, boot_id: int, b: Boot, tables: Iterable[str] = ("metrics", "events")) -> None:
    """A boot's figures (and events) numbered after the stored boot's own (log order kept)."""
    for table in tables:
        base = store.one(f"SELECT max(seq) FROM {table} WHERE boot_id = ?", (boot_id,))[0]
        make = metric_rows if table == "metrics" else event_rows
        store.executemany(_INSERT[table], make(b, boot_id, base + 1 if base is not None else 0))


def add_measured(store: Store, boot_id: int, metrics: list, deploy: dict | None = None) -> None:
    """The hook's measurements after ready (probe timings, GPU memory: Metrics whose pattern
    starts with MEASURED) appended to a stored boot, replacing earlier ones of the same names,
    with its deploy context, in one transaction."""

    def run() -> None:
        with store.transaction():
            names = sorted({m.name for m in metrics})
            if names:
                store.execute(
                    f"DELETE FROM metrics WHERE boot_id = ? AND ({_MEASURED}) AND name IN {in_list(len(names))}",
                    (boot_id, *names),
                )
            _append(store, boot_id, Boot(0, 0, metrics=list(metrics)), ("metrics",))
            if deploy is not None:
                save_deploy(store, boot_id, deploy)

    retry(run)


def _extend(store: Store, boot_id: int, b: Boot) -> None:
    """Append a resumed read's lead-in to the stored boot it continues (log order kept)."""
    row = store.one("SELECT status, failure, last_line, ended FROM boots WHERE id = ?", (boot_id,))
    if row is None:
        raise PositionMoved(f"boot {boot_id}")  # deleted meanwhile (prune): read again
    status, failure, last_line, ended = row
    sets: dict[str, Any] = {"last_line": max(last_line, b.last_line)}
    if b.ended_at is not None:
        sets["ended_at"] = iso(b.ended_at)
    if b.ended not in (None, "log_ends") and ended in (None, "log_ends"):
        sets["ended"] = b.ended  # the read that saw the process end says how
    if failure is None and b.failure:
        # a ready boot whose engine then died serving: keep ready, name the runtime cause
        sets["failure"], sets["failure_message"] = b.failure, b.failure_message
        if status != "ready":
            sets["status"] = b.status
    store.execute(
        "UPDATE boots SET " + ", ".join(f"{k} = ?" for k in sets) + " WHERE id = ?", (*sets.values(), boot_id)
    )
    _append(store, boot_id, b)
    store.executemany(_INSERT["sample_chunks"], [(boot_id, *c) for c in b.samples.chunk_rows()])
    if b.deploy is not None:
        save_deploy(store, boot_id, b.deploy)
    known = {r[0] for r in store.rows('SELECT "key" FROM config WHERE boot_id = ?', (boot_id,))}
    store.executemany(_INSERT["config"], [r for r in config_rows(b, boot_id) if r[1] not in known])
