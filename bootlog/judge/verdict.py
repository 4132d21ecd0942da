"""The verdict on a boot: one rule, used by the hook's word and exit code, check's and diff's
status row, the report's word and the OpenMetrics export.

What the boot itself says is wrong counts whatever a plan says (a plan can only add to it):

* FAILED (exit 4): the boot failed to start; or it was ready and its engine then died serving
  (its `failure` is set: an OOM, a GPU fault, `engine_died`); or it printed gdn_hip state
  faults.  A gdn_hip fault burst is the fork's SSM-state corruption (`state out of ssm-cache
  range`, seeds 004): the engine goes on answering from corrupted state, and after the report
  cap (32) it goes on silently, so no later line says it is still happening.  An endpoint that
  answers wrongly is a failed deploy, not a figure to look at: FAILED, not DRIFT.
* DRIFT (exit 3): a ready boot that survived a runtime fault (an OOM a request died of, a
  worker death, a GPU fault the engine did not die of): it still serves, but not as deployed.
  Also a boot whose server's /metrics (read by the hook) gives another KV pool than its log.

Then the judgements of the boot against a plan (check) and its previous boot (diff) and what
was measured around it (a probe that failed) raise the code, each with its reason.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable

from bootlog.shown import EventRow, Shown

OK, DRIFT, FAILED = 0, 3, 4
# event kinds that mean the engine serves from corrupted state: a failed deploy
STATE_FAULTS = ("gdn_hip_fault", "gdn_hip_fault_cap")
# runtime faults a ready engine can survive (the request dies, the server goes on)
SURVIVED_FAULTS = ("oom", "gpu_fault", "worker_died", "kv_cache_insufficient")


@dataclass
class Verdict:
    code: int  # the exit code: 0, 3 or 4
    word: str  # OK, DRIFT, VIOLATION, FAILED
    reasons: list[str] = field(default_factory=list)  # why, most serious first


def boot_problem(doc: Shown | dict) -> tuple[int, str] | None:
    """(exit code, why) of what a boot (a `show --json` document or its record) says is wrong
    by itself, or None: see the module docstring."""
    doc = Shown.of(doc)
    b = doc.boot
    message = f": {b.failure_message[:200]}" if b.failure_message else ""
    if b.status == "failed":
        return FAILED, f"boot failed: {b.failure or 'other'}{message}"
    if b.failure:
        return FAILED, f"the engine died serving ({b.failure}){message}"
    evs = event_counts(doc)
    faults = count_of(evs.get("gdn_hip_fault", []))
    if faults or evs.get("gdn_hip_fault_cap"):
        capped = " (report limit reached: later faults are silent)" if evs.get("gdn_hip_fault_cap") else ""
        return FAILED, f"{faults} gdn_hip state fault(s){capped}: the engine serves from corrupted state"
    survived = [k for k in SURVIVED_FAULTS if k in evs]
    if survived and b.status == "ready":
        return DRIFT, f"{', '.join(survived)} while serving; the server went on"
    from bootlog.measure.server_metrics import kv_disagreement

    kv = kv_disagreement(doc)  # the server's /metrics and its log disagree on the KV pool
    if kv is not None:
        return DRIFT, kv
    return None


def judge(
    doc: Shown | dict | None,
    *,
    results: Iterable[tuple[str, dict | None]] = (),
    exited: bool = False,
    problems: Iterable[str] = (),
) -> Verdict:
    """The verdict on a boot: its own problem (boot_problem), a run that stopped before it was
    ready (`exited`), the (label, result) pairs of check/diff (compare's exit codes), and
    problems measured around it (a failed probe: DRIFT)."""
    code, failed, reasons = OK, False, []
    if doc is None:
        code, failed = FAILED, True
        reasons.append("no vLLM boot found")
    else:
        doc = Shown.of(doc)
        own = boot_problem(doc)
        if own is not None:
            code, failed = own[0], own[0] == FAILED
            reasons.append(own[1])
        if exited and doc.boot.status != "failed":
            code, failed = FAILED, True
            reasons.append("the container stopped before the boot was ready")
    for label, result in results:
        if result is None:
            continue
        c = exit_code(result)
        if c:
            s = result.get("summary") or {}
            reasons.append(f"{label}: {s.get('violations', 0)} violation(s), {s.get('drift', 0)} drift")
            code = max(code, c)
    for p in problems:
        reasons.append(p)
        code = max(code, DRIFT)
    return Verdict(code, word(code, failed), reasons)


def word(code: int, failed: bool) -> str:
    """An exit code in words: 4 is FAILED for a boot that failed (boot_problem, a run that
    stopped before ready, no boot at all), else VIOLATION (a hard plan expectation missed)."""
    return {OK: "OK", DRIFT: "DRIFT", FAILED: "FAILED" if failed else "VIOLATION"}.get(code, str(code))


# OpenMetrics' bootlog_verdict (docs/figures.md): 0 OK, 1 drift, 2 violation, 3 failed
GAUGE = {"OK": 0, "DRIFT": 1, "VIOLATION": 2, "FAILED": 3}


def gauge(v: Verdict) -> int:
    return GAUGE.get(v.word, 3)


def exit_code(result: dict) -> int:
    """0 nothing wrong, 3 drift, 4 a violation (hard plan expectation, failed boot)."""
    s = result.get("summary", {})
    return 4 if s.get("violations") else 3 if s.get("drift") else 0


def event_counts(show: Shown | dict) -> dict[str, list[EventRow]]:
    """Events by kind, one per distinct (rank, message): an exception re-printed by a re-raise
    or by the wrapper's log copy is one fault, not two.  What the engine printed while it was
    being stopped (after a stop request: boots.py marks it) is the stop, not a fault."""
    out: dict[str, list[EventRow]] = {}
    seen: set[tuple] = set()
    events = Shown.of(show).events
    # the engine's copy of a worker's OOM ("Worker failed with error 'HIP out of memory. Tried
    # to allocate 50.00 MiB…'") carries no rank but the same allocation as the worker's own
    ranked_allocs = {
        (e.kind, e.facts.get("requested_mib"))
        for e in events
        if e.rank is not None and e.facts.get("requested_mib") is not None
    }
    for e in events:
        if e.facts.get("after_stop"):
            continue
        msg = (e.message or "").strip()
        key = (e.kind, e.rank, msg) if msg else (e.kind, e.rank, e.line)
        alloc = (e.kind, e.facts.get("requested_mib"))
        if key in seen or (e.rank is None and alloc in ranked_allocs):
            continue
        seen.add(key)
        out.setdefault(e.kind, []).append(e)
    return out


def count_of(events: Iterable[EventRow]) -> int:
    """How many occurrences the events stand for: a line may report a run ("fault #1-23")."""
    return sum(int(e.facts.get("faults") or 1) for e in events)
