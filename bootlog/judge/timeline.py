"""Where a boot's time goes: its phases, from the figures' own times (issue 25 "Boot timeline").

vLLM prints no "phase started" lines, only "X took N s" when a phase ends: a figure line's time is
when its phase ENDED, and its value (seconds) tells when it began.  From those intervals,
`phases()` cuts the boot (first line -> "Application startup complete.") into consecutive pieces
that add up to boot_to_ready_s exactly, so a dashboard, `show` or `diff` can say where the seconds
went -- including the ones no line accounts for (vLLM issue 20264: "a loss of ~30 s which isn't
logged").  Input is plain data (`BootTimes`): stored metric rows (which keep their ts) or parsed
Boot objects.  Rules, in the order they apply:

1. Each duration figure (DURATIONS) with a ts and a finite, non-negative value gives [ts - value,
   ts].  Except torch.compile's total: it runs from the start of the dynamo transform before it,
   for N seconds -- vLLM 0.8 printed it only after the profiling run that followed the compile.
2. Per figure name, the rank whose (last) line of that name came LAST -- the rank that held the
   boot up -- with all of its lines of the name (one per compiled shape: several intervals).
   Ties: the larger value, then the lower rank (null first).  One figure's pieces never mix ranks.
3. Nesting, as vLLM measures: depth 0 model_load (contains weights_load) and init_engine (all after
   the load), depth 1 compile (torch.compile's total: dynamo_transform and the graph compile or
   cache load; on the CPU backend its compile warm-up), depth 2 the rest.  Each instant goes to the DEEPEST interval covering it; among
   equals (rounding makes neighbours overlap) the one that ENDED FIRST, because an end is a printed
   time and a start only a difference.  So a container shows up as its remainder, nothing twice.
4. kv_cache_init has no duration line: it runs from the end of the last phase before the first KV
   line (KV_LINES; or init_engine's start if that is later) to the last KV line before the next
   phase starts (graph capture).  Where vLLM prints no separate profiling figure (V1 before 0.18),
   this includes the memory profiling whose result the KV lines are.
5. Gaps no interval covers: before the first -> process_start (arg parsing, engine core and worker
   spawn, NCCL init); after the last -> api_server_start; in between -> unlogged.
6. Adjacent pieces of the same phase are merged, and a piece shorter than SLIVER_S (the figures'
   rounding) joins the piece before it.  Pieces are in time order, never overlap, never negative.

A boot that never became ready gets its phases up to ended_at, the tail named after its status
("failed" / "incomplete") instead of api_server_start.  No started_at, or neither ready_at nor
ended_at: [].  A boot with times but no placeable figure is one "unlogged" (or "failed" /
"incomplete") piece.  `render_bar()` draws the result for `bootlog show`; `moved()` says which
phase moved for `diff`.  Times: ISO 8601 strings or datetimes; naive ones are taken to be in
started_at's zone (one log has one clock), and with a naive started_at offsets are dropped.  The
output's start/end are ISO strings in started_at's offset.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime, timedelta, tzinfo
from typing import Any, Iterable, Mapping

from bootlog.figures import FIGURES

# figure name -> (phase, depth) (bootlog.figures); see rule 3 of the module docstring
DURATIONS: dict[str, tuple[str, int]] = {f.name: f.phase for f in FIGURES if f.phase}
# lines printed once the KV cache is sized (rule 4): their times bound kv_cache_init
KV_LINES = (
    "kv_cache_available_gib",
    "kv_cache_reserved_gib",
    "num_gpu_blocks",
    "num_cpu_blocks",
    "kv_cache_tokens",
    "max_concurrency",
)
KV_DEPTH = 2
# pieces shorter than this are rounding, not phases (rule 6): figures print at most 1/100 s
SLIVER_S = 0.01

# every phase name phases() can return, in the order a boot normally runs them, and its letter in
# render_bar(): ASCII, distinct without colour, upper case for the big work items
LETTERS = {
    "process_start": "s",
    "model_load": "M",
    "weights_load": "W",
    "init_engine": "I",
    "dynamo_transform": "D",
    "compile": "C",
    "compile_cache_load": "c",
    "memory_profiling": "R",
    "profiling_run": "P",
    "kv_cache_init": "K",
    "graph_capture": "G",
    "api_server_start": "A",
    "unlogged": ".",
    "failed": "X",
    "incomplete": "?",
}
PHASES = tuple(LETTERS)


@dataclass(frozen=True)
class Figure:
    """One printed figure, as the store keeps it: its line's time is when its phase ended."""

    name: str
    value: float | None
    rank: int | None = None
    line: int | None = None
    ts: str | datetime | None = None


