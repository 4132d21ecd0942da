"""Reading the store: boots in the `show --json` shape, refs (last, prev, last~N, an id), earlier
boots of the same config, runtime samples, read positions: plain SQL over a Store (db.py), the
same for SQLite and PostgreSQL.  JSON columns arrive as text from sqlite3 and as Python values
from psycopg: _json() takes either."""

from __future__ import annotations

import ast
import json
import math
import re
from typing import Any, Iterator, Sequence

from bootlog.errors import RefError, RefSyntaxError
from bootlog.records import Sample, samples_of
from bootlog.shown import BootRow, Deploy, EventRow, Figure, Shown
from bootlog.store.db import Store, retry
from bootlog.store.write import CHUNK, chunks, in_list
from bootlog.store.write import jsonable as _jsonable

_BOOT_SELECT = (
    "SELECT boots.id, boots.status, boots.failure, boots.failure_message, boots.vllm_version, boots.engine, "
    "boots.model, boots.container, boots.host, sources.name AS source, boots.started_at, boots.ready_at, "
    "boots.ended_at, boots.first_line, boots.last_line, boots.ended, boots.kv_cache_sized_by "
    "FROM boots JOIN sources ON sources.id = boots.source_id"
)


def _json(v: Any) -> Any:
    return json.loads(v) if isinstance(v, (str, bytes)) else v


def _json_number(v: float) -> int | float:
    # counts print as 398658, not 398658.0; JSON has one number type anyway
    return int(v) if float(v).is_integer() and abs(v) < 2**53 else v


# ASCII digits: int() and float() also read "１" and "٣", which no Python prints for a number
_INT_RE = re.compile(r"^[+-]?[0-9]+$")
_FLOAT_RE = re.compile(r"^[+-]?([0-9]+\.[0-9]*|\.[0-9]+|[0-9]+)([eE][+-]?[0-9]+)?$")
_WORDS = {"True": True, "true": True, "False": False, "false": False, "None": None, "null": None, "": None}


def typed_config_value(text: str) -> Any:
    """A config value as printed by Python (True, None, 0.9, 'fp8', [1, 2]) as a JSON value."""
    s = text.strip()
    if s in _WORDS:
        return _WORDS[s]
    if _INT_RE.match(s):
        try:
            return int(s)
        except ValueError:  # past Python's int limit (4,300 digits): the text stays
            return s
    if _FLOAT_RE.match(s):
        f = float(s)
        return f if math.isfinite(f) else s
    if len(s) >= 2 and s[0] == s[-1] and s[0] in "'\"":
        try:
            v = ast.literal_eval(s)
            if isinstance(v, str):
                return v
        except (ValueError, SyntaxError):
            pass
        return s[1:-1]
    if s[:1] in "[{(":
        try:
            return _jsonable(ast.literal_eval(s))
        except (ValueError, SyntaxError, MemoryError, RecursionError, TypeError):
            pass
        try:  # compilation_config and friends are printed as JSON (true/null), not Python
            return _jsonable(json.loads(s))
        except (ValueError, RecursionError):
            return s
    return s


class RuntimeFold:
    """The `runtime` summary of a boot folded over its samples one at a time (a boot that
    served for weeks has hundreds of thousands: none is kept)."""

    __slots__ = ("n", "last", "mx")

    def __init__(self) -> None:
        self.n: int = 0
        self.last: dict[str, Any] | None = None
        self.mx: dict[str, Any] = {}

    def add(self, values: dict[str, Any]) -> None:
        self.n += 1
        self.last = values
        mx = self.mx
        for k, v in values.items():
            if isinstance(v, (int, float)) and not isinstance(v, bool) and (k not in mx or v > mx[k]):
                mx[k] = v

    def result(self) -> dict[str, Any]:
        return {"stats_lines": self.n, "last": dict(self.last) if self.last else {}, "max": self.mx}


def show_boots(store: Store, boot_ids: list[int], *, runtime: bool = True) -> list[dict]:
    """Several boots in the `show --json` shape (show_records() as JSON objects)."""
    return [r.to_json() for r in show_records(store, boot_ids, runtime=runtime)]


