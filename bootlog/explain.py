"""Explain where every figure came from, and say what could not be read.

For a log file the whole pipeline runs in memory (source -> envelope -> parse), so each figure
is shown with the line that produced it and the catalogue entry (Metric.pattern) that read it;
then every line holding a known marker ("KV cache", "torch.compile", "out of memory", ...) that
no pattern matched is listed — a new vLLM wording shows up here instead of vanishing.
For a stored boot (REF) the stored metrics and their pattern column are shown.
"""
from __future__ import annotations

import importlib
import re
from pathlib import Path
from typing import Any, Iterable, Iterator

# Words that introduce a figure: a line holding one AND a quantity with a unit that no pattern
# read is a wording the catalogue does not know. Lowercased; catalogue literals join at run time.
FIGURE_MARKERS = (
    "kv cache", "graph capturing", "torch.compile", "maximum concurrency", "model loading",
    "loading weights took", "loading model weights", "gpu blocks", "cuda blocks", "rocm blocks",
    "num_gpu_blocks", "memory profiling", "compiling a graph", "compiled graph", "init engine",
    "cuda graph memory", "dynamo bytecode transform", "avg prompt throughput",
)
# Words that mark a failure: reported whenever nothing read them, quantity or not.
FAILURE_MARKERS = (
    "out of memory", "outofmemoryerror", "hiperroroutofmemory", "[gdn_hip] error",
    "valueerror", "engine core initialization failed",
)
# Advice vLLM prints next to the real lines; it holds marker words but no fact about this boot.
HINTS = ("if you are running out of memory", "this typically happens", "consider decreasing",
         "may cause accuracy issues")
MARKERS = (*FIGURE_MARKERS, *FAILURE_MARKERS)
_QUANTITY = re.compile(r"\d(?:[\d,]*\d)?(?:\.\d+)?\s*(?:GiB|GB|MiB|MB|tokens|seconds|secs|s\b|x\b|blocks|%)")


def markers() -> tuple[str, ...]:
    """Figure markers: the built-in ones plus the catalogue's literals."""
    extra: list[str] = []
    try:
        from bootlog import patterns

        extra = [lit.lower() for lit in getattr(patterns, "LITERALS", ()) if isinstance(lit, str)
                 and len(lit.strip()) >= 6]
    except Exception:  # noqa: BLE001 - explain still works with the built-in markers
        pass
    return tuple(dict.fromkeys((*FIGURE_MARKERS, *extra)))


def _marker_of(text: str, marks: tuple[str, ...]) -> str | None:
    low = text.lower()
    if any(h in low for h in HINTS):
        return None
    for m in FAILURE_MARKERS:
        if m in low:
            return m
    if not _QUANTITY.search(text):
        return None
    for m in marks:
        if m in low:
            return m.strip()
    return None


def _vline_fn():
    """The line-shape parser (Record -> VLine), whatever the vline module calls it."""
    try:
        mod = importlib.import_module("bootlog.vline")
    except ImportError:
        return None
    for name in ("parse_line", "vline", "parse", "to_vline", "split"):
        fn = getattr(mod, name, None)
        if callable(fn):
            return fn
    return None


def _msg(rec: Any, to_vline) -> str:
    if to_vline is not None:
        try:
            v = to_vline(rec)
            return getattr(v, "msg", None) or rec.text
        except Exception:  # noqa: BLE001 - a line the shape parser rejects is read whole
            return rec.text
    return rec.text


class _Keep:
    """Pass records through while keeping each line's text (explain needs them afterwards)."""

    def __init__(self, records: Iterable[Any]) -> None:
        self.records, self.lines, self.recs = records, {}, {}

    def __iter__(self) -> Iterator[Any]:
        for rec in self.records:
            self.lines[rec.lineno] = rec.text
            self.recs[rec.lineno] = rec
            yield rec


def _span(lines: Any) -> int:
    """How many lines a traceback event covers (detail "lines" is a list or a count)."""
    if isinstance(lines, list):
        return len(lines)
    return int(lines) if isinstance(lines, (int, float)) else 0


