"""A parsed Boot as table rows: plain dicts of column values, built without SQLAlchemy.

Both writers use these: the SQLAlchemy store (queries.save_boots) and the sqlite3-only resume
path (lite.py), so a row never differs by the path that wrote it.
"""
from __future__ import annotations

import math
from datetime import datetime, timezone

TYPE_CHECKING = False
if TYPE_CHECKING:  # (typing for the annotations only: importing it costs ~5 ms of every start)
    from typing import Any

from bootlog.jsontext import dumps_sorted, dumps_str
from bootlog.plain import record
from bootlog.records import EVENT_KINDS, Boot
from bootlog.sha import sha256


class PositionMoved(Exception):
    """Another ingest stored a resumed file's new lines first: the read must start again."""


@record
class SourceInfo:
    name: str
    kind: str
    container: str | None = None
    host: str | None = None

    @property
    def key(self) -> str:
        return "|".join((self.kind, self.name, self.container or "", self.host or ""))


def _iso(ts: datetime | None) -> str | None:
    return ts.isoformat() if ts is not None else None


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def config_hash(config: dict[str, str]) -> str:
    return sha256(dumps_sorted(config).encode()).hexdigest()


def fallback_fingerprint(src: SourceInfo, boot: Boot) -> str:
    """A fingerprint for a boot the parser left without one: where it is and what it said.

    Weaker than the content hash (it moves if the boot grows), but keeps re-ingesting the same
    source from adding a second copy.
    """
    basis = dumps_str(  # (json.dumps(..., default=str))
        [src.key, boot.first_line, boot.vllm_version, boot.model, _iso(boot.started_at),
         sorted(boot.config.items())],
    )
    return "src:" + sha256(basis.encode()).hexdigest()


def stored_name(path: str) -> str:
    """A path as the database can hold it: a file name that is not UTF-8 (os.fsdecode's
    surrogates) keeps its odd bytes as \\xNN escapes instead of failing the insert."""
    try:
        path.encode("utf-8")
        return path
    except UnicodeEncodeError:
        return path.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


# A plan's user patterns (ingest --plan, hook --plan) add figures (pattern "user:NAME") and
# events of the plan's own kinds.  A later read without that plan does not find them: it must
# neither count their absence as a difference nor delete them when it rewrites the boot.
USER_PATTERN = "user:"


def user_metric(pattern: str | None) -> bool:
    return bool(pattern) and pattern.startswith(USER_PATTERN)  # type: ignore[union-attr]


def user_event(kind: str) -> bool:
    return kind not in EVENT_KINDS


def has_user_rows(b: Boot) -> bool:
    """Whether a parsed boot holds a plan's user-pattern figures or events (read with a plan)."""
    return any(user_metric(m.pattern) for m in b.metrics) or any(user_event(e.kind) for e in b.events)


def user_sql() -> tuple[str, str]:
    """SQL conditions (metrics, events) true for a plan's user-pattern rows."""
    kinds = ", ".join(f"'{k}'" for k in EVENT_KINDS)
    return f"coalesce(substr(pattern, 1, {len(USER_PATTERN)}), '') = '{USER_PATTERN}'", f"kind NOT IN ({kinds})"


TAIL = "{tail}"  # ingest ends its position's head text with this: the store puts the boot id there


def with_tail(head: str, last_lines: list[int], saved: list[tuple[int, bool]]) -> str:
    """An ingest position's head text with TAIL replaced by the id of the boot the read ended in
    (the one reaching furthest; the later of a tie): a resumed read continues that boot,
    whichever source its stored row names (a boot first stored from the hook's or a .gz copy).
    Other positions (watch's) are left as they are; no boot: an empty id."""
    if not head.endswith(TAIL):
        return head
    tail = ""
    if last_lines and len(last_lines) == len(saved):
        tail = str(saved[max(range(len(last_lines)), key=lambda i: (last_lines[i], i))][0])
    return head[: -len(TAIL)] + tail


def counts_differ(stored: list[int], parsed: list[int]) -> bool:
    """Whether a stored boot of the same span needs rewriting: its [metrics, events, samples]
    counts differ from the new read's (it ended in a half-written line that is whole now).
    Samples that `prune` deleted (none left, figures and events the same) stay deleted: a
    re-read of the same lines must add nothing."""
    if stored[:2] == parsed[:2] and stored[2] == 0 and parsed[2] > 0:
        return False
    return stored != parsed


def _finite(v: float) -> float | None:
    return v if isinstance(v, (int, float)) and math.isfinite(v) else None


