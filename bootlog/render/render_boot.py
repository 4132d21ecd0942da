"""Human rendering of one boot (the `show` command's text twin of `show --json`)."""

from __future__ import annotations

import json
from collections import defaultdict
from typing import TYPE_CHECKING, Any

from bootlog.render.bursts import gdn_summary
from bootlog.render.render import fmt_value
from bootlog.safe import fit, pad, term, width
from bootlog.judge.timeline import render_bar

if TYPE_CHECKING:
    from bootlog.render.logclock import Clock


def _t(v: Any) -> str:  # one field of log text, on one line, controls escaped
    return term(v, one_line=True)


def _ranked(values: list[tuple[int | None, Any]]) -> str:
    if len({v for _, v in values}) == 1:
        return fmt_value(values[0][1])
    return "  ".join(f"{fmt_value(v)}" + (f" (TP{r})" if r is not None else "") for r, v in values)


def _timeline_lines(boot: dict, phases: list[dict]) -> list[str]:
    """Where the boot's time went: the bar of timeline.render_bar, indented (pure ASCII, no log
    text).  A boot that never got ready is timed to its last line."""
    bar = render_bar(phases)
    if not bar:
        return []
    to = "ready" if boot.get("ready_at") else f"its last line ({_t(boot.get('status'))})"
    return [f"timeline  first line to {to}; phases in show --json"] + ["  " + ln for ln in bar.splitlines()]


# the boot fields `ended` and `kv_cache_sized_by` in words
ENDED = {
    "clean_stop": "clean_stop (a stop was asked for: what the engine printed after it is the stop's)",
    "died": "died (the engine died serving)",
    "failed": "failed (at start-up)",
    "log_ends": "log_ends (nothing in the log says how the process ended)",
}
SIZED = {
    "explicit": "explicit (the size was given: its token count is exact)",
    "measured": "measured (the engine measured free memory: the token count moves a little)",
}


def render_show(data: dict, clock: "Clock | None" = None, cols: int | None = None) -> str:
    """Everything printed is log text made safe (safe.term): one line per field, each cut to
    `cols` columns (None: whole, as for a pipe).  clock: the log's (logclock); times are shown on
    it, with the zone, and started_at says where the zone came from."""
    b = data["boot"]
    out = [f"boot #{b['id']}  {_t(b['status'])}" + (f" ({_t(b['failure'])})" if b.get("failure") else "")]
    for key in ("vllm_version", "engine", "model", "container", "host", "source", "started_at", "ready_at", "ended_at"):
        if b.get(key) is None:
            continue
        when = clock.stamp(b[key]) if clock is not None and key.endswith("_at") else ""
        says = f"  — {clock.says}" if when and key == "started_at" and clock.says else ""
        out.append(f"  {key:<14} {_t(when or b[key])}{_t(says)}")
    out.append(f"  {'lines':<14} {b.get('first_line')}-{b.get('last_line')}")
    if b.get("failure_message"):
        # (an exception's text continued on indented lines: each on its own, as printed)
        first, *more = b["failure_message"].split("\n")
        out.append(f"  {'root cause':<14} {_t(first)}")
        out += [f"  {'':<14} {_t(m)}" for m in more]
    burst = gdn_summary(data.get("events") or [])
    if burst:
        out.append(f"  {'gdn_hip':<14} {burst}")
    for e in data.get("events") or []:
        if e["kind"] == "crash_loop":
            out.append(
                f"  {'crash loop':<14} {_t(e['message'])} (boots {', '.join(f'#{i}' for i in e['detail']['boots'])})"
            )

    if b.get("ended"):
        out.append(f"  {'ended':<14} {_t(ENDED.get(b['ended'], b['ended']))}")
    if b.get("kv_cache_sized_by"):
        out.append(f"  {'kv sized by':<14} {_t(SIZED.get(b['kv_cache_sized_by'], b['kv_cache_sized_by']))}")
    out += _timeline_lines(b, data.get("timeline") or [])

    dep = data.get("deploy") or {}
    if dep:
        out.append("deploy")
        for key in ("image", "image_digest", "command", "restart_count", "started_at", "exit_code", "oom_killed"):
            v = dep.get(key)
            if key == "started_at" and clock is not None and v is not None:
                v = clock.stamp(v) or v  # (podman's own time of the start, on the log's clock)
            if v is not None:
                out.append(f"  {key:<14} {_t(' '.join(map(str, v)) if isinstance(v, list) else v)}")
        for m in dep.get("mounts") or []:
            if isinstance(m, dict):
                ro = " (ro)" if m.get("rw") is False else ""
                where = f"{_t(m.get('destination'))} ← {_t(m.get('source'))}"
                out.append(f"  {'mount':<14} {where}{ro}")
        for key in ("env", "env_file"):
            if dep.get(key):
                out.append(f"  {key:<14} {len(dep[key])} variables (show --json lists them)")

    grouped: dict[str, list[tuple[int | None, Any]]] = defaultdict(list)
    units: dict[str, str] = {}
    for m in data.get("metrics", []):
        grouped[_t(m["name"])].append((m.get("rank"), m["value"]))
        units[_t(m["name"])] = _t(m.get("unit") or "")
    if grouped:
        out.append("figures")
        w = max(width(n) for n in grouped)
        from bootlog.judge.compare import bytes_per_token_meaning, margin_meaning

        for name, vals in grouped.items():
            value = f"{_t(_ranked(vals))} {units[name]}".rstrip()
            meaning = margin_meaning(data) if name == "kv_margin_tokens" else None
            if meaning:  # (what the margin means first: a bare -200,704 reads as the worst deploy)
                line = f"  {pad(name, w)}  {meaning}  ({value}: KV tokens − max_num_seqs × max_model_len)"
            else:
                line = f"  {pad(name, w)}  {value}"
            basis = bytes_per_token_meaning(data) if name == "kv_bytes_per_token" else None
            out.append(line + (f"  ({basis})" if basis else ""))

    cfg = data.get("config") or {}
    if cfg:
        out.append("config")
        w = min(max(width(_t(k)) for k in cfg), 40)
        for k in sorted(cfg):
            v = cfg[k]
            text = v if isinstance(v, str) else json.dumps(v) if isinstance(v, (dict, list)) else str(v)  # as printed
            out.append(f"  {pad(_t(k), w)}  {_t(text)}")

    events = data.get("events") or []
    if events:
        out.append("events")
        counts: dict[str, int] = defaultdict(int)
        for e in events:
            counts[e["kind"]] += 1
        for e in events[:30]:
            rank = f" TP{e['rank']}" if e.get("rank") is not None else ""
            msg = (e.get("message") or "").strip()
            stop = " (during the stop)" if (e.get("detail") or {}).get("after_stop") else ""
            out.append(f"  line {e.get('line')}: {_t(e['kind'])}{rank}{stop}  {_t(msg)}")
        if len(events) > 30:
            out.append(f"  … {len(events) - 30} more ({_t(', '.join(f'{k} {n}' for k, n in counts.items()))})")

    rt = data.get("runtime") or {}
    if rt.get("stats_lines"):
        out.append(f"runtime  {rt['stats_lines']} stats lines")
        last, peak = rt.get("last") or {}, rt.get("max") or {}
        for k in sorted(set(last) | set(peak)):
            out.append(f"  {pad(_t(k), 28)} last {_t(fmt_value(last.get(k)))}  max {_t(fmt_value(peak.get(k)))}")
    return "\n".join(fit(ln, cols) for ln in out)