def show_records(store: Store, boot_ids: list[int], *, runtime: bool = True) -> list[Shown]:
    """Several boots as records (shown.Shown), in the order of `boot_ids`, read with one query
    per table (per 500 ids) instead of four per boot: a diff's history is up to 50 boots.
    runtime=False skips the stats samples (a long-running boot has thousands) and gives
    runtime None; with runtime, they are folded row by row as the executor streams them."""
    ids = list(dict.fromkeys(boot_ids))
    rows: dict[int, BootRow] = {}
    metrics: dict[int, list[Figure]] = {i: [] for i in ids}
    config: dict[int, dict] = {i: {} for i in ids}
    events: dict[int, list[EventRow]] = {i: [] for i in ids}
    folds: dict[int, RuntimeFold] = {i: RuntimeFold() for i in ids}
    deploys: dict[int, Any] = {}
    for chunk in chunks(ids, CHUNK):
        where = in_list(len(chunk))
        for r in store.execute(f"{_BOOT_SELECT} WHERE boots.id IN {where}", chunk):
            rows[r[0]] = BootRow(*r)
        missing = [i for i in chunk if i not in rows]
        if missing:
            raise RefError(f"no boot with id {missing[0]}")
        for bid, name, value, unit, rank, line in store.execute(
            f"SELECT boot_id, name, value, unit, rank, line FROM metrics WHERE boot_id IN {where} "
            "ORDER BY boot_id, seq",
            chunk,
        ):
            metrics[bid].append(Figure(name, _json_number(value), unit, rank, line))
        for bid, key, value in store.execute(
            f'SELECT boot_id, "key", value FROM config WHERE boot_id IN {where} ORDER BY boot_id, "key"', chunk
        ):
            config[bid][key] = typed_config_value(value)
        for bid, kind, rank, line, ts, message, detail in store.execute(
            f"SELECT boot_id, kind, rank, line, ts, message, detail FROM events WHERE boot_id IN {where} "
            "ORDER BY boot_id, seq",
            chunk,
        ):
            events[bid].append(EventRow(kind, rank, line, ts, message, _json(detail)))
        for bid, data in store.execute(f"SELECT boot_id, data FROM deploys WHERE boot_id IN {where}", chunk):
            deploys[bid] = _json(data)
        if runtime:
            for bid, data in store.execute(
                f"SELECT boot_id, data FROM sample_chunks WHERE boot_id IN {where} ORDER BY boot_id, first_line, id",
                chunk,
            ):
                for s in samples_of(data):
                    folds[bid].add(s.values)
    for rows_ in metrics.values():  # log order (the contract): derived figures were stored last
        rows_.sort(key=log_order)
    for bid, ev in _crash_loops(store, [rows[i].to_json() for i in ids if rows[i].status == "failed"]).items():
        events[bid].append(EventRow(**ev))
    by_id = {
        i: Shown(
            rows[i],
            metrics[i],
            config[i],
            events[i],
            folds[i].result() if runtime else None,
            Deploy(deploys[i]) if isinstance(deploys.get(i), dict) else None,
        )
        for i in ids
    }
    return [by_id[i] for i in boot_ids]


def _crash_loops(store: Store, failed: list[dict]) -> dict[int, dict]:
    """crash_loop events (crashloop.py) of the failed boots in `failed`, from the boots of
    their container / source in start order (with the restart count the engine gave each).
    A group's loops are found once per command and kept on the store until its next write
    (an export reads a database of 100,000 boots a page at a time: each page would read every
    boot of the group again)."""
    out: dict[int, dict] = {}
    wanted = [b["id"] for b in failed]
    failed_shown = set(wanted)
    groups: dict[tuple, None] = {}  # (an ordered set: one query per container / source)
    for chunk in chunks(wanted, CHUNK):
        for row in store.rows(
            f"SELECT id, container, host, source_id FROM boots WHERE id IN {in_list(len(chunk))}", chunk
        ):
            gw, gp = _group(row)
            groups[(tuple(gw), tuple(gp))] = None
    for gw, gp in groups:
        key = ("crash_loops", gw, gp)
        if key not in store.memo:
            store.memo[key] = _group_loops(store, list(gw), list(gp))
        out.update({i: ev for i, ev in store.memo[key].items() if i in failed_shown})
    return out


