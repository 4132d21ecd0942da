"""Text and Markdown rendering of diff/check results (the JSON twin is the result dict itself).

terraform-plan style: a legend, sections in cause-then-effect order (config, metrics, events),
one symbol per finding, one summary line.  Keys, values, reasons and the plan's name can be log
text: the terminal text escapes them (safe.term/cut), the Markdown renders them inert (safe.md_*).
"""

from __future__ import annotations

import math
import re
from typing import Any

from bootlog import safe
from bootlog.parse.reprs import CONFIG_ALIASES

SYMBOLS = {
    "same": "=",
    "changed": "~",
    "drift": "!",
    "violation": "✗",
    "new": "+",
    "gone": "-",
    "insufficient_history": "?",
}
LEGEND = "(legend: ~ changed  ! drift  ✗ violation  + new  - gone)"
CHECK_LEGEND = "(legend: = met  ! missed (drift)  ✗ missed (violation)  ? not known)"
_SECTIONS = (("deploy", "deploy"), ("config", "config"), ("metric", "metrics"), ("event", "events"))
LIST_MAX = 50  # figures, events, unread lines explain prints of one kind (--json has them all)


def fmt_value(v: Any, places: int | None = None) -> str:
    """The one number format of every output: 398658 -> '398,658'; 7888.4825 -> '7,888' (from
    1,000 up no decimals); 554.6896 -> '554.69'; 0.06 -> '0.06'; 0.000512 -> '0.000512' (four
    significant digits below 1); None/True as Python prints; text and lists escaped and cut to
    60 columns.  `places`: exactly that many decimals (the ticks of one plot axis share one
    format: 0.50, 0.75, 1.00)."""
    if v is None or isinstance(v, bool):
        return str(v)
    if places is not None and isinstance(v, (int, float)):
        v = round(float(v), places) + 0.0  # (+ 0.0: -0.0 prints as 0)
        return f"{v:,.{places}f}"
    if isinstance(v, int):
        return f"{v:,}"
    if isinstance(v, float):
        if not math.isfinite(v):
            return str(v)
        if v.is_integer() and abs(v) < 1e15:
            return f"{int(v):,}"
        if abs(v) >= 1000:
            return f"{v:,.0f}"
        if abs(v) >= 1:
            return f"{v:,.2f}".rstrip("0").rstrip(".")
        return f"{v:.4g}" if abs(v) >= 1e-4 else f"{v:.2e}"
    return safe.cut(v, 60, "...")


def _signed(v: Any) -> str:
    s = fmt_value(v)
    return s if s.startswith("-") else "+" + s


def _pct(f: dict) -> str:
    """The finding's % change; a move too small for two decimals keeps its sign (-1 token of
    400,700 is "-<0.01%", not "+0%")."""
    pct, delta = f["pct"], f.get("delta")
    if pct == 0 and isinstance(delta, (int, float)) and delta:
        return ("-" if delta < 0 else "+") + "<0.01%"
    return f"{_signed(pct)}%"


def _label(f: dict) -> str:
    key = safe.term(f["key"], one_line=True)
    return key if f.get("rank") is None else f"{key}[rank {f['rank']}]"


# a check's rows say whether each expectation was met (its `old` is the plan's bound, no earlier value)
CHECK_WORDS = {"same": "met", "drift": "missed", "violation": "missed", "insufficient_history": "not known"}


def _beyond(why: str, expect: str) -> str:
    """What a check row's why says besides its expectation (which the row shows already)."""
    for head in (f"plan: {expect}", f"plan expects count {expect}", f"plan expects {expect}"):
        if why.startswith(head):
            return why[len(head) :].lstrip("; ")
    return why


def check_line(f: dict, width: int = 24) -> str:
    """A check row: `= kv_cache_tokens  ≥ 400,700: 401,408 met`, `✗ enable_prefix_caching: True
    (the plan says False)` — the plan's bound is never shown as an old value with a delta."""
    sym = SYMBOLS.get(f["verdict"], "?")
    label, word = _label(f), CHECK_WORDS.get(f["verdict"], f["verdict"])
    value = "" if f.get("new") is None else fmt_value(f["new"]) + " "
    why = f.get("why") or ""
    if "expect" in f:
        text = f"{sym} {safe.pad(label, width)} {safe.term(f['expect'], one_line=True)}: {value}{word}"
        from bootlog.judge.compare import RESIDENT

        meaning, rest = why.partition("; ")[::2] if why.startswith(RESIDENT) else ("", why)
        why = "; ".join(w for w in (meaning, _beyond(rest, f["expect"])) if w)
    elif f["verdict"] == "same" or f.get("new") is None or f.get("old") == f.get("new"):
        text = f"{sym} {label}: {value}{word}"  # (a ready boot that failed serving: "ready missed")
    else:
        text = f"{sym} {label}: {value}(the plan says {fmt_value(f['old'])})"
        why = "" if why.startswith("the boot runs ") else why  # (the row says just that)
    return text + (f"  {safe.term(why, one_line=True)}" if why else "")


