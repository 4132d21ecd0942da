"""One boot's runtime as series over time: KV cache usage, running/waiting requests, prefix cache
hit rate, gdn_hip faults (issue 25), from its periodic statistics lines and its events.

Panels are drawn only for series the boot has; engine deaths (oom, worker_died) are vertical
lines on every panel.  A boot that served for days has hundreds of thousands of stats lines:
each series is cut into at most MAX_POINTS buckets and a bucket keeps its largest value, so a
peak is never averaged away.  matplotlib is imported inside the functions only.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Iterable, Sequence

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from bootlog.render.logclock import Clock

# (panel title, unit, sample keys drawn in it)
PANELS = (
    ("KV cache usage", "%", ("kv_cache_usage_pct",)),
    ("requests", "reqs", ("running_reqs", "waiting_reqs")),
    ("prefix cache hit rate", "%", ("prefix_cache_hit_rate_pct",)),
)
DEATH_STYLE = {"oom": {"color": "crimson", "ls": "--"}, "worker_died": {"color": "black", "ls": ":"}}
DEATHS = tuple(DEATH_STYLE)
MAX_POINTS = 2000


def _series(samples: Iterable, key: str, clock: Clock | None) -> tuple[list[datetime], list[float]]:
    xs, ys = [], []
    for s in samples:
        v = s.values.get(key)
        t = clock.at(s.ts) if clock is not None else None
        if v is None or t is None:
            continue
        xs.append(t)
        ys.append(float(v))
    if len(xs) > MAX_POINTS:  # bucket maxima (module docstring)
        k = -(-len(xs) // MAX_POINTS)
        xs, ys = xs[::k], [max(ys[i : i + k]) for i in range(0, len(ys), k)]
    return xs, ys


def faults_over_time(events: Sequence[dict], clock: Clock | None) -> tuple[list[datetime], list[float]]:
    """Cumulative gdn_hip faults at each fault line's time (a line may stand for a run of
    faults: verdict.count_of counts it as diff does)."""
    from bootlog.judge.verdict import count_of
    from bootlog.shown import EventRow

    xs: list[datetime] = []
    ys: list[float] = []
    total = 0
    for e in events:
        if e.get("kind") != "gdn_hip_fault":
            continue
        t = clock.at(e.get("ts")) if clock is not None else None
        if t is None:
            continue
        total += count_of([EventRow.of(e)])
        xs.append(t)
        ys.append(total)
    return xs, ys


def runtime_figure(doc: dict, samples: Sequence, *, clock: Clock | None = None) -> Figure | None:
    """The runtime chart of one boot (`doc` a show --json document, `samples` its reads.samples
    rows), or None when it has nothing to draw.  The caller saves and closes it (plot.save)."""
    from bootlog.render.plot import DPI, FONT, load_pyplot, one_format, plain, zone_words

    panels = []
    for title, unit, keys in PANELS:
        lines = {k: _series(samples, k, clock) for k in keys}
        if any(xs for xs, _ in lines.values()):
            panels.append((title, unit, lines))
    fx, fy = faults_over_time(doc.get("events") or [], clock)
    if fx:
        panels.append(("gdn_hip faults (cumulative)", "faults", {"gdn_hip_fault": (fx, fy)}))
    if not panels:
        return None
    plt = load_pyplot()
    from matplotlib.dates import AutoDateLocator, DateFormatter

    zone = clock.zone if clock is not None else None
    fig, axes = plt.subplots(
        len(panels), 1, sharex=True, figsize=(12.5, 1.55 * len(panels) + 0.9), dpi=DPI, squeeze=False
    )
    try:
        deaths = [
            (clock.at(e.get("ts")), e["kind"])
            for e in doc.get("events") or []
            if e.get("kind") in DEATHS and clock is not None and clock.at(e.get("ts")) is not None
        ]
        for row, (ax, (title, unit, lines)) in enumerate(zip(axes[:, 0], panels)):
            top = 0.0
            for key, (xs, ys) in lines.items():
                # a stats line's value holds until the next one: steps, and a dot per line
                ax.plot(xs, ys, lw=1.1, drawstyle="steps-post", marker=".", ms=3, label=key)
                top = max([top, *ys])
            for t, kind in deaths:
                ax.axvline(t, lw=1.1, **DEATH_STYLE[kind], label=kind if row == 0 else None)
            ax.set_ylim(0, top * 1.12 if top > 0 else 1.0)  # (all of these count up from 0)
            ax.set_ylabel(f"{title}\n[{unit}]", fontsize=FONT)
            ax.tick_params(labelsize=FONT)
            one_format(ax.yaxis)
            ax.grid(True, alpha=0.3)
            ax.legend(fontsize=FONT, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0, frameon=False)
        bottom = axes[-1, 0]
        times = [t for _, _, lines in panels for xs, _ in lines.values() for t in xs] + [t for t, _ in deaths]
        span = (max(times) - min(times)).total_seconds()
        # one format for the whole axis, fine enough that no two ticks read the same
        fmt = "%H:%M:%S" if span < 3 * 3600 else "%m-%d %H:%M"
        bottom.xaxis.set_major_locator(AutoDateLocator(tz=zone, minticks=3, maxticks=9))
        bottom.xaxis.set_major_formatter(DateFormatter(fmt, tz=zone))
        day = min(times).strftime("%Y-%m-%d")
        when = f" on {day}" if fmt.startswith("%H") and day == max(times).strftime("%Y-%m-%d") else ""
        bottom.set_xlabel(f"time{when} ({zone_words(clock)})", fontsize=FONT + 0.5)
        b = doc["boot"]
        n = sum(1 for _ in samples)
        fig.suptitle(
            plain(f"boot #{b['id']}: runtime from {n:,} statistics lines", 100), x=0.08, ha="left", fontsize=FONT + 2
        )
        fig.subplots_adjust(
            left=0.08,
            right=0.82,
            top=1 - 0.45 / fig.get_size_inches()[1],
            hspace=0.25,
            bottom=0.55 / fig.get_size_inches()[1],
        )
        return fig
    except BaseException:
        plt.close(fig)
        raise


def runtime_png(doc: dict, samples: Sequence, *, clock: Clock | None = None) -> bytes | None:
    from bootlog.render.plot import save

    fig = runtime_figure(doc, samples, clock=clock)
    return None if fig is None else save(fig)
