"""A plan's own patterns ([[pattern]]) run over a log's lines: the hits they give, bounded in time.

A user regex comes from a plan file bootlog does not control: a catastrophic one must not hang
an ingest.  Each search is bounded (PATTERN_TIMEOUT_S of wall time: the regex module's CPU-time
timeout first, then a SIGALRM deadline on the main thread), each pattern per run
(PATTERN_BUDGET_S, dropped after PATTERN_GIVE_UP runaway lines) and all of a plan's patterns
together (PLAN_BUDGET_S).  The plan file itself is read and checked by judge.plan.
"""

from __future__ import annotations

import math
import signal
import sys
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Iterable

from bootlog.read.envfile import MAX_MESSAGE, Budget
from bootlog.records import Event, Metric, Record
from bootlog.safe import cut

PATTERN_TIMEOUT_S = 0.25  # wall time per search: a catastrophic regex must not hang an ingest
PATTERN_GIVE_UP = 3  # runaway lines after which a pattern is dropped for the rest of the run
# Wall time one pattern may take in all per run (one loaded plan): a regex just under its
# timeout that matches every line would otherwise cost 0.25 s a line; a sane one takes
# microseconds a line, so 2 s is ~10^6 lines.
PATTERN_BUDGET_S = 2.0
PLAN_BUDGET_S = 10.0  # ... and all of a plan's patterns together (a plan of 500 slow ones)
CPU_SLICE_S = 0.01  # the first try of a search, on the regex module's CPU-time timeout (_search)


@dataclass
class UserPattern:
    name: str
    regex: Any  # compiled `regex` pattern with a `value` group (figures) or none (events)
    source: str
    unit: str | None = None  # figures
    event: str | None = None  # event kind, when the pattern marks an event instead of a figure
    literal: str | None = None  # cheap prefilter
    kind: str | None = None  # "capacity" | "timing": how diff judges moves
    timeouts: int = 0  # lines it ran away on; at PATTERN_GIVE_UP it is used no more
    spent: float = 0.0  # wall seconds its searches took this run; at PATTERN_BUDGET_S, dropped
    searched: int = 0  # lines it was run on this run
    dropped: bool = False
    shared: Budget | None = field(default=None, repr=False, compare=False)  # its plan's seconds
    # the first lines it matched whose value is no number (line, the value as captured; at most
    # 50 a run): said at ingest and by check, instead of the figure missing without a word
    not_numbers: list[tuple[int | None, str]] = field(default_factory=list, compare=False)


def warn(msg: str) -> None:
    # (library code, but the one place a loaded plan can speak before any boot is judged)
    print(f"bootlog: warning: {cut(msg, MAX_MESSAGE)}", file=sys.stderr)


class _WallTimeout(TimeoutError):
    """A user regex search outlived its wall-clock deadline (SIGALRM)."""


_alarm_armed = False  # our SIGALRM handler acts only while a deadline of ours is running


def _on_alarm(signum: int, frame: Any) -> None:
    if _alarm_armed:  # (a signal delivered just after disarming is ignored)
        raise _WallTimeout("regex search ran out of time")


def _search_with_alarm(rx: Any, msg: str, seconds: float) -> Any:
    """rx.search(msg) stopped after `seconds` of wall time: the regex module checks signals
    every 256 steps, where our handler raises.  A wall-clock deadline needs the main thread, an
    interval timer, a SIGALRM handler set from Python (to put back) and no timer of someone
    else's; without one, the module's own CPU timeout stays the bound."""
    global _alarm_armed
    if not (
        hasattr(signal, "setitimer")
        and threading.current_thread() is threading.main_thread()
        and signal.getsignal(signal.SIGALRM) is not None
        and signal.getitimer(signal.ITIMER_REAL)[0] == 0
    ):
        return rx.search(msg, timeout=seconds)
    previous = signal.signal(signal.SIGALRM, _on_alarm)
    try:
        _alarm_armed = True
        try:
            signal.setitimer(signal.ITIMER_REAL, seconds)
            return rx.search(msg, timeout=seconds)
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
            _alarm_armed = False
    finally:
        signal.signal(signal.SIGALRM, previous)


def _search(rx: Any, msg: str, limit: float) -> Any:
    """rx.search(msg), TimeoutError after `limit` seconds of wall time.  The regex module's own
    timeout counts the process's CPU time: several times over in wall time on a busy host.  Nearly
    every search ends in microseconds, so only one that outlives a cheap first try on that timeout
    (CPU_SLICE_S) is run again under a wall-clock alarm for what is left of `limit`."""
    started = time.perf_counter()
    try:
        return rx.search(msg, timeout=min(limit, CPU_SLICE_S))
    except TimeoutError:
        if limit <= CPU_SLICE_S:
            raise
    left = limit - (time.perf_counter() - started)
    if left <= 0:
        raise TimeoutError("regex search ran out of time")
    return _search_with_alarm(rx, msg, left)


