"""One figure across boots as a PNG (or SVG, PDF), readable at a glance (issue 25).

matplotlib is an optional extra (`pip install 'bootlog[plot]'`); it is imported only inside the
functions, with the headless Agg backend.

What the picture holds, and why it looks the way it does:
* The figure per boot; a boot whose ranks disagree shows one point per rank in its own series
  (series()), so a TP8 outlier rank is seen without eight lines for everyone.
* Failed boots, and ready ones whose engine then died serving: one marker shape per failure
  kind, named in the legend, drawn once — in place of the boot's dot where it printed the figure
  (a died-serving boot usually did), on the floor of the axes where it printed none (failed boots
  rarely do); no text on the axes, so nothing overlaps.
* Config changes: a track above the axes, a tick between the two boots and the NAMES of the keys
  that changed (the values are in the history table and the diff; an engine alias moving with
  its key, max_seq_len with max_model_len, is not named again).  Labels are set in rows, each
  in the first row where it overlaps no other, measured with the renderer's own text sizes; a
  label that would run off the picture's right edge ends at its tick instead.
* The figure's budget, where it has one: graph_capture_gib against the planner's
  cudagraph_estimate_gib, and with a plan its bounds (kv_cache_tokens >= min, boot_to_ready_s
  <= max, a bound naming another figure as that figure's series), dashed; each point a plan bound
  fails (as `check --plan` judges it) ringed, the legend counting them.
* One number format per axis: render.fmt_value with the decimals the ticks need (no 1.2e+06
  beside 800,000).  x ticks: every boot's id over its start on the report's clock (date over
  time); when they would not fit side by side, the ids that fit, the start under every k-th, and
  a plain tick for each boot left unlabelled (tick_plan).
* Fixed margins computed from the measured labels (no tight_layout guesswork), so the track's
  label positions are known before anything is drawn.
"""

from __future__ import annotations

import io
import math
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Sequence

from bootlog.errors import BootlogError
from bootlog.figures import FIGURES
from bootlog.render.report import metric_values
from bootlog.parse.reprs import CONFIG_ALIASES

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from bootlog.render.logclock import Clock

# Config keys that change with every boot or say nothing about capacity; never annotated.
_NOISY_CONFIG = {"seed", "served_model_name", "model_tag", "port", "host"}
# Shown first when several keys change at once: the ones that move capacity figures.
_KEY_CONFIG = (
    "max_model_len",
    "max_num_seqs",
    "kv_cache_dtype",
    "gpu_memory_utilization",
    "kv_cache_memory_bytes",
    "max_num_batched_tokens",
    "tensor_parallel_size",
    "enable_prefix_caching",
    "quantization",
    "enforce_eager",
    "model",
)
# a figure -> the figure it must fit under, without a plan (the planner's own estimate)
BUDGET_OF = {f.name: f.budget for f in FIGURES if f.budget}
TRACK_KEYS = 3  # key names per config-change label; more are counted ("+2 more keys")
TRACK_CHANGES = 60  # config changes drawn and named (the latest); earlier ones are counted

DPI = 100
FONT = 7.5  # points: tick labels, legend, track
MAIN_H = 3.1  # inches: the axes
FAILURE_MARKERS = ("X", "v", "s", "D", "P", "^", "*")
FAILURE_COLOR = "crimson"
MISS_COLOR = FAILURE_COLOR  # (a point the plan fails is a failure of that figure)


def load_pyplot():
    try:
        import matplotlib
    except ImportError:
        raise BootlogError("plots need matplotlib: pip install 'bootlog[plot]'") from None
    matplotlib.use("Agg")  # headless: no display on servers and in CI
    import matplotlib.pyplot as plt

    return plt


def plain(text: Any, limit: int = 60) -> str:
    """Log text as matplotlib must get it: controls shown escaped (safe.term), one line, cut,
    and `$` escaped (matplotlib reads $...$ as math; a bad one raises when drawing)."""
    from bootlog.safe import cut

    return cut(text, limit, "…").replace("$", r"\$")


