"""The hook's verdict on a boot already stored, for whoever reports it later (watch --once, the
OpenMetrics export): the boot's own problem, its plan, its diff against the boot before it.  A flow
of the run stage: it reads the plan's patterns again from the stored source (run.reread)."""

from __future__ import annotations

from bootlog.judge.verdict import FAILED, Verdict, boot_problem, judge


def previous_boot(store, boot: dict) -> int | None:
    """The id of the boot before `boot` (a `show --json` boot object) of the same container on
    the same host (a boot read from a file: of the same file), in start order, as the hook
    diffs a deploy against."""
    from bootlog.store.reads import list_boots

    same = [
        b["id"]
        for b in list_boots(store, container=boot.get("container"), host=boot.get("host"))
        if b.get("container") == boot.get("container")
        and b.get("host") == boot.get("host")
        and (boot.get("container") or b.get("source") == boot.get("source"))
    ]
    earlier = same[: same.index(boot["id"])] if boot["id"] in same else []
    return earlier[-1] if earlier else None


def judge_stored(store, doc: dict, plan=None) -> Verdict:
    """The hook's verdict on a stored boot (a `show --json` document, runtime not needed), from
    the store alone, for whoever reports it later (watch --once, the OpenMetrics export): its own
    problem, and once it is no longer starting (a boot still starting would miss every
    expectation of a ready one, and lacks figures it will print) its check against `plan` and
    its diff against the previous boot of its container (previous_boot)."""
    from bootlog.judge import compare

    b = doc.get("boot") or {}
    own = boot_problem(doc)
    if b.get("status") == "incomplete" or (own is not None and own[0] == FAILED):
        return judge(doc)  # (nothing compared can change FAILED: a crash loop's boots cost no diff)
    check = diff = None
    if plan is not None:
        from bootlog.run.reread import with_plan_patterns

        check = compare.check(with_plan_patterns(store, doc, plan), plan)
    prev_id = previous_boot(store, b)
    if prev_id is not None:
        _, diff = diff_previous(store, doc, prev_id, plan)
    return judge(doc, results=[("plan", check), (f"against #{prev_id}", diff)])


def diff_previous(store, doc: dict, prev_id: int, plan=None) -> tuple[dict, dict]:
    """(the boot with the plan's pattern figures, its diff against boot `prev_id`) as the hook
    diffs a deploy: with the plan's tolerance (k, min_pct) and own figures, both sides read the
    same way (reread.both_with_plan_patterns), against the history of its config; its verdict on
    the boot is the plan's check, not repeated in the diff."""
    from bootlog.judge import compare
    from bootlog.store.db import retry
    from bootlog.store.reads import boots_like, show_boots

    old = retry(lambda: show_boots(store, [prev_id], runtime=False))[0]
    history = retry(lambda: show_boots(store, boots_like(store, doc["boot"]["id"]), runtime=False))
    if plan is not None:
        from bootlog.run.reread import both_with_plan_patterns

        doc, old = both_with_plan_patterns(store, doc, old, plan)
    return doc, compare.diff(doc, old, history=history, plan=plan, with_check=False)
