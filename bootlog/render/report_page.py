"""`bootlog report`: one self-contained HTML page that answers "is the latest deploy good, and
what changed" (issue 25), top to bottom:

1. the latest boot: one verdict word (OK / DRIFT / VIOLATION / FAILED, as the hook says it), its
   key figures (KEY_FIGURES, plan or no plan), with --plan each expectation met or missed (compare.check over reread.with_plan_patterns), its
   diff against the boot before (compare.diff; the rows that moved) and the phases that moved,
   and its timeline as a bar;
2. every boot's timeline in one chart (plot_timeline);
3. the key figures across boots (plot), budgets and plan bounds drawn in, and under a chart the
   boots whose points a plan bound fails;
4. runtime series of the newest boots that have statistics lines (plot_runtime);
5. the history table (with --plan, each boot's verdict), then the latest boot's events.

Times are on the log's own clock where it has one (logclock), and the page says which.  Layout:
the page fits a 1,400 px window; a table wider than its box scrolls inside the box, never the
page; printed, nothing scrolls and colours are kept.  No script, no network: CSS inline, images
as data URIs.  Every text from a log goes through safe.html.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, Iterable, Sequence

from bootlog import safe
from bootlog.errors import BootlogError
from bootlog.figures import FIGURES
from bootlog.render.logclock import Clock
from bootlog.render.render import SYMBOLS, fmt_value

KEY_PLOTS: tuple[str, ...] = tuple(f.name for f in FIGURES if f.plot)
# the history table: what a deploy is judged by first (status, plan, faults), then the figures,
# the long version string last so it is the one that scrolls
COLUMNS: tuple[str, ...] = (
    "id",
    "status",
    "faults",
    "started_at",
    "max_model_len",
    "max_num_seqs",
    "kv_cache_tokens",
    "max_concurrency",
    "graph_capture_gib",
    "torch_compile_s",
    "boot_to_ready_s",
    "vllm_version",
)
# the latest boot's figures on its card, plan or no plan: its shape, then what it holds and took
KEY_FIGURES: tuple[str, ...] = (
    "max_model_len",
    "max_num_seqs",
    "kv_cache_tokens",
    "max_concurrency",
    "graph_capture_gib",
    "torch_compile_s",
    "boot_to_ready_s",
    "faults",
)
RUNTIME_BOOTS = 3  # newest boots with statistics lines that get a runtime chart
RUNTIME_MIN = 5  # stats lines a boot needs for one: fewer (a warm-up request or two) draw no series
RESULT = {
    "same": ("met", "✓"),
    "violation": ("missed (hard)", "✗"),
    "drift": ("missed", "✗"),
    "insufficient_history": ("not known", "?"),
}

h = safe.html


def cell(v: Any) -> str:
    """A figure as the page shows it (render.fmt_value; ranks that disagree as a/b), escaped."""
    from bootlog.render.report import PerRank

    if v is None:
        return ""
    if isinstance(v, PerRank):
        return "/".join(cell(x) for x in v)
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return h(fmt_value(v))
    return h(v)


def _th(name: str) -> str:
    # long figure names may break after their underscores: a header is not its column's width
    return h(name).replace("_", "_<wbr>")


def _img(png: bytes, alt: str, cls: str = "") -> str:
    b64 = base64.b64encode(png).decode("ascii")
    klass = f' class="{cls}"' if cls else ""
    return f'<img{klass} alt="{h(alt)}" src="data:image/png;base64,{b64}">'


def _table(head: Sequence[str], rows: Sequence[Sequence[str]], cls: str) -> str:
    """A table in its own scroll box (cells are HTML already)."""
    ths = "".join(f"<th>{c}</th>" for c in head)
    body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in r) + "</tr>" for r in rows)
    return f'<div class="scroll"><table class="{cls}"><thead><tr>{ths}</tr></thead><tbody>{body}</tbody></table></div>'


def _key(f: dict) -> str:
    key = h(f["key"])
    return key if f.get("rank") is None else f"{key}[rank {h(f['rank'])}]"


# ---- the latest boot ------------------------------------------------------------------------


def checks_html(result: dict, plan_name: str) -> str:
    """Each expectation of the plan: the missed and not-known ones as a table (what to act on),
    then every met one with its value and bound in a compact list."""
    order = {"violation": 0, "drift": 1, "insufficient_history": 2}
    findings = sorted(result.get("findings", []), key=lambda f: order.get(f["verdict"], 3))
    open_ = [f for f in findings if f["verdict"] != "same"]
    met = [f for f in findings if f["verdict"] == "same"]
    unknown = sum(f["verdict"] == "insufficient_history" for f in findings)
    missed = len(open_) - unknown
    head = (
        f"<h3>Plan {h(plan_name)}: {len(met)} of {len(findings)} expectations met"
        f"{f', {missed} missed' if missed else ''}{f', {unknown} not known' if unknown else ''}</h3>"
    )
    out = [head]
    if open_:
        rows = []
        for f in open_:
            word, mark = RESULT.get(f["verdict"], (f["verdict"], SYMBOLS.get(f["verdict"], "?")))
            rows.append(
                (
                    f'<span class="r-{h(f["verdict"])}">{mark} {h(word)}</span>',
                    h(f["section"]),
                    _key(f),
                    cell(f.get("new")),
                    h(f.get("why") or ""),
                )
            )
        out.append(_table(("result", "section", "expectation", "value", "bound / why"), rows, "verdicts"))
    if met:
        items = "".join(
            f'<li><span class="r-same">✓</span> {_key(f)} <b>{cell(f.get("new"))}</b>'
            f"{' <span class=bound>' + h(_bound(f)) + '</span>' if _bound(f) else ''}</li>"
            for f in met
        )
        out.append(f'<ul class="met">{items}</ul>')
    return "\n".join(out)


def _bound(f: dict) -> str:
    if f.get("expect"):
        return str(f["expect"])
    why = str(f.get("why") or "")
    return why[len("plan: ") :] if why.startswith("plan: ") else why


def diff_html(result: dict, prev: dict, clock: Clock, moved: list[dict]) -> str:
    """The latest boot against the one before: the findings that are not `same` (the page's
    question is what changed), then the summary and the phases that moved."""
    from bootlog.render.render import PHASE_MOVE_S, summary_line

    b = prev["boot"]
    when = clock.text(b.get("started_at"), "%m-%d %H:%M")
    out = [f"<h3>Latest boot against the one before: #{h(b['id'])}{' of ' + h(when) if when else ''}</h3>"]
    shown = [f for f in result.get("findings", []) if f["verdict"] != "same"]
    if shown:
        rows = [
            (
                f'<span class="r-{h(f["verdict"])}">{h(SYMBOLS.get(f["verdict"], "?"))} {h(f["verdict"])}</span>',
                h(f["section"]),
                _key(f),
                cell(f.get("old")),
                cell(f.get("new")),
                "" if f.get("delta") in (None, 0) else cell(f["delta"]),
                "" if f.get("pct") is None else h(f"{fmt_value(f['pct'])}%"),
                h(f.get("why") or ""),
            )
            for f in shown
        ]
        out.append(_table(("verdict", "section", "key", "before", "now", "Δ", "%", "why"), rows, "diff"))
    out.append(f'<p class="summary">{h(summary_line(result))} (the unchanged are not listed)</p>')
    phases = [r for r in moved if abs(r["delta"]) >= PHASE_MOVE_S]
    if phases:
        out.append(
            _table(
                ("phase", "before [s]", "now [s]", "Δ [s]"),
                [
                    (
                        _swatch(r["phase"]) + h(r["phase"]),
                        *(h(fmt_value(round(float(r[k]), 2))) for k in ("old", "new", "delta")),
                    )
                    for r in phases
                ],
                "phases",
            )
        )
    elif moved:
        out.append(f"<p>No phase of the boot moved by {fmt_value(PHASE_MOVE_S)} s or more.</p>")
    return "\n".join(out)


def _swatch(phase: str) -> str:
    from bootlog.render.plot_timeline import PHASE_COLORS

    return f'<span class="sw" style="background:{PHASE_COLORS.get(phase, "#888")}"></span>'


def timeline_bar_html(tl: list[dict]) -> str:
    """The boot's phases as one HTML bar (the chart's colours) and a legend with the seconds."""
    from bootlog.render.plot_timeline import HATCHES, PHASE_COLORS
    from bootlog.judge.timeline import phase_totals

    total = sum(p["s"] for p in tl)
    if not tl or total <= 0:
        return "<p>No timeline: the log gave no line times.</p>"
    segs = []
    for p in tl:
        pct = 100.0 * p["s"] / total
        bg = PHASE_COLORS.get(p["phase"], "#888")
        if p["phase"] in HATCHES:
            bg = f"repeating-linear-gradient(45deg,{bg} 0 4px,#fff 4px 6px)"
        segs.append(
            f'<span style="width:{pct:.3f}%;background:{bg}" '
            f'title="{h(p["phase"])} {h(fmt_value(round(p["s"], 2)))} s"></span>'
        )
    legend = "".join(
        f"<li>{_swatch(name)}{h(name)} {h(fmt_value(round(s, 2)))} s</li>" for name, s in phase_totals(tl).items()
    )
    return (
        f'<div class="tbar">{"".join(segs)}</div>'
        f'<ul class="legend">{legend}<li><b>total {h(fmt_value(round(total, 2)))} s</b></li></ul>'
    )


def key_figures_html(doc: dict, check: dict | None = None) -> str:
    """The boot's KEY_FIGURES it has, each as a tile: name over value and unit; a tile whose
    figure the plan's check found missed is marked, what the plan expects in its title."""
    from bootlog.render.report import figure

    units = {m["name"]: m.get("unit") for m in doc.get("metrics", [])}
    missed = {
        str(f["key"]): f
        for f in (check or {}).get("findings", [])
        if f["verdict"] in ("violation", "drift") and f["section"] != "event"
    }
    tiles = []
    for name in KEY_FIGURES:
        v = figure(doc, name)
        if v is None or v == "":
            continue
        unit = units.get(name)
        gap = "" if unit == "x" else " "  # (2x, as vLLM prints a concurrency)
        miss = missed.get(name)
        attrs = f' class="miss" title="misses the plan: {h(miss.get("why") or "")}"' if miss else ""
        tiles.append(
            f"<div{attrs}><dt>{_th(name)}{' ✗' if miss else ''}</dt>"
            f"<dd>{cell(v)}{gap + '<small>' + h(unit) + '</small>' if unit else ''}</dd></div>"
        )
    return f'<dl class="keyfigs">{"".join(tiles)}</dl>' if tiles else ""