def config_changes(docs: Sequence[dict]) -> list[tuple[int, list[str]]]:
    """(index, ["key old→new", …]) for each boot whose config differs from the boot before.

    Capacity keys come first; long values (compilation_config dicts) are named, not printed;
    object reprs (`<function … at 0x…>`, which differ every run) are ignored.
    """
    out = []
    for i in range(1, len(docs)):
        old, new = docs[i - 1].get("config") or {}, docs[i].get("config") or {}
        keys = sorted(set(old) | set(new), key=lambda k: (_KEY_CONFIG.index(k) if k in _KEY_CONFIG else 99, k))
        moved = []
        for k in keys:
            a, b = str(old.get(k, "∅")), str(new.get(k, "∅"))
            if k in _NOISY_CONFIG or a == b or " at 0x" in a + b:
                continue
            canon = CONFIG_ALIASES.get(k)  # one setting under two names is one change
            if canon and (str(old.get(canon, "∅")), str(new.get(canon, "∅"))) == (a, b):
                continue
            moved.append(f"{k} {a}→{b}" if len(a) + len(b) <= 40 else f"{k} changed")
        if moved:
            out.append((i, moved))
    return out


# the boot fields a plot reads: the tick label, the failure markers, the log's clock
_BOOT_KEPT = ("id", "status", "failure", "started_at", "container", "host")


def keep_for(metric: str, plan: Any = None) -> Callable[[dict], dict]:
    """What a plot of `metric` needs of each boot's document (report.load_docs' `trim`): its
    fields, the printings of the figure and of its budgets, the config (one dict shared by the
    boots that ran the same config: a plot of 100,000 boots held every boot's whole document,
    2.5 GB), the events a status or a fault count reads, the runtime summary."""
    from bootlog.render.report import FAULT_KINDS

    names = {metric, *BUDGET_OF.values()}
    ex = plan is not None and (plan.metrics.get(metric) or plan.boot_metrics.get(metric))
    if ex:
        names.update(b for b in (ex.min, ex.max, ex.eq, ex.approx) if isinstance(b, str))
    last: dict[str, Any] = {"config": None}

    def keep(doc: dict) -> dict:
        config = doc.get("config") or {}
        if config == last["config"]:
            config = last["config"]
        last["config"] = config
        boot = doc["boot"]
        return {
            "boot": {k: boot.get(k) for k in _BOOT_KEPT + ((metric,) if metric in boot else ())},
            "config": config,
            "runtime": doc.get("runtime"),
            "metrics": [m for m in doc.get("metrics", []) if m["name"] in names],
            "events": [e for e in doc.get("events", []) if e.get("kind") in ("crash_loop", *FAULT_KINDS)],
        }

    return keep


def change_label(moved: list[str]) -> str:
    """The track's label of one config change: the keys' names, at most TRACK_KEYS of them and
    then how many more (said in words, never a bare "(+1)")."""
    names = [m.split(" ", 1)[0] for m in moved]
    shown = ", ".join(plain(n, 40) for n in names[:TRACK_KEYS])
    rest = len(names) - TRACK_KEYS
    return shown + (f" +{rest} more key{'s' if rest != 1 else ''}" if rest > 0 else "")


def series(docs: Sequence[dict], metric: str) -> dict[str, list[float | None]]:
    """Label -> one value per boot (None = no point).

    The main series holds the boots whose ranks agree (the usual case, one value per boot).
    A boot whose ranks disagree is shown instead as one point per rank, in series
    "METRIC rank N", so a TP8 outlier rank is visible without drawing eight lines for everyone.
    """
    per_boot = [metric_values(d, metric) for d in docs]
    out: dict[str, list[float | None]] = {metric: [None] * len(docs)}
    if not any(per_boot):  # not a printed metric: any numeric history column (faults, a config
        from bootlog.render.report import figure  # key such as max_model_len, runtime.max.X)

        for i, d in enumerate(docs):
            v = _number(figure(d, metric))
            out[metric][i] = v
        return out
    for i, vals in enumerate(per_boot):
        if not vals:
            continue
        if len({v for _, v in vals}) == 1:
            out[metric][i] = vals[0][1]
            continue
        for r, v in vals:
            label = f"{metric} (engine)" if r is None else f"{metric} rank {r}"
            out.setdefault(label, [None] * len(docs))
            if out[label][i] is None:  # first printing of that rank
                out[label][i] = v
    return out