def _group_loops(store: Store, gw: list[str], gp: list[Any]) -> dict[int, dict]:
    """{boot id: crash_loop event} of one container's / source's boots.  The failed boots'
    config and restart counts are read CHUNK boots at a time as the walk reaches them, and
    crashloop.loops keeps the config of a loop's last boot only: memory does not grow with
    the boots (a crash loop of thousands)."""
    from bootlog.parse.crashloop import loops

    rows = store.rows(
        "SELECT boots.id, boots.status, boots.started_at, boots.ended_at, boots.first_line, deploys.data "
        "FROM boots LEFT JOIN deploys ON deploys.boot_id = boots.id" + where_clause(gw) + f" ORDER BY {_OLDEST}",
        gp,
    )
    rows.reverse()  # (popped from the end as the walk goes: what was walked is not kept)

    def walk() -> Iterator[dict]:
        while rows:
            part = [
                dict(zip(("id", "status", "started_at", "ended_at", "first_line", "deploy"), rows.pop()))
                for _ in range(min(CHUNK, len(rows)))
            ]
            failed_ids = [b["id"] for b in part if b["status"] == "failed"]
            configs: dict[int, dict] = {i: {} for i in failed_ids}
            restarts: dict[int, int] = {}
            if failed_ids:
                ids = f"boot_id IN {in_list(len(failed_ids))}"
                for bid, key, value in store.execute(
                    f'SELECT boot_id, "key", value FROM config WHERE {ids}', failed_ids
                ):
                    configs[bid][key] = hash(value)  # (compared for equality only; values can be KBs)
                # systemd's "Scheduled restart job, restart counter is at N" (a journal of the unit)
                for bid, detail in store.execute(
                    f"SELECT boot_id, detail FROM events WHERE {ids} AND kind = 'warning' AND message LIKE ?",
                    [*failed_ids, "%restart counter is at%"],
                ):
                    n = (_json(detail) or {}).get("restart_count")
                    if isinstance(n, int):
                        restarts[bid] = max(n, restarts.get(bid, 0))
            for b in part:
                dep = _json(b.pop("deploy")) if b.get("deploy") is not None else None
                counts = [dep.get("restart_count") if isinstance(dep, dict) else None, restarts.get(b["id"])]
                b["restart_count"] = max((c for c in counts if isinstance(c, int)), default=None)
                b["config"] = configs.get(b["id"])
                yield b

    return loops(walk())


def log_order(m: Figure) -> tuple[bool, int]:
    """Sort key: by line (stable, so the figures of one line keep their order), lineless last."""
    return m.line is None, m.line or 0


def filtered(container: str | None, host: str | None) -> tuple[list[str], list[Any]]:
    given = [(col, v) for col, v in (("boots.container", container), ("boots.host", host)) if v is not None]
    return [f"{col} = ?" for col, _ in given], [v for _, v in given]


def _group(row: tuple, by_host: bool = False) -> tuple[list[str], list[Any]]:
    """Boots of the same container (and host); without a container, of the same source, or
    with by_host of the same host (timing history may span several log files of one server).
    row: (id, container, host, source_id)."""
    _, container, host, source_id = row[:4]
    if container is not None:
        if host is not None:
            return ["boots.container = ?", "boots.host = ?"], [container, host]
        return ["boots.container = ?"], [container]
    if by_host and host is not None:
        return ["boots.host = ?", "boots.container IS NULL"], [host]
    return ["boots.source_id = ?"], [source_id]


def where_clause(parts: list[str]) -> str:
    return (" WHERE " + " AND ".join(parts)) if parts else ""


# Boots are in the order they started (write.start_key: their own start time, else the boot
# before them in the log, else when stored), ties by id: `last` is the latest started boot even
# when an older log was ingested after a newer one.
_OLDEST = "boots.start_key, boots.id"
NEWEST = "boots.start_key DESC, boots.id DESC"
_BEFORE = "(boots.start_key < ? OR (boots.start_key = ? AND boots.id < ?))"
_REF_RE = re.compile(r"^(last|prev)(?:~([0-9]+))?$")  # ASCII digits: int() also reads "１", "²" fails
_ID_MAX = 2**63 - 1  # the largest id a database integer holds