def latest_html(
    doc: dict,
    clock: Clock,
    tl: list[dict],
    *,
    check: dict | None,
    plan_name: str | None,
    diff: dict | None,
    prev: dict | None,
    moved: list[dict],
    why_no_diff: str | None,
) -> str:
    from bootlog.judge.verdict import boot_problem, judge

    b = doc["boot"]
    # (the hook's one rule: a failed boot, one whose engine died serving or that printed state
    # faults is a failed deploy whatever was compared)
    verdict = judge(doc, results=[("plan", check), ("diff", diff)])
    word = verdict.word
    facts = [
        ("status", b.get("status") + (f" ({b['failure']})" if b.get("failure") else "")),
        ("version", b.get("vllm_version")),
        ("model", b.get("model")),
        ("container", b.get("container")),
        ("host", b.get("host")),
        ("started", clock.text(b.get("started_at"))),
        ("ready", clock.text(b.get("ready_at"))),
        ("root cause", b.get("failure_message")),
        ("source", b.get("source")),
    ]
    dl = "".join(f"<dt>{h(k)}</dt><dd>{h(v)}</dd>" for k, v in facts if v)
    own = boot_problem(doc)
    why = [own[1]] if own is not None else []
    if check is not None:
        s = check["summary"]
        missed = s.get("violations", 0) + s.get("drift", 0)
        why.append(
            f"plan {plan_name}: "
            + (
                f"{missed} expectation{'s' if missed != 1 else ''} missed"
                if missed
                else "every expectation it could judge met"
            )
        )
    if diff is not None:
        s = diff["summary"]
        why.append(
            f"against #{prev['boot']['id']}: {s.get('drift', 0)} drift, {s.get('changed_config', 0)} config change"
            f"{'' if s.get('changed_config', 0) == 1 else 's'}"
        )
    parts = [
        f'<section class="latest v-{word.lower()}"><h2>Latest boot #{h(b["id"])}: '
        f'<span class="verdict">{h(word)}</span></h2>',
        f'<p class="why">{h(" · ".join(why)) if why else "no plan given (--plan) and no boot before it to compare with"}</p>',
        f'<dl class="facts">{dl}</dl>',
        key_figures_html(doc, check),
    ]
    if check is not None:
        parts.append(checks_html(check, plan_name or "plan"))
    if diff is not None and prev is not None:
        parts.append(diff_html(diff, prev, clock, moved))
    elif why_no_diff:
        parts.append(f"<p>No diff: {h(why_no_diff)}</p>")
    parts += [f"<h3>Timeline of boot #{h(b['id'])}</h3>", timeline_bar_html(tl), "</section>"]
    return "\n".join(parts)