def _number(v) -> float | None:
    if isinstance(v, bool) or v is None:
        return float(v) if isinstance(v, bool) else None
    try:
        return float(v)
    except (TypeError, ValueError):
        return None


@dataclass
class Budget:
    """A line the figure is held to: a constant (a plan's number) or one value per boot."""

    label: str
    values: float | list[float | None]


def budgets(docs: Sequence[dict], metric: str, plan: Any = None) -> list[Budget]:
    """The figure's budget lines: the plan's bounds on it (a number, or a figure it names),
    else BUDGET_OF's estimate; per-boot values are the largest over ranks."""
    from bootlog.render.render import fmt_value

    out: list[Budget] = []
    ex = None
    if plan is not None:
        ex = plan.metrics.get(metric) or plan.boot_metrics.get(metric)
    named = set()
    for kind, sign in (("min", "≥"), ("max", "≤"), ("eq", "="), ("approx", "≈")):
        bound = getattr(ex, kind, None) if ex is not None else None
        if isinstance(bound, bool) or bound is None:
            continue
        if isinstance(bound, (int, float)):
            out.append(Budget(f"plan: {sign} {fmt_value(bound)}", float(bound)))
        elif isinstance(bound, str):
            named.add(bound)
            out.append(Budget(f"plan: {sign} {plain(bound, 40)}", _per_boot_max(docs, bound)))
    est = BUDGET_OF.get(metric)
    if est and est not in named:
        out.append(Budget(f"{est} (the estimate it must fit under)", _per_boot_max(docs, est)))
    return [b for b in out if not isinstance(b.values, list) or any(v is not None for v in b.values)]


def _per_boot_max(docs: Sequence[dict], name: str) -> list[float | None]:
    vals = []
    for d in docs:
        got = [v for _, v in metric_values(d, name) if _number(v) is not None]
        if not got:
            from bootlog.render.report import figure

            one = _number(figure(d, name))
            got = [one] if one is not None else []
        vals.append(max(got) if got else None)
    return vals


def misses(
    docs: Sequence[dict], metric: str, lines: dict[str, list[float | None]], plan: Any = None
) -> list[tuple[int, float]]:
    """(boot index, value) of every drawn point that fails the plan's bounds on `metric`, judged
    as `check --plan` judges it (compare.meets: the rank's value against the bound, a bound that
    names a figure read from the same boot)."""
    ex = plan is not None and (plan.metrics.get(metric) or plan.boot_metrics.get(metric))
    if not ex:
        return []
    from bootlog.judge.compare import meets

    out = []
    for label, vals in lines.items():
        rank = int(label.rsplit(" ", 1)[1]) if label.startswith(f"{metric} rank ") else None
        if isinstance(ex.rank, int):  # the plan bounds one rank only
            if rank not in (None, ex.rank):
                continue
            rank = ex.rank
        out += [(i, v) for i, v in enumerate(vals) if v is not None and meets(ex, v, docs[i], rank) is False]
    return out


def miss_label(missed: Sequence[tuple[int, float]]) -> str:
    n = len({i for i, _ in missed})
    return f"misses the plan ({n} boot{'s' if n != 1 else ''})"


def failures(docs: Sequence[dict]) -> dict[str, list[int]]:
    """Legend label -> indexes of the boots that failed that way ("failed: oom", "died
    serving: oom"); a failed boot without a kind is "failed"."""
    out: dict[str, list[int]] = {}
    for i, d in enumerate(docs):
        b = d["boot"]
        why = b.get("failure")
        if b.get("status") == "failed":
            label = f"failed: {plain(why, 40)}" if why else "failed"
        elif why:
            label = f"died serving: {plain(why, 40)}"
        else:
            continue
        out.setdefault(label, []).append(i)
    return out


