"""All boots' timelines in one chart: a stacked horizontal bar per boot (issue 25 "Boot
timeline"), boots on one axis, so a cold compile or a slow weight load jumps out.

PHASE_COLORS is also the report page's own HTML bar (no matplotlib needed for that one): one
colour per phase, the same everywhere.  matplotlib is imported inside the functions only.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Sequence

from bootlog.judge.timeline import PHASES

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from bootlog.render.logclock import Clock

# the big work items saturated, bookkeeping pale; a cold compile (orange-red) against a cache
# load (green) is the contrast an operator looks for; unlogged/failed/incomplete also hatched
PHASE_COLORS = {
    "process_start": "#9aa5b1",
    "model_load": "#6baed6",
    "weights_load": "#2171b5",
    "init_engine": "#bcbddc",
    "dynamo_transform": "#fdae6b",
    "compile": "#e6550d",
    "compile_cache_load": "#31a354",
    "memory_profiling": "#756bb1",
    "profiling_run": "#9e9ac8",
    "kv_cache_init": "#e7ba52",
    "graph_capture": "#637939",
    "api_server_start": "#17becf",
    "unlogged": "#e0e0e0",
    "failed": "#d62728",
    "incomplete": "#bdbdbd",
}
HATCHES = {"unlogged": "////", "failed": "xx", "incomplete": ".."}
ROW_IN = 0.3  # inches per boot


def phase_order(timelines: Sequence[list[dict]]) -> list[str]:
    """The phases that occur in any of the timelines, in the order a boot runs them."""
    seen = {p["phase"] for tl in timelines for p in tl}
    return [p for p in PHASES if p in seen]


def timeline_figure(docs: Sequence[dict], timelines: dict[int, list[dict]], *, clock: Clock | None = None) -> Figure:
    """The chart of `docs`' timelines (boot id -> timeline.phases rows), oldest boot on top;
    the caller saves and closes it (plot.save)."""
    from bootlog.render.plot import DPI, FONT, load_pyplot, one_format, plain, text_px, tick_label, zone_words
    from bootlog.render.render import fmt_value

    plt = load_pyplot()
    n = len(docs)
    rows = [timelines.get(d["boot"]["id"]) or [] for d in docs]
    order = phase_order(rows)
    labels = [tick_label(d, clock).replace("\n", "  ") + "  " + plain(_status(d), 40) for d in docs]
    fig = plt.figure(figsize=(12.5, 2.0), dpi=DPI)
    try:
        renderer = fig.canvas.get_renderer()
        left_in = max(text_px(renderer, s)[0] for s in labels) / DPI + 0.25
        right_in = max((text_px(renderer, p)[0] for p in order), default=40) / DPI + 0.7
        bottom_in, top_in = 0.6, 0.45
        height_in = bottom_in + max(1.2, ROW_IN * n) + top_in
        width_in = 12.5
        fig.set_size_inches(width_in, height_in)
        ax = fig.add_axes(
            (
                left_in / width_in,
                bottom_in / height_in,
                (width_in - left_in - right_in) / width_in,
                max(1.2, ROW_IN * n) / height_in,
            )
        )
        longest = 0.0
        for y, tl in enumerate(rows):
            left = 0.0
            for p in tl:
                ax.barh(
                    y,
                    p["s"],
                    left=left,
                    height=0.72,
                    color=PHASE_COLORS.get(p["phase"], "#888888"),
                    hatch=HATCHES.get(p["phase"]),
                    edgecolor="white" if p["phase"] not in HATCHES else "#888888",
                    linewidth=0.3,
                )
                left += p["s"]
            longest = max(longest, left)
            total = f"{fmt_value(round(left))} s" if tl else "no line times"
            ax.text(left, y, " " + total, va="center", ha="left", fontsize=FONT, color="#333333")
        # one legend entry per phase that occurs, in boot order
        for phase in order:
            ax.barh(
                [0],
                [0],
                color=PHASE_COLORS.get(phase, "#888888"),
                hatch=HATCHES.get(phase),
                edgecolor="#888888" if phase in HATCHES else "white",
                label=phase,
            )
        ax.set_xlim(0, max(longest, 1.0) * 1.1)  # (room for the totals)
        ax.set_ylim(n - 0.5, -0.5)  # oldest on top, as the history table reads
        ax.set_yticks(range(n))
        ax.set_yticklabels(labels, fontsize=FONT)
        ax.tick_params(axis="x", labelsize=FONT)
        one_format(ax.xaxis)
        ax.set_xlabel(
            "seconds from the boot's first line to ready (a boot that never got ready: to its last line)",
            fontsize=FONT + 0.5,
        )
        ax.grid(True, axis="x", alpha=0.3)
        if order:  # (no boot with a line time: no phase to name, and matplotlib warns on stderr)
            ax.legend(fontsize=FONT, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0, frameon=False)
        fig.suptitle(
            f"Where each boot's time went ({n} boot{'s' if n != 1 else ''}; starts in {zone_words(clock)})",
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


def _status(doc: dict) -> str:
    b = doc["boot"]
    if b.get("failure"):
        return f"{b.get('status')} ({b['failure']})"
    return str(b.get("status") or "")


def timeline_png(docs: Sequence[dict], timelines: dict[int, list[dict]], *, clock: Clock | None = None) -> bytes:
    from bootlog.render.plot import save

    return save(timeline_figure(docs, timelines, clock=clock))