# ---- history, runtime, events ---------------------------------------------------------------


def history_html(
    rows: Sequence[dict],
    columns: Sequence[str],
    changes: Sequence[set[str]],
    clock: Clock,
    plan_cells: Sequence[str] | None = None,
) -> str:
    """One row per boot; a cell that moved since the boot before is marked (*, highlighted)."""
    head = [_th("started" if c == "started_at" else c) for c in columns]
    if plan_cells is not None:
        head.insert(2, "plan")
    body = []
    for i, (r, ch) in enumerate(zip(rows, changes)):
        cls = ' class="failed"' if str(r.get("status")).startswith(("failed", "ready (")) else ""
        tds = []
        for c in columns:
            text = h(clock.text(r[c], "%m-%d %H:%M")) if c == "started_at" else cell(r[c])
            kind = "status" if c == "status" else "" if c in ("vllm_version", "started_at") else "num"
            if c in ch and c != "started_at":
                tds.append(f'<td class="changed {kind}" title="differs from the boot before">{text}*</td>')
            else:
                tds.append(f'<td class="{kind}">{text}</td>' if kind else f"<td>{text}</td>")
        if plan_cells is not None:
            tds.insert(2, f"<td>{plan_cells[i]}</td>")
        body.append(f"<tr{cls}>{''.join(tds)}</tr>")
    return (
        f'<div class="scroll"><table class="history"><thead><tr>{"".join(f"<th>{c}</th>" for c in head)}'
        f"</tr></thead><tbody>{''.join(body)}</tbody></table></div>"
    )


