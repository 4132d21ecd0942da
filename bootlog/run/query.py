"""Stored boots by ref, judged: `diff`, `check` and `show` as the command line and the Python
face (bootlog/__init__.py) both run them.  A ref is last, prev, last~N or a boot id
(store.reads.resolve_ref); a plan's own patterns are read again from the source of a boot stored
without them (reread), so both sides of a diff are read the same way."""

from __future__ import annotations

from typing import Any

from bootlog.judge import compare
from bootlog.run.reread import both_with_plan_patterns, with_plan_patterns
from bootlog.store.reads import boots_like, resolve_ref, show_boot, show_boots


def diff_refs(
    store, a: str = "last", b: str = "prev", *, plan: Any = None, container: str | None = None, host: str | None = None
) -> tuple[dict, dict, dict]:
    """(diff --json's document, A's and B's show documents): boot A (the new one) against B,
    timings judged against earlier boots of A's config."""
    ida = resolve_ref(store, a, container=container, host=host)
    idb = resolve_ref(store, b, container=container, host=host)
    # findings come from figures, config and events: the stats samples (thousands for a boot
    # that served for days) are not read
    show_a, show_b = show_boots(store, [ida, idb], runtime=False)
    if plan is not None:
        show_a, show_b = both_with_plan_patterns(store, show_a, show_b, plan)
    # (earlier boots of the same config: figures and config only, fetched in one batch)
    history = show_boots(store, boots_like(store, ida), runtime=False)
    return compare.diff(show_a, show_b, history=history, plan=plan), show_a, show_b


def check_ref(store, ref: str = "last", *, plan: Any, container: str | None = None, host: str | None = None) -> dict:
    """check --json's document: one boot held to its plan."""
    shown = show_boots(store, [resolve_ref(store, ref, container=container, host=host)], runtime=False)[0]
    return compare.check(with_plan_patterns(store, shown, plan), plan)


def show_ref(store, ref: str = "last", *, container: str | None = None, host: str | None = None) -> dict:
    """show --json's document of one boot (its timeline included)."""
    from bootlog.judge.boot_timeline import timeline

    data = show_boot(store, resolve_ref(store, ref, container=container, host=host))
    data["timeline"] = timeline(store, data)
    return data