def finding_line(f: dict, width: int = 24, why_same: bool = False) -> str:
    if "expect" in f or (why_same and f["section"] in ("config", "deploy")):
        return check_line(f, width)
    from bootlog.judge.compare import RESIDENT

    sym = SYMBOLS.get(f["verdict"], "?")
    label = _label(f)
    why = f.get("why") or ""
    lead = ""
    if f["key"] == "kv_margin_tokens" and f["section"] == "metric" and why.startswith(RESIDENT):
        # (kv_margin_tokens leads with what it means: "full-length requests resident: 2.00 of 3
        # slots", its token counts after it; a bare -200,704 reads as the worst deploy)
        meaning, _, why = why.partition("; ")
        lead = f"{meaning}  "
    if f["section"] in ("config", "deploy"):
        text = f"{sym} {label}: {fmt_value(f['old'])} → {fmt_value(f['new'])}"
    else:
        numbers = f"{fmt_value(f['old'])} → {fmt_value(f['new'])}"
        text = f"{sym} {safe.pad(label, width)} " + (
            f"{safe.term(lead, one_line=True)}({numbers} tokens" if lead else numbers
        )
    if f.get("delta") not in (None, 0):
        extra = _signed(f["delta"])
        if f.get("pct") is not None:
            extra += f", {_pct(f)}"
        text += f", {extra})" if lead else f"  ({extra})"
    elif lead:
        text += ")"
    if why and (f["verdict"] != "same" or why_same or f["section"] == "event"):
        text += f"  {safe.term(why, one_line=True)}"
    return text