def plan_cell(result: dict) -> str:
    """A boot's verdict against the plan in one history cell (the keys missed in its title)."""
    missed = [f for f in result.get("findings", []) if f["verdict"] in ("violation", "drift")]
    unknown = [f for f in result.get("findings", []) if f["verdict"] == "insufficient_history"]
    if missed:
        names = ", ".join(sorted({str(f["key"]) for f in missed}))
        hard = any(f["verdict"] == "violation" for f in missed)
        return f'<span class="r-{"violation" if hard else "drift"}" title="missed: {h(names)}">✗ {len(missed)} missed</span>'
    if unknown:
        return f'<span class="r-insufficient_history" title="not known: {h(", ".join(str(f["key"]) for f in unknown))}">? {len(unknown)} not known</span>'
    return '<span class="r-same">✓ met</span>'


def runtime_html(doc: dict) -> str:
    """The last boot's runtime statistics: count of stats lines, last and max of each series."""
    rt = doc.get("runtime") or {}
    last, peak = rt.get("last") or {}, rt.get("max") or {}
    names = list(dict.fromkeys([*last, *peak]))
    if not names:
        return f"<p>No runtime statistics lines in boot #{h(doc['boot']['id'])}.</p>"
    rows = [(h(n), cell(last.get(n)), cell(peak.get(n))) for n in names]
    return f"<p>Boot #{h(doc['boot']['id'])}: {rt.get('stats_lines', 0)} statistics lines.</p>" + _table(
        ("series", "last", "max"), rows, "runtime"
    )