@dataclass(frozen=True)
class BootTimes:
    """What phases() needs of a boot: its times, its status and its figures."""

    started_at: str | datetime | None
    ready_at: str | datetime | None
    figures: tuple[Figure, ...] = ()
    ended_at: str | datetime | None = None
    status: str | None = None  # ready | failed | incomplete; None: ready if ready_at is set

    @classmethod
    def from_dict(cls, boot: Mapping[str, Any], figures: Iterable[Mapping[str, Any]] | None = None) -> BootTimes:
        """From plain dicts: `boot` with started_at/ready_at/ended_at/status (a show --json "boot"
        object will do) and figures as {"name", "value", "rank", "line", "ts"} -- given apart, or
        as boot["figures"] / boot["metrics"]."""
        rows = figures if figures is not None else boot.get("figures", boot.get("metrics", ()))
        return cls(
            started_at=boot.get("started_at"),
            ready_at=boot.get("ready_at"),
            figures=tuple(_figure_of(r) for r in rows),
            ended_at=boot.get("ended_at"),
            status=boot.get("status"),
        )


@dataclass
class _Span:
    """A figure's interval (depth, line: the tie-breaks), or a piece of the boot (owned: False
    where no interval covers it, rule 5 names it)."""

    phase: str
    start: datetime
    end: datetime
    depth: int = 0
    line: int = 0  # (tie-break only: log order)
    owned: bool = True


def phases(boot: BootTimes | Mapping[str, Any]) -> list[dict]:
    """The boot's phases in time order: [{"phase", "start", "end", "s"}, ...] (see the module
    docstring for the rules).  `s` of all entries adds up to ready_at - started_at (for a boot
    that never got ready: ended_at - started_at); [] when those times are missing."""
    if not isinstance(boot, BootTimes):
        boot = BootTimes.from_dict(boot)
    t0 = _parse(boot.started_at)
    if t0 is None:
        return []
    zone = t0.tzinfo  # the boot's clock: every other time is read in it
    ready = _to_dt(boot.ready_at, zone)
    t1 = ready if ready is not None else _to_dt(boot.ended_at, zone)
    if t1 is None or t1 < t0:
        return []
    status = boot.status or ("ready" if ready is not None else "incomplete")
    tail = "api_server_start" if ready is not None else ("failed" if status == "failed" else "incomplete")
    try:
        spans = [s for s in (_clip(s, t0, t1) for s in _spans(boot.figures, zone)) if s is not None]
        pieces = _flatten(spans, t0, t1)
        _name_gaps(pieces, tail, ready is not None)
        return [_entry(p, zone) for p in _merge(_absorb_slivers(_merge(pieces)))]
    except OverflowError:  # stamped at the edge of the date range: no interval can be placed
        return []


def _figure_of(r: Mapping[str, Any]) -> Figure:
    return Figure(name=r["name"], value=r.get("value"), rank=r.get("rank"), line=r.get("line"), ts=r.get("ts"))


def _spans(figures: Iterable[Figure | Mapping[str, Any]], zone: tzinfo | None) -> list[_Span]:
    figs = (x if isinstance(x, Figure) else _figure_of(x) for x in figures)
    timed = [f for f in figs if f.ts is not None and _is_number(f.value)]
    spans: list[_Span] = []
    for name, (phase, depth) in DURATIONS.items():
        for f, end in _one_rank(timed, name, zone):
            start = end - timedelta(seconds=float(f.value))
            if name == "torch_compile_s":
                start, end = _compile_total(spans, start, end, float(f.value))
            spans.append(_Span(phase, start, end, depth, f.line or 0))
    kv = _kv_span(timed, spans, zone)
    if kv is not None:
        spans.append(kv)
    return spans


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def _one_rank(figs: list[Figure], name: str, zone: tzinfo | None) -> list[tuple[Figure, datetime]]:
    """The figures `name` of one rank: the rank whose last such line came last (rule 2)."""
    by_rank: dict[int | None, list[tuple[Figure, datetime]]] = {}
    for f in figs:
        if f.name != name or f.value < 0:
            continue
        end = _to_dt(f.ts, zone)
        if end is not None:
            by_rank.setdefault(f.rank, []).append((f, end))
    if not by_rank:
        return []

    def key(rank: int | None) -> tuple:
        rows = by_rank[rank]
        last = max(end for _, end in rows)
        return (last, sum(float(f.value) for f, _ in rows), -(rank if rank is not None else -1))

    return sorted(by_rank[max(by_rank, key=key)], key=lambda fe: fe[1])