def _n(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def summary_line(result: dict) -> str:
    s = result.get("summary", {})
    n_cfg = s.get("changed_config", 0)
    insufficient = sum(f["verdict"] == "insufficient_history" for f in result.get("findings", []))
    if result.get("b") is None and "a" in result:  # a check: expectations met or missed
        return (
            f"summary: {_n(s.get('unchanged', 0), 'expectation')} met, {_n(s.get('violations', 0), 'violation')}, "
            f"{s.get('drift', 0)} drift" + (f", {insufficient} not known" if insufficient else "")
        )
    text = (
        f"summary: {s.get('drift', 0)} drift, {s.get('violations', 0)} violation"
        f"{'' if s.get('violations', 0) == 1 else 's'}, {n_cfg} config change"
        f"{'' if n_cfg == 1 else 's'}, {s.get('unchanged', 0)} unchanged"
    )
    if insufficient:
        text += f", {insufficient} without enough history"
    return text


def title(result: dict, plan_name: str | None = None, show_unknown: bool = True) -> str:
    if result.get("b") is None:
        what = f"bootlog check {result.get('a')}"
        if plan_name:
            what += f" against {safe.term(plan_name, one_line=True)}"
    else:
        what = f"bootlog diff {result.get('b')} → {result.get('a')}"  # old → new, like every row
    legend = LEGEND if result.get("b") is not None else CHECK_LEGEND
    if (
        show_unknown
        and result.get("b") is not None
        and any(f["verdict"] == "insufficient_history" for f in result.get("findings", []))
    ):
        legend = legend[:-1] + "  ? too little history)"
    return f"{what}   {legend}"


def _shown(f: dict, show_same: bool, show_unknown: bool) -> bool:
    return (show_same or f["verdict"] != "same") and (show_unknown or f["verdict"] != "insufficient_history")


def _alias_twins(findings: list[dict]) -> set[int]:
    """Indexes of config rows that repeat another under the engine's second name for the same
    setting (`max_seq_len` beside `max_model_len`, the same old and new values): one change is
    read once.  --json keeps both rows."""
    seen = {(f["key"], repr(f.get("old")), repr(f.get("new"))) for f in findings if f["section"] == "config"}
    return {
        i
        for i, f in enumerate(findings)
        if f["section"] == "config"
        and f["key"] in CONFIG_ALIASES
        and (CONFIG_ALIASES[f["key"]], repr(f.get("old")), repr(f.get("new"))) in seen
    }


def _rows(result: dict, show_same: bool, show_unknown: bool) -> list[dict]:
    findings = result.get("findings", [])
    twins = _alias_twins(findings)
    return [f for i, f in enumerate(findings) if i not in twins and _shown(f, show_same, show_unknown)]


def _hidden_note(result: dict, show_same: bool, show_unknown: bool, how: str | None) -> str:
    """What the summary adds when rows were left out (they are counted there already): how
    many, and `how` to see them (None: nothing added)."""
    hidden = sum(not _shown(f, show_same, show_unknown) for f in result.get("findings", []))
    return f" ({hidden} not shown: {how})" if hidden and how else ""


def render_text(
    result: dict,
    *,
    plan_name: str | None = None,
    show_same: bool = True,
    show_unknown: bool = True,
    hidden_how: str | None = None,
) -> str:
    """The human twin of a diff/check result.  show_same / show_unknown False: the rows that
    did not move and those without enough history to judge are left out (the summary counts
    them, and with `hidden_how` says how many and how to see them), so what changed leads."""
    lines = [title(result, plan_name, show_unknown)]
    findings = _rows(result, show_same, show_unknown)
    width = max([safe.width(_label(f)) for f in findings if f["section"] not in ("config", "deploy")] + [16])
    for section, heading in _SECTIONS:
        rows = [f for f in findings if f["section"] == section]
        if not rows:
            continue
        lines.append(heading)
        # a check's passing rows still say which bound they met
        lines.extend("  " + finding_line(f, width, why_same=result.get("b") is None) for f in rows)
    lines.append(summary_line(result) + _hidden_note(result, show_same, show_unknown, hidden_how))
    return "\n".join(lines)


# a phase that moved less than this is the line times' own jitter (they print whole seconds, the
# phases between two printed ends are differences of them), not a change worth naming
PHASE_MOVE_S = 1.0
PHASES_SHOWN = 6


def render_phases_moved(moved: list[dict], a: Any, b: Any) -> str:
    """diff's short timeline section: the phases of boot `a` (new) against `b` (old) that moved
    by PHASE_MOVE_S or more, biggest move first (timeline.moved's rows), at most PHASES_SHOWN.
    Phase names are bootlog's own words, never log text."""
    if not moved:
        return "phases: not known (a boot without line times has no timeline)"
    rows = [r for r in moved if abs(r["delta"]) >= PHASE_MOVE_S]
    if not rows:
        return f"phases: none moved by {fmt_value(PHASE_MOVE_S)} s or more"
    width = max(len(r["phase"]) for r in rows[:PHASES_SHOWN])
    lines = [f"phases (seconds, {b} → {a}, biggest move first)"]
    for r in rows[:PHASES_SHOWN]:
        # (to 1/100 s: the figures print no finer, the rest is the stamps' microseconds)
        old, new, delta = (round(float(r[k]), 2) for k in ("old", "new", "delta"))
        lines.append(f"  {r['phase']:<{width}}  {fmt_value(old)} → {fmt_value(new)}  ({_signed(delta)})")
    if len(rows) > PHASES_SHOWN:
        lines.append(f"  … {len(rows) - PHASES_SHOWN} more moved by {fmt_value(PHASE_MOVE_S)} s or more")
    return "\n".join(lines)


def _md_cell(v: Any) -> str:
    if isinstance(v, (int, float)):  # (a number is inert: -1 stays -1)
        return fmt_value(v)
    return safe.md_cell(fmt_value(v))


def render_markdown(
    result: dict,
    *,
    plan_name: str | None = None,
    show_same: bool = False,
    show_unknown: bool = True,
    hidden_how: str | None = None,
) -> str:
    """A Markdown table of the findings (for reports, PR comments, the hook's summary): no
    HTML, link, code span or cell of a key, value or reason can break out."""
    head = safe.md_text(title(result, plan_name).split("   ")[0], one_line=True, inline=True)
    shown = _rows(result, show_same, show_unknown)
    summary = summary_line(result) + _hidden_note(result, show_same, show_unknown, hidden_how)
    if not shown:  # no empty table: the summary line says what was compared
        return "\n".join([f"### {head}", "", summary])
    if result.get("b") is None:  # a check: what the plan expects and what the boot has
        lines = [
            f"### {head}",
            "",
            "| | section | expectation | rank | expected | value | result | why |",
            "|---|---|---|---|---|---|---|---|",
        ]
        for f in shown:
            expected = f.get("expect") or ("= " + fmt_value(f["old"]) if f.get("old") is not None else "")
            why = _beyond(f.get("why") or "", f["expect"]) if "expect" in f else (f.get("why") or "")
            lines.append(
                "| {} | {} | {} | {} | {} | {} | {} | {} |".format(
                    SYMBOLS.get(f["verdict"], "?"),
                    f["section"],
                    safe.md_cell(f["key"], code=True),
                    "" if f.get("rank") is None else f["rank"],
                    safe.md_cell(expected),
                    _md_cell(f["new"]),
                    CHECK_WORDS.get(f["verdict"], f["verdict"]),
                    safe.md_cell(why),
                )
            )
        return "\n".join([*lines, "", summary])
    lines = [
        f"### {head}",
        "",
        "| | section | figure | rank | old | new | Δ | % | why |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for f in shown:
        lines.append(
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} |".format(
                SYMBOLS.get(f["verdict"], "?"),
                f["section"],
                safe.md_cell(f["key"], code=True),
                "" if f.get("rank") is None else f["rank"],
                _md_cell(f["old"]),
                _md_cell(f["new"]),
                "" if f.get("delta") is None else _signed(f["delta"]),
                "" if f.get("pct") is None else _pct(f),
                safe.md_cell(f.get("why") or ""),
            )
        )
    lines += ["", summary]
    return "\n".join(lines)