def tick_label(doc: dict, clock: Clock | None, *, stacked: bool = False) -> str:
    """'#12' over its start on the clock ('09-30 05:29'; `stacked`: the date over the time, a
    label half as wide), or the id alone without a time."""
    boot = doc["boot"]
    fmt = "%m-%d\n%H:%M" if stacked else "%m-%d %H:%M"
    when = clock.text(boot.get("started_at"), fmt) if clock is not None else ""
    return f"#{boot['id']}\n{when}" if when else f"#{boot['id']}"


def zone_words(clock: Clock | None) -> str:
    from bootlog.render.logclock import offset_name

    if clock is None or clock.zone is None:
        return "as the log printed it"
    return offset_name(clock.zone)


# ---- layout helpers (shared with plot_timeline and plot_runtime) -----------------------------


def text_px(renderer: Any, text: str, size: float = FONT) -> tuple[float, float]:
    """(width, height) in pixels of `text` as the renderer draws it (all its lines)."""
    from matplotlib.font_manager import FontProperties

    prop = FontProperties(size=size)
    lines = text.split("\n")
    sizes = [renderer.get_text_width_height_descent(ln or " ", prop, ismath=False) for ln in lines]
    return max(w for w, _, _ in sizes), sum(h for _, h, _ in sizes) * 1.25


def one_format(axis: Any) -> None:
    """Every tick label of `axis` in one format: render.fmt_value with the fewest decimals
    that write every tick exactly (0.50 0.75 1.00, never 1.2e+06 beside 800,000)."""
    from matplotlib.ticker import Formatter

    from bootlog.render.render import fmt_value

    class OneFormat(Formatter):
        ticks: Sequence[float] = ()

        def set_locs(self, locs):  # (the axis gives every tick before formatting any)
            self.ticks = tuple(locs)

        def __call__(self, x, pos=None):
            return fmt_value(x, places=places(self.ticks))

    axis.set_major_formatter(OneFormat())


def places(locs: Sequence[float]) -> int:
    """The decimals that write each of `locs` exactly (ticks are round numbers), at most 6."""
    locs = [float(v) for v in locs if math.isfinite(v)]
    for p in range(7):
        if all(abs(round(v, p) - v) <= 1e-9 * max(1.0, abs(v)) for v in locs):
            return p
    return 6


def rows_for(spans: Sequence[tuple[float, float]], pad: float = 6.0) -> list[int]:
    """Greedy rows for labels spanning [x0, x1] pixels: each in the first row where it keeps
    `pad` pixels from every label already there.  Row index per span."""
    ends: list[list[tuple[float, float]]] = []
    out = []
    for x0, x1 in spans:
        for r, taken in enumerate(ends):
            if all(x1 + pad <= a or x0 >= b + pad for a, b in taken):
                taken.append((x0, x1))
                out.append(r)
                break
        else:
            ends.append([(x0, x1)])
            out.append(len(ends) - 1)
    return out


def widest_labels(labels: Sequence[str], k: int = 16) -> list[str]:
    """The labels with the most characters on one line (and the most lines): the widest and
    tallest are among them, and only they are measured (100,000 tick labels took a minute)."""
    if len(labels) <= k:
        return list(labels)
    return sorted(set(labels), key=lambda s: (s.count("\n"), max(map(len, s.split("\n")))))[-k:]


