"""`bootlog show REF --lines [N]`: the lines of the stored source around each event of a boot —
what the operator opens the log for — with their line numbers.

    spans(doc, 3)          -> [Span(first=8, last=55, events=["traceback line 11", ...]), ...]
    read(store, doc, spans) -> {8: "…", 9: "…", ...}    (BootlogError: the source is gone/changed)
    render(doc, spans, lines) -> the text `show --lines` prints

Each event gets its line ±N; a traceback (ONE event holding all its lines) gets its whole body
±N, at most TRACEBACK_MAX lines.  Spans that touch are merged; at most MAX_SPANS are shown (the
rest counted).  The lines are read again from the boot's source (reread: a file, a container's
log), which must still hold this boot (its fingerprint, and where it starts): a file rewritten,
rotated away or read on another host is one clear error, never other lines under these numbers.
The text is the log's, envelope and ANSI removed, escaped for the terminal (safe.cut).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from bootlog.errors import BootlogError

MAX_SPANS = 40  # blocks printed; a fault burst of thousands is counted, not printed
TRACEBACK_MAX = 200  # lines of one traceback shown
LINE_COLS = 1000  # columns of one source line shown (the rest cut, marked …)


@dataclass
class Span:
    first: int
    last: int
    events: list[tuple[str, int, Any]] = field(default_factory=list)  # (kind, line, rank) of its events
    marks: set[int] = field(default_factory=set)  # the events' own lines


def _extent(ev: dict) -> int:
    """How many lines an event covers from its line: a traceback, its recorded lines."""
    d = ev.get("detail") or {}
    if ev.get("kind") == "traceback":
        n = sum(len(d.get(k) or []) for k in ("lines", "exception_more") if isinstance(d.get(k), list))
        return max(1, min(n, TRACEBACK_MAX))
    return 1


def spans(doc: dict[str, Any], n: int) -> tuple[list[Span], int]:
    """(the merged spans of the boot's events with a line, ±n lines each, at most MAX_SPANS;
    how many events did not fit)."""
    b = doc.get("boot") or {}
    lo, hi = b.get("first_line") or 1, b.get("last_line") or 10**12
    evs = sorted((e for e in doc.get("events") or [] if isinstance(e.get("line"), int)), key=lambda e: e["line"])
    out: list[Span] = []
    left = 0
    for e in evs:
        first, last = max(lo, e["line"] - n), min(hi, e["line"] + _extent(e) - 1 + n)
        if out and first <= out[-1].last + 1:
            out[-1].last = max(out[-1].last, last)
        elif len(out) >= MAX_SPANS:
            left += 1
            continue
        else:
            out.append(Span(first, last))
        out[-1].events.append((str(e["kind"]), e["line"], e.get("rank")))
        out[-1].marks.add(e["line"])
    return out, left


def read(store, doc: dict[str, Any], want: list[Span]) -> dict[int, str]:
    """The text of each line `want` covers, from the boot's stored source (module docstring);
    BootlogError saying why when the source cannot give this boot's lines any more."""
    from bootlog.run.ingest import parse_source, read_records
    from bootlog.run.reread import open_stored

    b = doc["boot"]
    row = store.one(
        "SELECT boots.fingerprint, sources.name, sources.kind, boots.host FROM boots "
        "JOIN sources ON sources.id = boots.source_id WHERE boots.id = ?",
        [b["id"]],
    )
    fingerprint, name, kind, host = row
    try:
        boots = parse_source(open_stored(kind, name, host))
    except BootlogError as err:
        raise BootlogError(f"the lines of boot #{b['id']} cannot be shown: {err}") from None
    same = next((x for x in boots if x.fingerprint == fingerprint), None)
    if same is None or same.first_line != b.get("first_line"):
        raise BootlogError(
            f"the lines of boot #{b['id']} cannot be shown: {name} no longer holds this boot "
            "(rewritten or rotated since it was stored)"
        )
    lines = {n for s in want for n in range(s.first, s.last + 1)}
    if not lines:
        return {}
    top = max(lines)
    got: dict[int, str] = {}
    recs, _ = read_records(open_stored(kind, name, host), every=True)
    for r in recs:
        if r.lineno > top:
            break
        if r.lineno in lines:
            got[r.lineno] = r.text
    return got


def _head(events: list[tuple[str, int, Any]]) -> str:
    """The events of a block in a few words: a run of one kind (a fault burst) as one."""
    by: dict[str, list[tuple[int, Any]]] = {}
    for kind, line, rank in events:
        by.setdefault(kind, []).append((line, rank))
    parts = []
    for kind, seen in by.items():
        if len(seen) > 2:
            parts.append(f"{kind} x{len(seen):,}, lines {seen[0][0]:,}-{seen[-1][0]:,}")
            continue
        for line, rank in seen:
            parts.append(f"{kind} line {line:,}" + (f" rank {rank}" if rank is not None else ""))
    return ", ".join(parts)


def render(doc: dict[str, Any], want: list[Span], lines: dict[int, str], left: int = 0) -> str:
    """The blocks as `show --lines` prints them: a head per block naming its events, then each
    line `>  1234 │ text` (> on an event's own line)."""
    from bootlog.safe import cut, term

    b = doc["boot"]
    state = f"{b.get('status')} ({b['failure']})" if b.get("failure") else b.get("status")
    out = [
        term(
            f"boot #{b['id']} {state}: {b.get('source')}, lines {b.get('first_line'):,}-{b.get('last_line'):,}",
            one_line=True,
        )
    ]
    if not want:
        out.append("(no event of this boot has a line)")
    width = len(f"{max((s.last for s in want), default=0):,}")
    for s in want:
        out.append("")
        out.append(term(f"── {_head(s.events)} ──", one_line=True))
        for n in range(s.first, s.last + 1):
            if n not in lines:
                continue
            mark = ">" if n in s.marks else " "
            out.append(f"{mark} {n:>{width},} │ {cut(lines[n], LINE_COLS)}")
    if left:
        out.append("")
        out.append(f"… and {left:,} more events (bootlog show {b['id']} --json lists them)")
    return "\n".join(out)


def as_json(want: list[Span], lines: dict[int, str], left: int = 0) -> dict[str, Any]:
    """The blocks for show --json --lines: [{"first", "last", "events", "lines": [{"line", "text"}]}]."""
    return {
        "blocks": [
            {
                "first": s.first,
                "last": s.last,
                "events": [{"kind": k, "line": n, "rank": r} for k, n, r in s.events],
                "lines": [{"line": n, "text": lines[n]} for n in range(s.first, s.last + 1) if n in lines],
            }
            for s in want
        ],
        "events_not_shown": left,
    }