def _more(n: int, what: str) -> list[str]:
    return [f"  … and {n - LIST_MAX:,} more {what} (--json lists them all)"] if n > LIST_MAX else []


_NUMBER = re.compile(r"(?<![\w.])-?\d[\d,]*(?:\.\d+)?(?:[eE][-+]?\d+)?")


def figure_span(text: str, value: Any) -> tuple[int, int] | None:
    """Where in `text` (a log line, term()-safe) the figure `value` was printed: the first
    number that reads as it at the precision it was printed with ("7,762" for 7762, "17.77"
    for 17.77); None when no number does (a figure bootlog converted or derived)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return None
    for m in _NUMBER.finditer(text):
        printed = m.group().replace(",", "")
        try:
            n = float(printed)
        except ValueError:
            continue
        places = len(re.split("[eE]", printed.partition(".")[2])[0])
        # the value at the printed precision, and nothing finer ("05" of a date is no 5.25)
        if math.isclose(n, value, rel_tol=1e-9, abs_tol=1e-12) or (
            round(value, places) == value and math.isclose(round(value, places), n, rel_tol=1e-9)
        ):
            return m.span()
    return None


def render_explain(report: dict, width: int | None = None) -> str:
    """Text twin of an explain report: where every figure came from, what went unread; at most
    LIST_MAX boots, figures and events of a boot, and unread lines, then how many more.  width:
    every line fits it (None: nothing is cut); a figure's own line is cut around the number it
    gave, never through it."""
    t = safe.term
    fit = safe.fit
    out = [fit(f"bootlog explain {t(report.get('source'), one_line=True)}", width)]
    boots = report.get("boots", [])
    for b in boots[:LIST_MAX]:
        head = f"boot {b['id']}" if b.get("id") is not None else "boot"
        out.append(
            fit(f"{head}  lines {b.get('first_line')}-{b.get('last_line')}  {t(b.get('status') or '')}".rstrip(), width)
        )
        figures, events = b.get("figures", []), b.get("events", [])
        for f in figures[:LIST_MAX]:
            rank = "" if f.get("rank") is None else f"[rank {f['rank']}]"
            out.append(
                fit(
                    f"  {f['name']}{rank} = {fmt_value(f['value'])} {f.get('unit') or ''}".rstrip()
                    + f"   line {f.get('line')}  ← {f.get('pattern') or '?'}",
                    width,
                )
            )
            if f.get("text"):
                # cut around the number the figure came from; a figure bootlog derived comes from
                # no part of the line (cut it as any line); one where no number reads as the figure
                # (converted: MiB to GiB) is shown whole, nothing of it cut
                text = t(f["text"], one_line=True)
                span = figure_span(text, f.get("value"))
                cols = None if width is None or (span is None and f.get("pattern") != "derived") else max(width - 6, 1)
                out.append("      " + fit(text, cols, span))
        out += [fit(ln, width) for ln in _more(len(figures), "figures")]
        for e in events[:LIST_MAX]:
            rank = "" if e.get("rank") is None else f"[rank {e['rank']}]"
            out.append(fit(f"  event {t(e['kind'], one_line=True)}{rank}   line {e.get('line')}", width))
        out += [fit(ln, width) for ln in _more(len(events), "events")]
    out += [ln.strip() for ln in _more(len(boots), "boots")]
    unmatched = report.get("unmatched", [])
    if report.get("raw") is False:
        out.append(
            fit(
                "unread: not known for a stored boot (its raw lines are not stored); "
                "run `bootlog explain LOGFILE` to see lines no pattern read",
                width,
            )
        )
    elif unmatched:
        total = len(unmatched) + (report.get("unmatched_more") or 0)
        out.append(fit(f"unread: {total:,} line(s) look like catalogue lines but no pattern matched", width))
        for u in unmatched[:LIST_MAX]:
            out.append(
                fit(f"  line {u['line']} [{t(u['marker'], one_line=True)}]: {t(u['text'], one_line=True)}", width)
            )
        if total > LIST_MAX:
            out.append(
                fit(
                    f"  … and {total - LIST_MAX:,} more unread lines (--json lists the first {len(unmatched):,})", width
                )
            )
    else:
        out.append(fit("unread: none (every line that looks like a catalogue line was read)", width))
    return "\n".join(out)
