"""One figure across boots as a PNG: failed boots marked, config changes annotated.

matplotlib is an optional extra (`pip install 'bootlog[plot]'`); it is imported only here,
inside the functions, with the headless Agg backend.
"""
from __future__ import annotations

import io
from pathlib import Path
from typing import Sequence

from bootlog.errors import BootlogError
from bootlog.report import metric_values

# Config keys that change with every boot or say nothing about capacity; never annotated.
_NOISY_CONFIG = {"seed", "served_model_name", "model_tag", "port", "host"}
# Shown first when several keys change at once: the ones that move capacity figures.
_KEY_CONFIG = ("max_model_len", "max_num_seqs", "kv_cache_dtype", "gpu_memory_utilization",
               "kv_cache_memory_bytes", "max_num_batched_tokens", "tensor_parallel_size",
               "enable_prefix_caching", "quantization", "enforce_eager", "model")


def _matplotlib():
    try:
        import matplotlib
    except ImportError:
        raise BootlogError("plots need matplotlib: pip install 'bootlog[plot]'") from None
    matplotlib.use("Agg")  # headless: no display on servers and in CI
    import matplotlib.pyplot as plt

    return plt


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
            moved.append(f"{k} {a}→{b}" if len(a) + len(b) <= 40 else f"{k} changed")
        if moved:
            out.append((i, moved))
    return out


def series(docs: Sequence[dict], metric: str) -> dict[str, list[float | None]]:
    """Label -> one value per boot (None = no point).

    The main series holds the boots whose ranks agree (the usual case, one value per boot).
    A boot whose ranks disagree is shown instead as one point per rank, in series
    "METRIC rank N", so a TP8 outlier rank is visible without drawing eight lines for everyone.
    """
    per_boot = [metric_values(d, metric) for d in docs]
    out: dict[str, list[float | None]] = {metric: [None] * len(docs)}
    if not any(per_boot):  # not a printed metric: any numeric history column (faults, a config
        from bootlog.report import figure  # key such as max_model_len, runtime.max.X)

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


def _tick(doc: dict) -> str:
    """`#12 10-02 16:53` — the boot id, and its start when the log gave a time."""
    boot = doc["boot"]
    start = str(boot.get("started_at") or "")
    # ISO text from the store: YYYY-MM-DDTHH:MM...; show month-day and minute
    when = f" {start[5:10]} {start[11:16]}" if len(start) >= 16 and start[10] == "T" else ""
    return f"#{boot['id']}{when}"


def render_png(docs: Sequence[dict], metric: str, *, title: str | None = None, fmt: str = "png") -> bytes:
    """The plot as PNG bytes (or `fmt`: svg, pdf)."""
    if not docs:
        raise BootlogError("no boots stored to plot")
    lines = series(docs, metric)
    if all(v is None for vals in lines.values() for v in vals):
        raise BootlogError(f"no stored boot has the figure {metric!r}")
    plt = _matplotlib()
    from matplotlib.ticker import FuncFormatter
    n = len(docs)
    xs = list(range(n))
    fig, ax = plt.subplots(figsize=(max(6.0, min(16.0, 0.35 * n + 4)), 4.2), dpi=110)
    try:
        for label, vals in lines.items():
            # NaN breaks the line: a boot without the figure is a gap, not an interpolation
            main = label == metric
            ax.plot(xs, [float("nan") if v is None else v for v in vals], marker="o" if main else ".",
                    ms=4 if main else 6, lw=1.4 if main else 0, label=label)
        ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:,.6g}"))
        ymin, ymax = ax.get_ylim()
        # failed boots, and ready ones whose engine then died serving (a failure set)
        failed = [x for x, d in zip(xs, docs) if d["boot"].get("status") == "failed" or d["boot"].get("failure")]
        if failed:
            # Failed boots rarely print the figure; mark them on the floor so they are still seen.
            ax.scatter(failed, [ymin] * len(failed), marker="X", s=70, color="crimson", zorder=5,
                       label="failed boot (or died serving)", clip_on=False)
            for x in failed:
                b = docs[x]["boot"]
                why = b.get("failure") or "failed"
                why = why if b.get("status") == "failed" else f"died serving: {why}"
                ax.annotate(why, xy=(x, ymin), xytext=(5, 4), textcoords="offset points",
                            fontsize=7, color="crimson")
        for i, moved in config_changes(docs):
            ax.axvline(i - 0.5, color="grey", ls="--", lw=0.8)
            # the most important change only: a rotated note longer than the axes gets clipped
            text = moved[0] if len(moved[0]) <= 40 else moved[0][:39] + "…"
            text += f" (+{len(moved) - 1})" if len(moved) > 1 else ""
            ann = ax.annotate(text, xy=(i - 0.5, ymax), xytext=(2, -4), textcoords="offset points",
                              rotation=90, va="top", ha="left", fontsize=7, color="dimgrey", clip_on=True)
            ann.set_in_layout(False)  # long notes must not squeeze the plot
        ax.set_ylim(ymin, ymax)
        step = max(1, n // 25)
        ax.set_xticks(xs[::step])
        ax.set_xticklabels([_tick(d) for d in docs][::step], rotation=45, ha="right", fontsize=8)
        ax.set_xlabel("boot (id and start time, in the order stored)")
        unit = next((m.get("unit") for d in docs for m in d.get("metrics", []) if m["name"] == metric), None)
        ax.set_ylabel(f"{metric} [{unit}]" if unit else metric)
        ax.set_title(title or f"{metric} across {n} boot{'s' if n != 1 else ''}")
        ax.grid(True, alpha=0.3)
        # beside the axes: inside it would cover points or the config-change notes
        ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0)
        fig.tight_layout()
        buf = io.BytesIO()
        fig.savefig(buf, format=fmt)
        return buf.getvalue()
    finally:
        plt.close(fig)


FORMATS = ("png", "svg", "pdf")


def plot(docs: Sequence[dict], metric: str, out: str | Path) -> Path:
    """Write the plot of `metric` to `out`, as PNG, SVG or PDF by its suffix (none: PNG)."""
    out = Path(out)
    fmt = out.suffix.lower().lstrip(".") or "png"
    if fmt not in FORMATS:
        raise BootlogError(f"cannot write a .{fmt} plot: name the file .png, .svg or .pdf")
    if not out.parent.exists():
        raise BootlogError(f"directory {out.parent} does not exist")
    out.write_bytes(render_png(docs, metric, fmt=fmt))
    return out