def tick_plan(
    labels: Sequence[str], ids: Sequence[str], slot_px: float, renderer: Any
) -> tuple[list[tuple[int, str]], list[int]]:
    """The x ticks: (index, label) of the labelled ones, and the plain ticks between them.

    Every boot gets its whole label ('#12' over its start) when they fit side by side; else
    every boot whose id fits gets '#12' and every k-th of those its start too; the boots left
    over get a plain tick, while a tick still has a few pixels of its own."""
    n = len(labels)
    step = every_kth(labels, slot_px, renderer)
    if step == 1:
        return list(enumerate(labels)), []
    id_step = every_kth(ids, slot_px, renderer)
    time_step = math.ceil(step / id_step) * id_step
    shown = [(i, labels[i] if i % time_step == 0 else ids[i]) for i in range(0, n, id_step)]
    minor = [i for i in range(n) if i % id_step] if id_step > 1 and slot_px >= 3 else []
    return shown, minor


def every_kth(labels: Sequence[str], slot_px: float, renderer: Any) -> int:
    """The step between shown x tick labels so that none touches its neighbour."""
    widest = max((text_px(renderer, s)[0] for s in widest_labels(labels)), default=0.0)
    return max(1, math.ceil((widest + 8) / max(slot_px, 1e-6)))


# ---- the figure --------------------------------------------------------------------------