def events_html(doc: dict, clock: Clock, limit: int = 20) -> str:
    evs = doc.get("events") or []
    if not evs:
        return f"<p>No events in boot #{h(doc['boot']['id'])}.</p>"
    counts: dict[str, int] = {}
    for e in evs:
        counts[e["kind"]] = counts.get(e["kind"], 0) + 1
    summary = ", ".join(f"{k} × {n}" for k, n in counts.items())
    items = "".join(
        f"<li>line {h(e.get('line'))} {h(clock.text(e.get('ts'), '%m-%d %H:%M:%S'))} {h(e['kind'])}"
        f"{' rank ' + h(e['rank']) if e.get('rank') is not None else ''}: "
        f"<code>{h((e.get('message') or '')[:300])}</code></li>"
        for e in evs[:limit]
    )
    more = f"<p>… and {len(evs) - limit} more.</p>" if len(evs) > limit else ""
    return f'<p>Events: {h(summary)}</p><ul class="events">{items}</ul>{more}'


_CSS = """
*{box-sizing:border-box}
body{font-family:system-ui,sans-serif;color:#222;margin:0 auto;padding:0 16px 2em;max-width:1380px;
 overflow-wrap:anywhere;line-height:1.35}
h1{font-size:1.4em;margin:.8em 0 .2em}h2{font-size:1.15em;margin-top:1.5em;border-bottom:1px solid #ddd}
h3{font-size:1em;margin:1.1em 0 .4em}
.meta,.note{color:#666;font-size:.85em}
.scroll{overflow-x:auto;max-width:100%;margin:.3em 0}
table{border-collapse:collapse;font-size:.82em}td,th{border:1px solid #ddd;padding:2px 6px;vertical-align:top}
th{background:#f4f4f4;text-align:left;font-weight:600}td.num{text-align:right;white-space:nowrap}
table.history td{white-space:nowrap}table.history td.status{white-space:normal;min-width:7em}
th{overflow-wrap:normal}
td.changed{background:#fff3c4;font-weight:600}tr.failed td{color:#b00020}
table.diff td:last-child,table.verdicts td:last-child{min-width:18em}
img{max-width:100%;height:auto;border:1px solid #eee;margin:.4em 0}
.plots img{display:block}.cap{margin:0 0 .8em;font-size:.85em;color:#c62828}
.latest{border:2px solid #ccc;border-radius:6px;padding:.2em 1em 1em;margin-top:1em}
.latest h2{border:0;margin-top:.6em}
.v-ok{border-color:#2e7d32}.v-drift{border-color:#ef8f00}.v-violation,.v-failed{border-color:#c62828}
.verdict{padding:0 .4em;border-radius:4px;color:#fff;background:#2e7d32}
.v-drift .verdict{background:#ef8f00}.v-violation .verdict,.v-failed .verdict{background:#c62828}
.why{margin:.2em 0 .6em;color:#444}
dl.facts{display:grid;grid-template-columns:repeat(3,max-content minmax(0,1fr));gap:.1em 1em;margin:.4em 0;
 font-size:.9em}
ul.met{columns:3 24em;font-size:.82em;padding-left:1.2em;margin:.3em 0}ul.met li{break-inside:avoid}
.bound{color:#666}
dl.facts dt{color:#666}dl.facts dd{margin:0}
dl.keyfigs{display:flex;flex-wrap:wrap;gap:.4em;margin:.6em 0}
dl.keyfigs div{border:1px solid #ddd;border-radius:4px;padding:.2em .7em;background:#fafafa}
dl.keyfigs dt{color:#666;font-size:.78em}dl.keyfigs dd{margin:0;font-size:1.15em;font-weight:600;white-space:nowrap}
dl.keyfigs small{font-weight:normal;color:#666}
dl.keyfigs div.miss{border-color:#c62828;background:#fdecea}dl.keyfigs div.miss dt{color:#c62828;font-weight:600}
table.diff td:nth-child(-n+3),table.verdicts td:nth-child(-n+3){white-space:nowrap}
table.diff td:nth-child(4),table.diff td:nth-child(5),table.verdicts td:nth-child(4){min-width:9em}
.r-violation,.r-drift{color:#c62828;font-weight:600}.r-same{color:#2e7d32}
.r-insufficient_history{color:#8a6d00}.r-changed{color:#555}
.tbar{display:flex;height:22px;border:1px solid #999;margin:.4em 0;-webkit-print-color-adjust:exact;
 print-color-adjust:exact}
.tbar span{display:block;height:100%}
ul.legend{list-style:none;padding:0;margin:.2em 0;display:flex;flex-wrap:wrap;gap:.2em 1.2em;font-size:.85em}
.sw{display:inline-block;width:.9em;height:.9em;margin-right:.35em;vertical-align:-.1em;border:1px solid #999;
 -webkit-print-color-adjust:exact;print-color-adjust:exact}
ul.events{font-size:.85em}code{font-size:.95em}
@page{size:A4 landscape;margin:12mm}
@media print{
 body{max-width:none;padding:0;font-size:10pt}
 .scroll{overflow:visible}
 table{font-size:8pt}table.history td{white-space:normal}
 img,.latest,table,tr{break-inside:avoid}
 h2,h3{break-after:avoid}
}
"""