def user_pattern_hits_one(
    up: UserPattern,
    msg: str,
    *,
    line: int | None = None,
    rank: int | None = None,
    ts: Any = None,
    limit: float = PATTERN_TIMEOUT_S,
) -> list[Metric | Event]:
    """Run one user pattern over one message; TimeoutError past `limit` seconds (wall time)."""
    if up.literal and up.literal not in msg:
        return []
    m = _search(up.regex, msg, limit)
    if not m:
        return []
    if up.event:
        detail = {k: v for k, v in m.groupdict().items() if v is not None}
        return [Event(kind=up.event, line=line, rank=rank, ts=ts, message=msg.strip(), detail=detail)]
    from bootlog.parse.hits import decimal  # (the one reader of a figure's number)

    raw = m.group("value") or ""
    try:
        value = float(decimal(raw))
    except ValueError:  # ("1_0", "１.５": int()/float() read them, vLLM never prints them)
        if len(up.not_numbers) < 50:
            up.not_numbers.append((line, cut(raw, 40)))
        return []
    return [
        Metric(name=up.name, value=value, unit=up.unit or "", rank=rank, line=line, ts=ts, pattern=f"user:{up.name}")
    ]


def _guarded_hits(up: UserPattern, msg: str, **where: Any) -> list[Metric | Event]:
    """user_pattern_hits_one at ingest: a runaway search loses its line and the ingest goes on;
    a pattern is dropped for the rest of the run, with one warning, after PATTERN_GIVE_UP
    runaway lines or PATTERN_BUDGET_S of searching (a 0.25 s search on every line is hours)."""
    if up.dropped or (up.literal and up.literal not in msg):
        return []
    shared = up.shared or Budget(math.inf)
    if shared.left <= 0:
        up.dropped = True
        return []
    limit = min(PATTERN_TIMEOUT_S, PATTERN_BUDGET_S - up.spent, shared.left)
    started = time.perf_counter()
    try:
        return user_pattern_hits_one(up, msg, limit=limit, **where)
    except TimeoutError:
        up.timeouts += 1
        return []
    finally:
        took = time.perf_counter() - started
        up.spent += took
        shared.left -= took
        up.searched += 1
        if up.timeouts >= PATTERN_GIVE_UP or up.spent >= PATTERN_BUDGET_S:
            _drop(up)
        if shared.left <= 0 and not shared.said:
            shared.said = up.dropped = True
            warn(
                f"plan patterns took {PLAN_BUDGET_S:g} s together this run (their budget, "
                f"spent last by {up.name!r}); all are skipped for the rest of this run"
            )


def _drop(up: UserPattern) -> None:
    up.dropped = True
    if up.timeouts >= PATTERN_GIVE_UP:
        why = (
            f"ran past {PATTERN_TIMEOUT_S:g} s on {up.timeouts} lines; it is skipped for the "
            "rest of this run (its regex backtracks catastrophically: simplify it)"
        )
    else:
        why = (
            f"took {up.spent:.1f} s on {up.searched} lines, its budget of "
            f"{PATTERN_BUDGET_S:g} s for a run; it is skipped for the rest of this run "
            "(simplify its regex, or give it a literal to search fewer lines)"
        )
    warn(f"plan pattern {up.name!r} {why}")


def _msg_rank(text: str) -> tuple[str, int | None]:
    """The message part and TP rank of a raw line, so a user figure printed once per rank is
    stored once per rank like a catalogue figure."""
    try:
        from bootlog.parse.vline import parse_line

        v = parse_line(Record(lineno=0, text=text))
        return (v.msg or text), v.rank
    except Exception:  # noqa: BLE001 - without the line parser the whole text is searched
        return text, None


def apply_user_patterns(plan: Any, lines: Iterable[Any]) -> list[Metric | Event]:
    """User patterns over parsed lines (VLine/Record, or (lineno, text) pairs); rows carry the
    line's number, rank and time, exactly like catalogue hits."""
    if plan is None or not plan.patterns:
        return []
    out: list[Metric | Event] = []
    for item in lines:
        if isinstance(item, tuple):
            lineno, msg, rank, ts = item[0], item[1], None, None
        else:
            lineno, ts = getattr(item, "lineno", None), getattr(item, "ts", None)
            if hasattr(item, "msg"):  # a VLine: prefix already parsed
                msg, rank = item.msg or item.text, item.rank
            else:  # a Record: parse the prefix only when some pattern could match
                text = getattr(item, "text", "")
                if not any(not up.dropped and (up.literal is None or up.literal in text) for up in plan.patterns):
                    continue
                msg, rank = _msg_rank(text)
        for up in plan.patterns:
            out.extend(_guarded_hits(up, msg, line=lineno, rank=rank, ts=ts))
    return out


def user_pattern_hits(plan: Any, text: str) -> list[Metric | Event]:
    """Every user-pattern figure/event in `text` (lines numbered from 1; a single line is
    unnumbered: the caller knows where it was)."""
    lines = text.splitlines() or [text]
    return apply_user_patterns(
        plan, (Record(lineno=no if len(lines) > 1 else None, text=line) for no, line in enumerate(lines, 1))
    )