def figure(
    docs: Sequence[dict], metric: str, *, title: str | None = None, clock: Clock | None = None, plan: Any = None
) -> Figure:
    """The matplotlib Figure of `metric` across `docs` (the caller closes it); see the module
    docstring for what it holds."""
    if not docs:
        raise BootlogError("no boots stored to plot")
    lines = series(docs, metric)
    if all(v is None for vals in lines.values() for v in vals):
        raise BootlogError(f"no stored boot has the figure {metric!r}")
    plt = load_pyplot()
    n = len(docs)
    xs = list(range(n))
    lims = (-0.6, n - 0.4)
    fails = failures(docs)
    changes = config_changes(docs)
    earlier = max(0, len(changes) - TRACK_CHANGES)  # (the latest are drawn and named)
    changes = changes[earlier:]
    limits = budgets(docs, metric, plan)
    failed_at = {i for where in fails.values() for i in where}
    missed = misses(docs, metric, lines, plan)
    labels = [tick_label(d, clock, stacked=True) for d in docs]
    ids = [tick_label(d, None) for d in docs]

    width_in = max(7.5, min(13.0, 0.42 * n + 5.5))
    fig = plt.figure(figsize=(width_in, 5.0), dpi=DPI)
    renderer = fig.canvas.get_renderer()
    # the legend beside the axes: as wide as its longest entry
    legend_labels = [*lines, *(b.label for b in limits), *fails, *([miss_label(missed)] if missed else [])]
    right_in = (max(text_px(renderer, s)[0] for s in legend_labels) / DPI) + 0.75
    ax = fig.add_axes((0, 0, 1, 1))
    try:
        _draw_series(ax, xs, lines, metric, failed_at)
        _draw_budgets(ax, xs, limits)
        ax.set_xlim(*lims)
        ax.margins(y=0.08)
        ax.autoscale_view(scalex=False)
        ymin, ymax = ax.get_ylim()
        # a failed boot, or one that died serving, is drawn once: its failure marker at each value
        # it printed (in place of the series' dot), on the floor of the axes when it printed none
        for k, (label, where) in enumerate(fails.items()):
            pts = [(i, v) for i in where for v in _values_at(lines, i)]
            pts += [(i, ymin) for i in where if not _values_at(lines, i)]
            ax.scatter(
                [i for i, _ in pts],
                [y for _, y in pts],
                marker=FAILURE_MARKERS[k % len(FAILURE_MARKERS)],
                s=60,
                color=FAILURE_COLOR if label.startswith("failed") else "white",
                edgecolors=FAILURE_COLOR,
                linewidths=1.2,
                zorder=5,
                clip_on=False,
                label=label,
            )
        if missed:  # a ring around each point the plan's bound fails, named in the legend
            ax.scatter(
                [i for i, _ in missed],
                [v for _, v in missed],
                marker="o",
                s=130,
                facecolors="none",
                edgecolors=MISS_COLOR,
                linewidths=1.6,
                zorder=6,
                label=miss_label(missed),
            )
        for i, _ in changes:
            ax.axvline(i - 0.5, color="grey", ls=":", lw=0.7, alpha=0.6, zorder=0)
        ax.set_ylim(ymin, ymax)
        one_format(ax.yaxis)

        # margins from the measured labels (inches)
        ax.set_position((0.1, 0.1, 0.8, MAIN_H / 5.0))  # (provisional: the y ticks need a height)
        fig.set_size_inches(width_in, 5.0)
        yticks = [t for t in ax.get_yticks() if ymin <= t <= ymax]
        fmt = ax.yaxis.get_major_formatter()
        fmt.set_locs(yticks)
        ytick_w = max((text_px(renderer, fmt(t))[0] for t in yticks), default=20.0)
        left_in = ytick_w / DPI + 0.45  # (+ the y label)
        axes_w_in = width_in - left_in - right_in
        if axes_w_in < 2.0:  # a very long legend entry: the legend goes under the data instead
            right_in, axes_w_in = 0.3, width_in - left_in - 0.3
        slot_px = axes_w_in * DPI / (lims[1] - lims[0])
        shown, minor = tick_plan(labels, ids, slot_px, renderer)
        tick_h = max(text_px(renderer, s)[1] for s in widest_labels(labels)) / DPI
        bottom_in = tick_h + 0.45

        # the config-change track: label rows from the pixel spans the labels will take
        # (a label that would run past the figure's right edge ends at its tick instead)
        texts = [change_label(m) for _, m in changes]
        spans, flipped = [], []
        right_px = (axes_w_in + right_in) * DPI - 4
        for (i, _), t in zip(changes, texts):
            x = (i - 0.5 - lims[0]) * slot_px
            w = text_px(renderer, t)[0] + 4
            flip = x + w > right_px and x - w >= -left_in * DPI
            flipped.append(flip)
            spans.append((x - w, x) if flip else (x, x + w))
        rows = rows_for(spans)
        n_rows = max(rows, default=-1) + 1
        row_h_in = FONT * 1.6 / 72
        track_in = n_rows * row_h_in + 0.12 if n_rows else 0.0
        top_in = 0.4
        height_in = bottom_in + MAIN_H + (0.08 + track_in if n_rows else 0.0) + top_in
        fig.set_size_inches(width_in, height_in)
        ax.set_position((left_in / width_in, bottom_in / height_in, axes_w_in / width_in, MAIN_H / height_in))

        ax.set_xticks([i for i, _ in shown])
        ax.set_xticklabels([text for _, text in shown], fontsize=FONT)
        ax.set_xticks(minor, minor=True)
        ax.tick_params(axis="y", labelsize=FONT)
        ax.set_xlabel(f"boot: id, and start ({zone_words(clock)})", fontsize=FONT + 0.5)
        unit = next((m.get("unit") for d in docs for m in d.get("metrics", []) if m["name"] == metric), None)
        ax.set_ylabel(plain(f"{metric} [{unit}]" if unit else metric), fontsize=FONT + 0.5)
        ax.grid(True, axis="y", alpha=0.3)
        if right_in > 0.3:
            ax.legend(fontsize=FONT, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0, frameon=False)
        else:
            ax.legend(fontsize=FONT, loc="best", framealpha=0.85)
        if n_rows:
            _draw_track(fig, ax, changes, texts, rows, n_rows, track_in / height_in, earlier, flipped)
        fig.suptitle(
            plain(title or f"{metric} across {n} boot{'s' if n != 1 else ''}", 100),
            x=left_in / width_in,
            y=1 - 0.08 / height_in,
            ha="left",
            va="top",
            fontsize=FONT + 2,
        )
        return fig
    except BaseException:
        plt.close(fig)
        raise