def page(*, title: str, meta: str, sections: Sequence[str], notes: Sequence[str]) -> str:
    """The document: inline CSS, no script, nothing fetched."""
    parts = [
        f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
        f'<meta name="viewport" content="width=device-width, initial-scale=1"><title>{h(title)}</title>',
        f"<style>{_CSS}</style></head><body><h1>{h(title)}</h1>",
        f'<p class="meta">{h(meta)}</p>',
        *sections,
        *(f'<p class="note">{h(n)}</p>' for n in notes),
        "</body></html>",
    ]
    return "\n".join(parts)


# ---- the whole page -------------------------------------------------------------------------


@dataclass
class PageData:
    """What the page shows, read and judged before anything is drawn (run.page.gather)."""

    docs: Sequence[dict]  # the boots shown, oldest first
    columns: Sequence[str]
    rows: Sequence[dict]
    changes: Sequence[set[str]]
    newest: dict  # the newest boot's document, with its runtime summary
    clock: Clock
    timelines: dict[int, list[dict]]  # boot id -> its phases
    checks: list[dict] | None  # compare.check of each boot shown against the plan
    diff: dict | None  # the newest boot against the one before it
    prev: dict | None
    why_no_diff: str | None
    moved: list[dict]  # the phases that moved in that diff
    # (boot document, its runtime samples) of the boots shown, newest first; read one by one as
    # the page draws them (it stops after RUNTIME_BOOTS charts: the samples are most of the reading)
    runtime: Iterable[tuple[dict, list]] = ()