def resolve_ref(store: Store, ref: str, container: str | None = None, host: str | None = None) -> int:
    """`last`, `prev` (the boot before `last` of the same container/source), `last~N`, or an id.

    Without a container, `prev` looks in the same source first, then in the other container-less
    sources of the same host (a deploy log per file)."""
    ref = (ref or "").strip()
    m = _REF_RE.match(ref)
    try:
        bid = int(ref) if ref.isascii() and ref.isdigit() else None
        back = int(m.group(2) or 0) + (1 if m.group(1) == "prev" else 0) if m else None
    except ValueError:  # a number of over 4,300 digits: int() refuses it (and it is no id)
        bid = back = None
    shown = repr(ref) if len(ref) <= 40 else repr(ref[:30]) + f"… ({len(ref):,} characters)"
    if bid is None and back is None:
        raise RefSyntaxError(f"not a boot reference: {shown} (use last, prev, last~N or an id)")
    if bid is not None:
        if bid > _ID_MAX or store.one("SELECT boots.id FROM boots WHERE boots.id = ?", [bid]) is None:
            raise RefError(f"no boot with id {bid if bid <= _ID_MAX else shown}")
        return bid
    if back > _ID_MAX // 2:  # more boots back than any database holds (and past an SQL OFFSET)
        raise RefError(f"no boot matches {shown}")
    fw, fp = filtered(container, host)
    last = store.one(
        "SELECT boots.id, boots.container, boots.host, boots.source_id, boots.start_key FROM boots"
        + where_clause(fw)
        + f" ORDER BY {NEWEST} LIMIT 1",
        fp,
    )
    if last is None:
        scope = f" for container {container}" if container else (f" for host {host}" if host else "")
        raise RefError(f"no boot matches {ref!r}{scope}" if back else f"no boots stored yet{scope}")
    if back == 0:
        return last[0]
    # the boots started before `last` in its container/source, newest first; for a
    # container-less source they go on with the host's other container-less files (one log file
    # per deploy is common), so last~1, last~2, ... walk one list and each N names another boot
    gw, gp = _group(last)
    before, bp = _BEFORE, [last[4], last[4], last[0]]
    where = [*fw, *gw, before]
    got = store.one(
        "SELECT boots.id FROM boots" + where_clause(where) + f" ORDER BY {NEWEST} LIMIT 1 OFFSET ?",
        [*fp, *gp, *bp, back - 1],
    )
    if got is None and last[1] is None and last[2] is not None:
        same = store.one("SELECT count(*) FROM boots" + where_clause(where), [*fp, *gp, *bp])[0]
        hw, hp = _group(last, by_host=True)
        got = store.one(
            "SELECT boots.id FROM boots"
            + where_clause([*fw, *hw, before, "boots.source_id <> ?"])
            + f" ORDER BY {NEWEST} LIMIT 1 OFFSET ?",
            [*fp, *hp, *bp, last[3], back - 1 - same],
        )
    if got is None:
        raise RefError(f"no boot matches {ref!r}")
    return got[0]


def boots_like(store: Store, boot_id: int, limit: int = 50) -> list[int]:
    """Earlier boots of the same container (else host, else source) with the same config, oldest first."""
    row = store.one(
        "SELECT boots.id, boots.container, boots.host, boots.source_id, boots.config_hash, "
        "boots.start_key FROM boots WHERE boots.id = ?",
        [boot_id],
    )
    if row is None:
        raise RefError(f"no boot with id {boot_id}")
    gw, gp = _group(row, by_host=True)
    ids = [
        r[0]
        for r in store.execute(
            "SELECT boots.id FROM boots"
            + where_clause([*gw, _BEFORE, "boots.config_hash = ?"])
            + f" ORDER BY {NEWEST} LIMIT ?",
            [*gp, row[5], row[5], boot_id, row[4], limit],
        )
    ]
    return ids[::-1]


def list_boots(store: Store, container: str | None = None, host: str | None = None) -> list[dict]:
    """Boot objects (the `boot` of show --json), in the order they started, newest last."""
    fw, fp = filtered(container, host)
    return retry(
        lambda: [
            BootRow(*r).to_json() for r in store.rows(_BOOT_SELECT + where_clause(fw) + f" ORDER BY {_OLDEST}", fp)
        ]
    )


def boot_ids(store: Store, container: str | None = None, host: str | None = None) -> list[int]:
    """The ids of list_boots(), in the same order (what a long export pages through)."""
    fw, fp = filtered(container, host)
    return retry(
        lambda: [
            r[0]
            for r in store.rows(
                "SELECT boots.id FROM boots JOIN sources ON sources.id = "
                "boots.source_id" + where_clause(fw) + f" ORDER BY {_OLDEST}",
                fp,
            )
        ]
    )


def show_boot(store: Store, boot_id: int) -> dict:
    """One boot, all it knows, in the exact `show --json` shape."""
    return retry(lambda: show_boots(store, [boot_id]))[0]


def samples(store: Store, boot_ids: Sequence[int]) -> Iterator[tuple[int, Sample]]:
    """(boot id, Sample) of the boots' periodic statistics lines, boot by boot in log order."""
    for chunk in chunks(list(dict.fromkeys(boot_ids)), CHUNK):
        got = retry(
            lambda: store.rows(
                f"SELECT boot_id, data FROM sample_chunks WHERE boot_id IN {in_list(len(chunk))} "  # noqa: B023
                "ORDER BY boot_id, first_line, id",
                chunk,  # noqa: B023  (retry calls it at once)
            )
        )
        for bid, data in got:
            for s in samples_of(data):
                yield bid, s


