"""Explain where every figure came from, and say what could not be read.

For a log file the whole pipeline runs in memory over every line, so each figure is shown with
the line that produced it and the catalogue entry (Metric.pattern) that read it; then every line
that looks like a catalogue line nothing read is listed — a new vLLM wording shows up here
instead of vanishing.  "Looks like" comes from the catalogue itself: a line holding a quantity
and two of the distinctive words of an entry's literal, or a failure word, that no pattern
matched.  For a stored boot (REF) the stored figures and their pattern
column are shown.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Iterable, Iterator

# words too common in vLLM's lines to say which fact a line is about
_STOP = frozenset(
    """a an and the of for to in on at by is are was with from as after before took takes
time total size memory engine tokens seconds secs using use available per request requests vllm
version server api this that gpu info""".split()
)
# failure words: reported whenever nothing read them, quantity or not
FAILURE_MARKERS = (
    "out of memory",
    "outofmemoryerror",
    "hiperroroutofmemory",
    "resource_exhausted",
    "[gdn_hip] error",
    "memory access fault",
    "illegal memory access",
    "unspecified launch failure",
    "valueerror",
    "initialization failed",
)
# advice vLLM prints next to the real lines: marker words, but no fact about this boot
HINTS = (
    "if you are running out of memory",
    "this typically happens",
    "consider decreasing",
    "may cause accuracy issues",
    "it/s]",
    "s/it]",
)  # (and progress bars)
_QUANTITY = re.compile(r"\d(?:[\d,]*\d)?(?:\.\d+)?\s*(?:GiB|GB|MiB|MB|tokens|seconds|secs|s\b|x\b|blocks|%)")
_WORD = re.compile(r"[a-z][a-z0-9_.]*[a-z0-9]|[a-z]")
UNMATCHED_MAX = 200  # unread lines listed; more are counted


def markers() -> list[tuple[frozenset[str], str]]:
    """(the distinctive words of a catalogue literal, the literal) per catalogue literal."""
    from bootlog.parse import patterns

    out = []
    for lit in patterns.LITERALS:
        words = frozenset(w for w in _WORD.findall(lit.lower()) if w not in _STOP)
        if words:
            out.append((words, lit.strip()))
    return out


def _marker_of(text: str, marks: list[tuple[frozenset[str], str]]) -> str | None:
    low = text.lower()
    if any(h in low for h in HINTS):
        return None
    for m in FAILURE_MARKERS:
        if m in low:
            return m
    if not _QUANTITY.search(text):
        return None
    words = set(_WORD.findall(low))
    best = max(
        ((len(want & words), len(want & words) / len(want), lit) for want, lit in marks if len(want & words) >= 2),
        default=None,
    )
    return best[2] if best else None


def _kept(records: Iterable[Any], recs: dict[int, Any]) -> Iterator[Any]:
    """Pass records through while keeping each line's (last) record: explain needs them afterwards."""
    for rec in records:
        recs[rec.lineno] = rec
        yield rec


def _span(lines: Any) -> int:
    """How many lines a traceback event covers (detail "lines" is a list or a count)."""
    if isinstance(lines, list):
        return len(lines)
    return int(lines) if isinstance(lines, (int, float)) else 0


def _figure_rows(metrics: Iterable[Any], recs: dict[int, Any]) -> list[dict]:
    rows = []
    for m in metrics:
        get = m.get if isinstance(m, dict) else (lambda k, _m=m: getattr(_m, k, None))
        rec = recs.get(get("line"))
        rows.append(
            {
                "name": get("name"),
                "value": get("value"),
                "unit": get("unit"),
                "rank": get("rank"),
                "line": get("line"),
                "pattern": get("pattern"),
                "text": rec.text if rec is not None else None,
            }
        )
    return rows


def explain_log(path: str | Path, plan: Any = None) -> dict:
    """Run the pipeline in memory over a log file; figures with their lines, unread lines.
    With a plan, its user patterns read the lines too (as `ingest --plan` would)."""
    from bootlog.read.envelope import read
    from bootlog.parse.parse import parse
    from bootlog.read.sources import open_source

    src = open_source(str(path))
    recs: dict[int, Any] = {}
    boots = parse(_kept(read(src.chunks()), recs))
    if plan is not None and getattr(plan, "patterns", None):
        from bootlog.parse.userpatterns import apply_user_patterns
        from bootlog.records import Metric

        for hit in apply_user_patterns(plan, (recs[n] for n in sorted(recs))):
            boot = next((b for b in reversed(boots) if b.first_line <= (hit.line or 0) <= b.last_line), None)
            if boot is not None:
                if isinstance(hit, Metric):
                    boot.metrics.append(hit)
                else:
                    boot.events.append(hit)
    used: set[int] = set()
    messages: set[str] = set()
    out_boots = []
    for i, b in enumerate(boots, 1):
        used.update(m.line for m in b.metrics if m.line is not None)
        for e in b.events:
            # a traceback event covers its lines; re-printed copies of the message are read too
            used.update(range(e.line, e.line + max(1, _span(e.detail.get("lines")))))
            if e.message:
                messages.add(e.message.strip())
        used.update(s.line for s in b.samples)
        out_boots.append(
            {
                "id": None,
                "index": i,
                "first_line": b.first_line,
                "last_line": b.last_line,
                "status": b.status,
                "failure": b.failure,
                "figures": _figure_rows(b.metrics, recs),
                "events": [
                    {"kind": e.kind, "rank": e.rank, "line": e.line, "message": e.message[:200]} for e in b.events
                ],
            }
        )
    unmatched = unmatched_lines(recs, used, messages)
    return {
        "source": getattr(src, "name", str(path)),
        "raw": True,
        "boots": out_boots,
        "unmatched": unmatched[:UNMATCHED_MAX],
        "unmatched_more": max(0, len(unmatched) - UNMATCHED_MAX),
    }


def unmatched_lines(recs: dict[int, Any], used: set[int], messages: set[str]) -> list[dict]:
    """Lines that look like a catalogue line (see the module doc) that nothing read."""
    from bootlog.parse.patterns import match
    from bootlog.parse.vline import parse_line

    marks = markers()
    out = []
    for lineno, rec in sorted(recs.items()):
        if lineno in used:
            continue
        mark = _marker_of(rec.text, marks)
        if mark is None or match(parse_line(rec).msg) or any(len(m) > 20 and m in rec.text for m in messages):
            continue
        out.append({"line": lineno, "marker": mark, "text": rec.text})
    return out


def explain_ref(store, boot_id: int) -> dict:
    """A stored boot: its figures with the catalogue entry that produced each."""
    from bootlog.store.reads import show_boot, stored_figures

    show = show_boot(store, boot_id)
    b = show["boot"]
    return {
        "source": b.get("source"),
        "unmatched": [],
        "raw": False,
        "boots": [
            {
                "id": b.get("id"),
                "index": 1,
                "first_line": b.get("first_line"),
                "last_line": b.get("last_line"),
                "status": b.get("status"),
                "failure": b.get("failure"),
                "figures": _figure_rows(stored_figures(store, boot_id), {}),
                "events": [
                    {
                        "kind": e["kind"],
                        "rank": e.get("rank"),
                        "line": e.get("line"),
                        "message": (e.get("message") or "")[:200],
                    }
                    for e in show.get("events", [])
                ],
            }
        ],
    }