def _compile_total(spans: list[_Span], start: datetime, end: datetime, value: float) -> tuple[datetime, datetime]:
    """Rule 1: torch.compile's total runs from the start of the dynamo transform before its
    line (its first step) for `value` seconds."""
    dynamo = [s.start for s in spans if s.phase == "dynamo_transform" and s.start <= end]
    if not dynamo:
        return start, end
    first = max(dynamo)
    return first, min(end, first + timedelta(seconds=value))


def _kv_span(figs: list[Figure], spans: list[_Span], zone: tzinfo | None) -> _Span | None:
    """kv_cache_init: from the end of the phase before the first KV line to the last one (rule 4)."""
    times = sorted(t for t in (_to_dt(f.ts, zone) for f in figs if f.name in KV_LINES) if t is not None)
    if not times:
        return None
    first = times[0]
    # only the KV lines before the next phase starts: V1 0.9 prints num_gpu_blocks again at the
    # very end of init ("cache_config_info ... num_gpu_blocks is"), which sizes nothing
    nxt = min((s.start for s in spans if s.start >= first), default=None)
    last = max(t for t in times if nxt is None or t <= nxt)
    before = [s.end for s in spans if s.end <= first]
    before += [s.start for s in spans if s.phase == "init_engine" and s.start <= first]
    if not before:
        return None
    start = max(before)
    line = min((f.line or 0) for f in figs if f.name in KV_LINES)
    return _Span("kv_cache_init", start, last, KV_DEPTH, line) if last > start else None


def _clip(s: _Span, t0: datetime, t1: datetime) -> _Span | None:
    start, end = max(s.start, t0), min(s.end, t1)
    return _Span(s.phase, start, end, s.depth, s.line) if end > start else None


def _flatten(spans: list[_Span], t0: datetime, t1: datetime) -> list[_Span]:
    """Cut [t0, t1] at every interval edge; each cut goes to its deepest covering interval,
    among equals the one that ended first (rule 3)."""
    edges = sorted({t0, t1, *(s.start for s in spans), *(s.end for s in spans)})
    pieces = []
    for a, b in zip(edges, edges[1:]):
        cover = [s for s in spans if s.start <= a and s.end >= b]
        best = min(cover, key=lambda s: (-s.depth, s.end, s.line), default=None)
        pieces.append(_Span(best.phase, a, b) if best is not None else _Span("unlogged", a, b, owned=False))
    return pieces


def _name_gaps(pieces: list[_Span], tail: str, ready: bool) -> None:
    """Rule 5: an uncovered stretch before every interval is process_start, after them all the
    tail (api_server_start, or failed / incomplete), in between unlogged."""
    owned = [i for i, p in enumerate(pieces) if p.owned]
    for i, p in enumerate(pieces):
        if not owned:
            p.phase = "unlogged" if ready else tail
        elif i < owned[0]:
            p.phase = "process_start"
        elif i > owned[-1]:
            p.phase = tail


def _merge(pieces: list[_Span]) -> list[_Span]:
    out: list[_Span] = []
    for p in pieces:
        if out and out[-1].phase == p.phase:
            out[-1].end = p.end
        else:
            out.append(_Span(p.phase, p.start, p.end, owned=p.owned))
    return out


def _absorb_slivers(pieces: list[_Span]) -> list[_Span]:
    """Rule 6: a piece shorter than SLIVER_S (a "304.118655 s" load ending 125 us before the next
    phase's derived start) joins the piece before it (the first piece: the one after)."""
    out: list[_Span] = []
    for p in pieces:
        if out and _length(p) < SLIVER_S:
            out[-1].end = p.end
        elif len(out) == 1 and _length(out[0]) < SLIVER_S:
            out[0] = _Span(p.phase, out[0].start, p.end, owned=p.owned)
        else:
            out.append(p)
    return out