def report_html(
    data: PageData,
    *,
    container: str | None = None,
    plan: Any = None,
    plan_name: str | None = None,
    title: str | None = None,
) -> str:
    """The report page of `data`."""
    newest, clock, tls, checks = data.newest, data.clock, data.timelines, data.checks
    notes: list[str] = []
    sections = [
        latest_html(
            newest,
            clock,
            tls[newest["boot"]["id"]],
            check=checks[-1] if checks else None,
            plan_name=plan_name,
            diff=data.diff,
            prev=data.prev,
            moved=data.moved,
            why_no_diff=data.why_no_diff,
        )
    ]
    sections += _charts(data.docs, tls, clock, plan, data.runtime, notes)
    sections.append("<h2>History</h2>")
    sections.append(
        history_html(
            data.rows, data.columns, data.changes, clock, [plan_cell(c) for c in checks] if checks is not None else None
        )
    )
    sections += [
        f"<h2>Runtime statistics of boot #{h(newest['boot']['id'])}</h2>",
        runtime_html(newest),
        f"<h2>Events of boot #{h(newest['boot']['id'])}</h2>",
        events_html(newest, clock),
    ]
    ctrs = {d["boot"].get("container") for d in data.docs}
    one = container or (next(iter(ctrs)) if len(ctrs) == 1 and None not in ctrs else None)
    where = f" — {one}" if one else ""
    meta = (
        f"{len(data.rows)} boot{'s' if len(data.rows) != 1 else ''}, newest last · {clock.says}"
        + (f" · plan {plan_name}" if plan_name else "")
        + f" · generated {datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC by bootlog"
    )
    return page(title=title or f"bootlog report{where}", meta=meta, sections=sections, notes=notes)


def _charts(
    docs: Sequence[dict],
    tls: dict[int, list[dict]],
    clock: Clock,
    plan,
    runtime: Iterable[tuple[dict, list]],
    notes: list[str],
) -> list[str]:
    """The timeline chart, the key figures, the runtime series (matplotlib: left out, said why,
    when it is not installed)."""
    from bootlog.render import plot

    out: list[str] = []
    try:
        from bootlog.render.plot_runtime import runtime_png
        from bootlog.render.plot_timeline import timeline_png

        out += [
            "<h2>Where each boot's time went</h2>",
            _img(timeline_png(docs, tls, clock=clock), "boot timelines", "timeline"),
        ]
        figs = [
            _img(plot.render_png(docs, name, clock=clock, plan=plan), name) + _misses_caption(docs, name, plan)
            for name in KEY_PLOTS
            if any(m["name"] == name for d in docs for m in d.get("metrics", []))
        ]
        if figs:
            out += ["<h2>Key figures across boots</h2>", f'<div class="plots">{"".join(figs)}</div>']
        images = _runtime_images(runtime, clock, runtime_png)
        out += [
            "<h2>Runtime of the newest boots that served</h2>",
            *(images or ["<p>No boot shown printed statistics lines.</p>"]),
        ]
    except BootlogError as err:
        notes.append(f"Plots left out: {err}")
    return out


def _misses_caption(docs: Sequence[dict], name: str, plan) -> str:
    """Under a chart: the boots whose points the plan's bound fails (the chart rings them)."""
    from bootlog.render import plot

    missed = plot.misses(docs, name, plot.series(docs, name), plan)
    if not missed:
        return ""
    ids = list(dict.fromkeys(f"#{docs[i]['boot']['id']}" for i, _ in missed))
    ex = plan.metrics.get(name) or plan.boot_metrics.get(name)
    bound = " and ".join(
        b.label[len("plan: ") :] for b in plot.budgets(docs, name, plan) if b.label.startswith("plan: ")
    )
    return (
        f'<p class="cap">{len(ids)} boot{"s" if len(ids) != 1 else ""} miss{"" if len(ids) != 1 else "es"} '
        f"the plan's {h(ex.name)} {h(bound)} (ringed): {h(', '.join(ids))}</p>"
    )


def _runtime_images(runtime: Iterable[tuple[dict, list]], clock: Clock, runtime_png) -> list[str]:
    out: list[str] = []
    boots = iter(runtime)
    while len(out) < RUNTIME_BOOTS:  # (asked before the next boot's samples are read)
        got = next(boots, None)
        if got is None:
            break
        d, rows = got
        if len(rows) < RUNTIME_MIN:
            continue
        png = runtime_png(d, rows, clock=clock)
        if png is not None:
            out.append(_img(png, f"runtime of boot #{d['boot']['id']}", "runtime"))
    return out
