"""`bootlog report`'s flow: the stored boots are read (store), judged (judge: the plan's check,
the diff against the boot before, the timelines; the plan's own patterns read again from the
source where a boot was stored without them: reread), put on the log's own clock (reread.log_clock),
then drawn (render.report_page), in that order."""

from __future__ import annotations

from typing import Any, Iterator, Sequence

from bootlog.errors import BootlogError, RefError
from bootlog.judge import compare
from bootlog.judge.boot_timeline import timeline, timelines
from bootlog.judge.timeline import moved as moved_phases
from bootlog.render import report
from bootlog.render.report_page import COLUMNS, PageData, report_html
from bootlog.run.reread import both_with_plan_patterns, log_clock, with_plan_patterns
from bootlog.store.reads import boots_like, resolve_ref, samples, show_boot, show_boots


def html_report(
    store,
    *,
    container: str | None = None,
    host: str | None = None,
    last: int | None = 50,
    plan: Any = None,
    plan_name: str | None = None,
    title: str | None = None,
) -> str:
    """The report page for the stored boots (the newest `last` in the table and the charts)."""
    data = gather(store, container=container, host=host, last=last, plan=plan)
    return report_html(data, container=container, plan=plan, plan_name=plan_name, title=title)


def gather(
    store, *, container: str | None = None, host: str | None = None, last: int | None = 50, plan: Any = None
) -> PageData:
    """Everything the page shows, read and judged."""
    docs = report.load_docs(
        store, container=container, host=host, last=None if last is None else last + 1, runtime=False
    )
    if not docs:
        raise BootlogError(report.nothing_stored(container, host))
    cols, rows, changes = report.history(docs, COLUMNS, skip_first=last is not None and len(docs) > last)
    shown = docs[-len(rows) :]
    newest = show_boot(store, shown[-1]["boot"]["id"])  # (with its runtime summary)
    clock = log_clock(store, newest)
    tls = timelines(store, shown)
    checks = [compare.check(with_plan_patterns(store, d, plan), plan) for d in shown] if plan is not None else None
    diff, prev, why_no_diff = _latest_diff(store, newest, container=container, host=host, plan=plan)
    moved: list[dict] = []
    if diff is not None and prev is not None:
        old = timeline(store, prev)
        new = tls[newest["boot"]["id"]]
        moved = moved_phases(new, old) if old and new else []
    return PageData(
        docs=shown,
        columns=cols,
        rows=rows,
        changes=changes,
        newest=newest,
        clock=clock,
        timelines=tls,
        checks=checks,
        diff=diff,
        prev=prev,
        why_no_diff=why_no_diff,
        moved=moved,
        runtime=_runtime(store, shown),
    )


def _latest_diff(store, newest: dict, *, container, host, plan) -> tuple[dict | None, dict | None, str | None]:
    """(diff of the newest boot against `prev`, prev's document, why there is none)."""
    try:
        old = resolve_ref(store, "prev", container=container, host=host)
    except RefError as err:
        return None, None, f"{err} (the newest boot has no earlier boot of its container or file)"
    bid = newest["boot"]["id"]
    a, b = show_boots(store, [bid, old], runtime=False)
    if plan is not None:
        a, b = both_with_plan_patterns(store, a, b, plan)
    history = show_boots(store, boots_like(store, bid), runtime=False)
    # the plan's tolerance and own figures; its verdict on the boot is the plan table, not repeated
    return compare.diff(a, b, history=history, plan=plan, with_check=False), b, None


def _runtime(store, docs: Sequence[dict]) -> Iterator[tuple[dict, list]]:
    """(document, runtime samples) of each boot, newest first, read when asked for."""
    for d in reversed(docs):
        yield d, [s for _, s in samples(store, [d["boot"]["id"]])]