def _figure_rows(metrics: Iterable[Any], lines: dict[int, str]) -> list[dict]:
    rows = []
    for m in metrics:
        get = m.get if isinstance(m, dict) else (lambda k, _m=m: getattr(_m, k, None))
        line = get("line")
        rows.append({"name": get("name"), "value": get("value"), "unit": get("unit"),
                     "rank": get("rank"), "line": line, "pattern": get("pattern"),
                     "text": lines.get(line) if line is not None else None})
    return rows


def explain_log(path: str | Path, plan: Any = None) -> dict:
    """Run the pipeline in memory over a log file; figures with their lines, unread lines.
    With a plan, its user patterns read the lines too (as `ingest --plan` would)."""
    from bootlog.envelope import read
    from bootlog.parse import parse
    from bootlog.sources import open_source

    src = open_source(str(path))
    keep = _Keep(read(src.chunks()))
    boots = parse(keep)
    if plan is not None and getattr(plan, "patterns", None):
        from bootlog.plan import apply_user_patterns
        from bootlog.records import Metric

        for hit in apply_user_patterns(plan, (keep.recs[n] for n in sorted(keep.recs))):
            boot = next((b for b in reversed(boots) if b.first_line <= (hit.line or 0) <= b.last_line), None)
            if boot is not None:
                (boot.metrics if isinstance(hit, Metric) else boot.events).append(hit)
    used: set[int] = set()
    messages: set[str] = set()
    out_boots = []
    for i, b in enumerate(boots, 1):
        used.update(m.line for m in b.metrics if m.line is not None)
        for e in b.events:
            used.add(e.line)
            # a traceback event covers its lines; re-printed copies of the message are read too
            used.update(range(e.line, e.line + _span(e.detail.get("lines"))))
            if e.message:
                messages.add(e.message.strip())
        used.update(s.line for s in b.samples)
        out_boots.append({
            "id": None, "index": i, "first_line": b.first_line, "last_line": b.last_line,
            "status": b.status, "failure": b.failure,
            "figures": _figure_rows(b.metrics, keep.lines),
            "events": [{"kind": e.kind, "rank": e.rank, "line": e.line, "message": e.message[:200]}
                       for e in b.events],
        })
    return {"source": getattr(src, "name", str(path)), "raw": True, "boots": out_boots,
            "unmatched": unmatched_lines(keep, used, messages)}


def unmatched_lines(keep: _Keep, used: set[int], messages: set[str]) -> list[dict]:
    """Lines with a known marker that neither the parse nor any catalogue pattern read."""
    marks = markers()
    try:
        from bootlog.patterns import match
    except ImportError:
        match = None
    to_vline = _vline_fn()
    out = []
    for lineno in sorted(keep.lines):
        if lineno in used:
            continue
        text = keep.lines[lineno]
        mark = _marker_of(text, marks)
        if mark is None:
            continue
        msg = _msg(keep.recs[lineno], to_vline)
        if match is not None:
            try:
                if match(msg):
                    continue
            except Exception:  # noqa: BLE001 - a pattern crashing on a line is itself worth showing
                pass
        if any(m and (m in text) for m in messages if len(m) > 20):
            continue
        out.append({"line": lineno, "marker": mark, "text": text})
    return out


def explain_ref(store, boot_id: int) -> dict:
    """A stored boot: its figures with the catalogue entry that produced each."""
    from bootlog.store.reads import show_boot, stored_figures

    show = show_boot(store, boot_id)
    b = show["boot"]
    return {"source": b.get("source"), "unmatched": [], "raw": False, "boots": [{
        "id": b.get("id"), "index": 1, "first_line": b.get("first_line"),
        "last_line": b.get("last_line"), "status": b.get("status"), "failure": b.get("failure"),
        "figures": _figure_rows(stored_figures(store, boot_id), {}),
        "events": [{"kind": e["kind"], "rank": e.get("rank"), "line": e.get("line"),
                    "message": (e.get("message") or "")[:200]} for e in show.get("events", [])],
    }]}
