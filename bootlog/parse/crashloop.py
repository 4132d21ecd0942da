"""Crash loops: two or more failed starts of one container (or source) in a row, each within
15 minutes of the previous one (docs/figures.md `crash_loop`).

The seeds' UTIL 1.00 attempt "died in worker init on both ranks at 09:53 and 09:54,
NRestarts=2" and a 2×262144 shape "crash-looped, NRestarts=3 at ~6.7 min each": N failed boots
that systemd kept restarting are one finding, not N.  The event is derived when boots are read
(it depends on the boots around it, which a later ingest may add) and sits on the last failed
boot of the loop.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Iterable

WINDOW_S = 15 * 60


def _time(v: Any) -> datetime | None:
    if not v:
        return None
    try:
        return datetime.fromisoformat(str(v))
    except ValueError:
        return None


def _gap_s(a: datetime | None, b: datetime | None) -> float | None:
    if a is None or b is None or (a.tzinfo is None) != (b.tzinfo is None):
        return None
    return (b - a).total_seconds()


def _other_deploy(a: dict | None, b: dict | None) -> bool:
    a, b = a or {}, b or {}
    return any(a[k] != b[k] for k in a.keys() & b.keys())


def loops(boots: Iterable[dict]) -> dict[int, dict]:
    """{boot id: crash_loop event} for the boots of one container or source, in start order.

    Each boot: id, status, started_at, ended_at, first_line, and optionally restart_count (what
    the engine said of its run) and config.  A failed boot follows the failed one before it in
    the loop when it started at most WINDOW_S after that one ended (or started, when its end is
    unknown) with the same settings: a key both printed with different values is another deploy
    (the night ladder's 262144 → 245760 is two attempts, not a loop), while a key one of them
    never got to print is no difference."""
    out: dict[int, dict] = {}
    run: list[dict] = []

    def close() -> None:
        if len(run) >= 2:
            first, last = run[0], run[-1]
            start, end = _time(first.get("started_at")), _time(last.get("ended_at") or last.get("started_at"))
            span = _gap_s(start, end)
            counts = [b["restart_count"] for b in run if isinstance(b.get("restart_count"), int)]
            detail: dict[str, Any] = {
                "failed_starts": len(run),
                "span_s": round(span, 1) if span is not None else None,
                "boots": [b["id"] for b in run],
            }
            if counts and max(counts) > 0:
                detail["restart_count"] = max(counts)
            what = f"{len(run)} failed starts in a row"
            if span is not None:
                what += f" over {span / 60:.1f} min"
            if "restart_count" in detail:
                what += f", restart count {detail['restart_count']}"
            out[last["id"]] = {
                "kind": "crash_loop",
                "rank": None,
                "line": last.get("first_line"),
                "ts": last.get("started_at"),
                "message": what,
                "detail": detail,
            }
        run.clear()

    for b in boots:
        if b.get("status") != "failed":
            close()
            continue
        if run:
            prev = run[-1]
            gap = _gap_s(_time(prev.get("ended_at") or prev.get("started_at")), _time(b.get("started_at")))
            if gap is None or gap > WINDOW_S or _other_deploy(prev.get("config"), b.get("config")):
                close()
            elif run:
                prev.pop("config", None)  # (only the last boot's is compared: a long loop holds one)
        run.append(b)
    close()
    return out