def _length(p: _Span) -> float:
    return (p.end - p.start).total_seconds()


def _entry(p: _Span, zone: tzinfo | None) -> dict:
    return {"phase": p.phase, "start": _iso(p.start, zone), "end": _iso(p.end, zone), "s": round(_length(p), 6)}


def _to_dt(v: str | datetime | None, zone: tzinfo | None) -> datetime | None:
    """A datetime in the boot's clock: naive values are taken to be in `zone` (started_at's);
    with a naive started_at (zone None) offsets are dropped, so the two always compare."""
    dt = _parse(v)
    if dt is None:
        return None
    if zone is None:
        return dt.replace(tzinfo=None)
    return dt.replace(tzinfo=zone) if dt.tzinfo is None else dt


def _parse(v: str | datetime | None) -> datetime | None:
    if v is None or isinstance(v, datetime):
        return v
    text = v.strip()
    if text.endswith(("Z", "z")):  # (fromisoformat reads "Z" only from Python 3.11 on)
        text = text[:-1] + "+00:00"
    try:
        return datetime.fromisoformat(text)
    except ValueError:
        return None


def _iso(dt: datetime, zone: tzinfo | None) -> str:
    return (dt.astimezone(zone) if zone is not None else dt).isoformat()


def phase_totals(phases: list[dict]) -> dict[str, float]:
    """Seconds per phase name (a phase split by inner ones, such as init_engine, summed), in
    order of first appearance."""
    out: dict[str, float] = {}
    for p in phases:
        out[p["phase"]] = round(out.get(p["phase"], 0.0) + p["s"], 6)
    return out


def moved(new: list[dict], old: list[dict]) -> list[dict]:
    """For `diff A B`: per phase {"phase", "old", "new", "delta"} (seconds; 0.0 where a boot
    lacks the phase), biggest move first, so a cold compile or a slow weight load leads."""
    a, b = phase_totals(new), phase_totals(old)
    names = list(dict.fromkeys([*b, *a]))
    rows = [
        {"phase": n, "old": b.get(n, 0.0), "new": a.get(n, 0.0), "delta": round(a.get(n, 0.0) - b.get(n, 0.0), 6)}
        for n in names
    ]
    return sorted(rows, key=lambda r: -abs(r["delta"]))


def render_bar(phases: list[dict], width: int = 60) -> str:
    """A boot's phases as text: one bar line of `width` letters (each column is total/width
    seconds; a phase gets its share by the largest-remainder rule, so phases shorter than a
    column may not be drawn) and a legend of every phase with its seconds, wrapped to lines of
    at most max(width, 40) + 10 characters.  Pure ASCII.  "" for no phases."""
    rows = [p for p in phases if p.get("s", 0) > 0]
    total = sum(p["s"] for p in rows)
    if not rows or total <= 0:
        return ""
    width = max(width, 1)
    cols = _columns([p["s"] for p in rows], width)
    bar = "".join(LETTERS.get(p["phase"], "#") * n for p, n in zip(rows, cols))
    lines = [f"|{bar}| {_secs(total)}"]
    lines += _wrap(
        [f"{LETTERS.get(name, '#')} {name} {_secs(s)}" for name, s in phase_totals(rows).items()], max(width, 40) + 10
    )
    return "\n".join(lines)


def _columns(seconds: list[float], width: int) -> list[int]:
    """Largest-remainder apportionment of `width` columns: the counts add up to width."""
    total = sum(seconds)
    shares = [s * width / total for s in seconds]
    cols = [int(x) for x in shares]
    by_remainder = sorted(range(len(shares)), key=lambda i: (-(shares[i] - cols[i]), i))
    for i in by_remainder[: width - sum(cols)]:
        cols[i] += 1
    return cols


def _secs(s: float) -> str:
    return f"{s:.0f}s" if s >= 100 else f"{s:.1f}s"


def _wrap(items: list[str], limit: int) -> list[str]:
    lines: list[str] = []
    for item in items:
        if lines and len(lines[-1]) + 2 + len(item) <= limit:
            lines[-1] += "  " + item
        else:
            lines.append(item)
    return lines
