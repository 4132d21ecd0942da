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
from typing import Any, Iterable

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


def boot_problem(doc: dict) -> tuple[int, str] | None:
    """(exit code, why) of what a boot (a `show --json` document) says is wrong by itself, or
    None: see the module docstring."""
    from bootlog.compare import count_of, event_counts

    b = doc.get("boot") or {}
    message = f": {b['failure_message'][:200]}" if b.get("failure_message") else ""
    if b.get("status") == "failed":
        return FAILED, f"boot failed: {b.get('failure') or 'other'}{message}"
    if b.get("failure"):
        return FAILED, f"the engine died serving ({b['failure']}){message}"
    evs = event_counts(doc)
    faults = count_of(evs.get("gdn_hip_fault", []))
    if faults or evs.get("gdn_hip_fault_cap"):
        capped = " (report limit reached: later faults are silent)" if evs.get("gdn_hip_fault_cap") else ""
        return FAILED, f"{faults} gdn_hip state fault(s){capped}: the engine serves from corrupted state"
    survived = [k for k in SURVIVED_FAULTS if k in evs]
    if survived and b.get("status") == "ready":
        return DRIFT, f"{', '.join(survived)} while serving; the server went on"
    from bootlog.server_metrics import kv_disagreement

    kv = kv_disagreement(doc)  # the server's /metrics and its log disagree on the KV pool
    if kv is not None:
        return DRIFT, kv
    return None


def judge(doc: dict | None, *, results: Iterable[tuple[str, dict | None]] = (), exited: bool = False,
          problems: Iterable[str] = ()) -> Verdict:
    """The verdict on a boot: its own problem (boot_problem), a run that stopped before it was
    ready (`exited`), the (label, result) pairs of check/diff (compare's exit codes), and
    problems measured around it (a failed probe: DRIFT)."""
    from bootlog.compare import exit_code

    code, failed, reasons = OK, False, []
    if doc is None:
        code, failed = FAILED, True
        reasons.append("no vLLM boot found")
    else:
        own = boot_problem(doc)
        if own is not None:
            code, failed = own[0], own[0] == FAILED
            reasons.append(own[1])
        if exited and (doc.get("boot") or {}).get("status") != "failed":
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


# OpenMetrics' bootlog_verdict (metrics.md): 0 OK, 1 drift, 2 violation, 3 failed
GAUGE = {"OK": 0, "DRIFT": 1, "VIOLATION": 2, "FAILED": 3}


def gauge(v: Verdict) -> int:
    return GAUGE.get(v.word, 3)


def status_finding(doc: dict, want: Any = "ready") -> dict | None:
    """check's and diff's `status` row for a boot with a problem of its own (violation when it
    failed, drift when it survived a fault), or None."""
    from bootlog.compare import finding

    own = boot_problem(doc)
    if own is None:
        return None
    status = (doc.get("boot") or {}).get("status")
    return finding("status", "config", want, status, "violation" if own[0] == FAILED else "drift", own[1])


def previous_boot(store, boot: dict) -> int | None:
    """The id of the boot before `boot` (a `show --json` boot object) of the same container on
    the same host (a boot read from a file: of the same file), in start order, as the hook
    diffs a deploy against."""
    from bootlog.store.reads import list_boots

    same = [b["id"] for b in list_boots(store, container=boot.get("container"), host=boot.get("host"))
            if b.get("container") == boot.get("container") and b.get("host") == boot.get("host")
            and (boot.get("container") or b.get("source") == boot.get("source"))]
    earlier = same[:same.index(boot["id"])] if boot["id"] in same else []
    return earlier[-1] if earlier else None


def judge_stored(store, doc: dict, plan=None) -> Verdict:
    """The hook's verdict on a stored boot (a `show --json` document, runtime not needed), from
    the store alone, for whoever reports it later (watch --once, the OpenMetrics export): its own
    problem, and once it is no longer starting (a boot still starting would miss every
    expectation of a ready one, and lacks figures it will print) its check against `plan` and
    its diff against the previous boot of its container (previous_boot)."""
    from bootlog import compare
    from bootlog.store.reads import boots_like, show_boots

    b = doc.get("boot") or {}
    own = boot_problem(doc)
    if b.get("status") == "incomplete" or (own is not None and own[0] == FAILED):
        return judge(doc)  # (nothing compared can change FAILED: a crash loop's boots cost no diff)
    check = diff = None
    if plan is not None:
        from bootlog.reread import with_plan_patterns

        check = compare.check(with_plan_patterns(store, doc, plan), plan)
    prev_id = previous_boot(store, b)
    if prev_id is not None:
        new, old = doc, show_boots(store, [prev_id], runtime=False)[0]
        if plan is not None:
            from bootlog.reread import both_with_plan_patterns

            new, old = both_with_plan_patterns(store, new, old, plan)
        history = show_boots(store, boots_like(store, b["id"]), runtime=False)
        diff = compare.diff(new, old, history=history, plan=plan, with_check=False)
    return judge(doc, results=[("plan", check), (f"against #{prev_id}", diff)])