def stored_figures(store: Store, boot_id: int) -> list[dict]:
    """The boot's figures as stored, with what show --json leaves out: the time of the line that
    printed each (its timeline) and the catalogue entry that read it (explain)."""
    keys = ("name", "value", "unit", "rank", "line", "ts", "pattern")
    return [
        dict(zip(keys, r))
        for r in retry(
            lambda: store.rows(
                "SELECT name, value, unit, rank, line, ts, pattern FROM metrics WHERE boot_id = ? ORDER BY seq",
                (boot_id,),
            )
        )
    ]


def get_position(store: Store, source_key: str) -> tuple[int, str] | None:
    row = retry(
        lambda: store.one("SELECT byte_offset, head_fingerprint FROM positions WHERE source_key = ?", (source_key,))
    )
    return (int(row[0]), row[1]) if row else None


def last_boot_of_source(store: Store, key: str, ends_at: int | None = None) -> tuple[int, str] | None:
    """(id, status) of the boot of source `key` that reaches furthest into it; with ends_at, the
    newest one ending at that line (a file rotated since holds older boots reaching further)."""
    sql = (
        'SELECT boots.id, boots.status FROM boots JOIN sources ON sources.id = boots.source_id WHERE sources."key" = ?'
    )
    if ends_at is not None:
        row = retry(lambda: store.one(sql + " AND boots.last_line = ? ORDER BY boots.id DESC LIMIT 1", (key, ends_at)))
    else:
        row = retry(lambda: store.one(sql + " ORDER BY boots.last_line DESC, boots.id DESC LIMIT 1", (key,)))
    return (row[0], row[1]) if row else None


def boot_status(store: Store, boot_id: int) -> str | None:
    """The boot's status; None for no such boot, or one of a file source an older bootlog
    stored under a relative path (its file is read whole again, to store where it is)."""
    from bootlog.store.write import relative_source

    row = retry(
        lambda: store.one(
            "SELECT boots.status, sources.kind, sources.name FROM boots JOIN sources "
            "ON sources.id = boots.source_id WHERE boots.id = ?",
            (boot_id,),
        )
    )
    return row[0] if row and not relative_source(row[1], row[2]) else None


TABLES = ("sources", "boots", "metrics", "config", "events", "sample_chunks", "deploys", "positions")


def count_rows(store: Store) -> dict[str, int]:
    """Rows per table, and the runtime samples the chunks hold."""
    out: dict[str, int] = {
        t: int(retry(lambda t=t: store.one(f"SELECT count(*) FROM {t}"))[0])  # type: ignore[misc]
        for t in TABLES
    }
    out["samples"] = int(retry(lambda: store.one("SELECT coalesce(sum(n), 0) FROM sample_chunks"))[0])
    return out


def boot_source(store: Store, boot_id: int) -> tuple[str, str, str | None, str] | None:
    """(source name, source kind, host, fingerprint) of a stored boot, or None."""
    return boot_sources(store, [boot_id]).get(boot_id)


def boot_sources(store: Store, boot_ids: Sequence[int]) -> dict[int, tuple[str, str, str | None, str]]:
    """Boot id -> (source name, source kind, host, fingerprint) of stored boots."""
    out: dict[int, tuple[str, str, str | None, str]] = {}
    for chunk in chunks(list(boot_ids), CHUNK):
        for bid, name, kind, host, fingerprint in store.rows(
            "SELECT boots.id, sources.name, sources.kind, boots.host, boots.fingerprint FROM boots JOIN "
            f"sources ON sources.id = boots.source_id WHERE boots.id IN {in_list(len(chunk))}",
            chunk,
        ):
            out[bid] = (name, kind, host, fingerprint)
    return out


def has_user_rows(store: Store, boot_id: int, event_kinds: Sequence[str]) -> bool:
    """Whether a boot was stored with a plan's own patterns: a figure a user pattern read, or an
    event of one of the kinds the plan's patterns mark."""
    n = store.one("SELECT count(*) FROM metrics WHERE boot_id = ? AND pattern LIKE ?", [boot_id, "user:%"])[0]
    if not n and event_kinds:
        marks = ", ".join("?" * len(event_kinds))
        n = store.one(f"SELECT count(*) FROM events WHERE boot_id = ? AND kind IN ({marks})", [boot_id, *event_kinds])[
            0
        ]
    return bool(n)