def _draw_series(
    ax,
    xs: list[int],
    lines: dict[str, list[float | None]],
    metric: str,
    failed_at: set[int] | frozenset[int] = frozenset(),
) -> None:
    for label, vals in lines.items():
        # NaN breaks the line: a boot without the figure is a gap, not an interpolation
        ys = [float("nan") if v is None else v for v in vals]
        main = label == metric
        dots = [i for i, v in enumerate(vals) if v is not None and i not in failed_at]  # (failures: their marker)
        ax.plot(
            xs,
            ys,
            marker="o" if main else ".",
            ms=4 if main else 7,
            lw=1.5 if main else 0.9,
            ls="-" if main else ":",
            label=plain(label),
            markevery=dots,
        )


def _values_at(lines: dict[str, list[float | None]], i: int) -> list[float]:
    return [vals[i] for vals in lines.values() if vals[i] is not None]


def _draw_budgets(ax, xs: list[int], limits: list[Budget]) -> None:
    for k, b in enumerate(limits):
        style = dict(color=("dimgrey", "darkorange", "teal")[k % 3], ls="--", lw=1.1, label=b.label, zorder=1)
        if isinstance(b.values, list):
            ys = [float("nan") if v is None else v for v in b.values]
            ax.plot(xs, ys, marker="_", ms=14, **style)  # (a bar per boot: its own estimate)
        else:
            ax.axhline(b.values, **style)


def _draw_track(
    fig, ax, changes, texts, rows, n_rows: int, height: float, earlier: int = 0, flipped: Sequence[bool] = ()
) -> None:
    """The config-change track: an axes over the main one, same x, one row per label level."""
    pos = ax.get_position()
    track = fig.add_axes((pos.x0, pos.y1 + 0.08 / fig.get_size_inches()[1], pos.width, height), sharex=ax)
    track.set_ylim(n_rows, 0)
    track.axis("off")
    more = f"; the latest {len(changes)}, {earlier:,} earlier not drawn" if earlier else ""
    track.text(
        0,
        1.02,
        f"config changes (keys; values in the history table{more})",
        transform=track.transAxes,
        fontsize=FONT - 0.5,
        color="dimgrey",
        va="bottom",
    )
    for k, ((i, _), text, row) in enumerate(zip(changes, texts, rows)):
        x = i - 0.5
        flip = k < len(flipped) and flipped[k]
        track.plot([x, x], [row + 0.15, row + 0.85], color="dimgrey", lw=0.8)
        track.text(
            x,
            row + 0.5,
            text + " " if flip else " " + text,
            fontsize=FONT,
            color="dimgrey",
            va="center",
            ha="right" if flip else "left",
            clip_on=False,
        )


def render_png(
    docs: Sequence[dict],
    metric: str,
    *,
    title: str | None = None,
    fmt: str = "png",
    clock: Clock | None = None,
    plan: Any = None,
) -> bytes:
    """The plot as PNG bytes (or `fmt`: svg, pdf)."""
    fig = figure(docs, metric, title=title, clock=clock, plan=plan)
    return save(fig, fmt)


def save(fig: Figure, fmt: str = "png") -> bytes:
    """A figure's bytes; the figure is closed."""
    plt = load_pyplot()
    try:
        buf = io.BytesIO()
        fig.savefig(buf, format=fmt, dpi=DPI)
        return buf.getvalue()
    finally:
        plt.close(fig)


FORMATS = ("png", "svg", "pdf")


def plot(docs: Sequence[dict], metric: str, out: str | Path, *, clock: Clock | None = None, plan: Any = None) -> Path:
    """Write the plot of `metric` to `out`, as PNG, SVG or PDF by its suffix (none: PNG)."""
    out = Path(out)
    fmt = out.suffix.lower().lstrip(".") or "png"
    if fmt not in FORMATS:
        raise BootlogError(f"cannot write a .{fmt} plot: name the file .png, .svg or .pdf")
    if not out.parent.exists():
        raise BootlogError(f"directory {out.parent} does not exist")
    from bootlog.render.output import write_whole

    write_whole(out, render_png(docs, metric, fmt=fmt, clock=clock, plan=plan))
    return out