def _jsonable(obj: Any) -> Any:
    """Event details and sample values as plain JSON (no datetimes, NaN or tuples)."""
    if isinstance(obj, dict):
        return {str(k): _jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple, set)):
        return [_jsonable(v) for v in obj]
    if isinstance(obj, datetime):
        return obj.isoformat()
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if obj is None or isinstance(obj, (str, int, bool)):
        return obj
    return str(obj)


class _Rows:
    """One child table's rows of a boot, made from the Boot on each iteration (the store may
    retry a transaction) and never held all at once: a boot that served for days has tens of
    thousands of stats samples (Boot.samples may itself be read back from disk), and a
    crash-looping server's log holds thousands of boots."""

    __slots__ = ("make", "count")

    def __init__(self, make, count: int) -> None:
        self.make, self.count = make, count

    def __len__(self) -> int:
        return self.count

    def __bool__(self) -> bool:
        return self.count > 0

    def __iter__(self):
        return self.make()


def _metric_rows(b: Boot):
    for i, m in enumerate(b.metrics):
        if _finite(m.value) is not None:  # NaN/inf cannot be stored portably and mean "unread"
            yield {"seq": i, "name": m.name, "value": float(m.value), "unit": m.unit, "rank": m.rank,
                   "line": m.line, "ts": _iso(m.ts), "pattern": m.pattern}


def _config_rows(b: Boot):
    for k, v in b.config.items():
        yield {"key": k, "value": "" if v is None else str(v)}


def _event_rows(b: Boot):
    for i, e in enumerate(b.events):
        yield {"seq": i, "kind": e.kind, "rank": e.rank, "line": e.line, "ts": _iso(e.ts),
               "message": e.message or "", "detail": _jsonable(e.detail or {})}


def _plain_floats(values: dict) -> bool:
    """Stats values as parsed: finite floats under str keys, already plain JSON."""
    for k, v in values.items():
        if v.__class__ is not float or k.__class__ is not str or not math.isfinite(v):
            return False
    return True


def _sample_rows(b: Boot):
    for s in b.samples:
        v = s.values  # tens of thousands per boot: skip the generic conversion when it is a no-op
        yield {"line": s.line, "ts": _iso(s.ts), "values": v if _plain_floats(v) else _jsonable(v)}




def boot_row(src: SourceInfo, b: Boot) -> dict[str, Any]:
    """The boots row of a Boot (without source_id and ingested_at, set when written)."""
    return {
        "container": src.container,
        "host": src.host,
        "status": b.status,
        "failure": b.failure,
        "failure_message": b.failure_message,
        "vllm_version": b.vllm_version,
        "engine": b.engine,
        "model": b.model,
        "started_at": _iso(b.started_at),
        "ready_at": _iso(b.ready_at),
        "ended_at": _iso(b.ended_at),
        "first_line": b.first_line,
        "last_line": b.last_line,
        "fingerprint": b.fingerprint or fallback_fingerprint(src, b),
        "config_hash": config_hash(b.config),
    }


def same_start(stored: dict[str, Any], b: dict[str, Any]) -> bool:
    """The same boot read again at another length, though its fingerprint moved.

    The parser's fingerprint settles only once a boot has printed 64 catalogue lines, so a boot
    read while still starting (hook, watch, an ingest during a deploy) comes back later with
    another one.  Same source, same first line and the same start time is the same boot; version
    and model must agree where both reads know them.  (`b` is a boot_row.)
    """
    if stored["started_at"] is None or stored["started_at"] != b["started_at"]:
        return False
    if stored["first_line"] != b["first_line"]:
        return False
    return all(stored[k] is None or b[k] is None or stored[k] == b[k] for k in ("vllm_version", "model"))


def match_stored(boots: list[dict[str, Any]], by_fp: dict[str, dict[str, Any]],
                 by_start: dict[int, list[dict[str, Any]]]
                 ) -> tuple[list[int], list[tuple[int, dict[str, Any]]], dict[str, int]]:
    """Which of a save's boot_rows are stored already, the one decision both writers make.

    by_fp: stored rows by fingerprint; by_start: this source's stored rows by first line (for
    reads whose fingerprint moved), in id order.  Returns the indexes of new boots, the (index,
    stored row) pairs of known ones, and the first index of each fingerprint (the same boot
    twice in one call counts once: later copies point at the first).
    """
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
            old = next((r for r in by_start.get(b["first_line"], [])
                        if r["id"] not in claimed and same_start(r, b)), None)
            if old is not None:
                claimed.add(old["id"])
        if old is None:
            new_idx.append(i)
        else:
            known.append((i, old))
    return new_idx, known, seen
