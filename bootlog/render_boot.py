"""Human rendering of one boot (the `show` command's text twin of `show --json`)."""
from __future__ import annotations

import json
from collections import defaultdict
from typing import Any

from bootlog.console import fmt_num


def _ranked(values: list[tuple[int | None, Any]]) -> str:
    if len({v for _, v in values}) == 1:
        return fmt_num(values[0][1])
    return "  ".join(f"{fmt_num(v)}" + (f" (TP{r})" if r is not None else "") for r, v in values)


def render_show(data: dict) -> str:
    b = data["boot"]
    out = [f"boot #{b['id']}  {b['status']}" + (f" ({b['failure']})" if b.get("failure") else "")]
    for key in ("vllm_version", "engine", "model", "container", "host", "source",
                "started_at", "ready_at", "ended_at"):
        if b.get(key) is not None:
            out.append(f"  {key:<14} {b[key]}")
    out.append(f"  {'lines':<14} {b.get('first_line')}-{b.get('last_line')}")
    if b.get("failure_message"):
        out.append(f"  {'root cause':<14} {b['failure_message']}")
    for e in data.get("events") or []:
        if e["kind"] == "crash_loop":
            out.append(f"  {'crash loop':<14} {e['message']} (boots {', '.join(f'#{i}' for i in e['detail']['boots'])})")

    dep = data.get("deploy") or {}
    if dep:
        out.append("deploy")
        for key in ("image", "image_digest", "command", "restart_count", "started_at", "exit_code", "oom_killed"):
            v = dep.get(key)
            if v is not None:
                text = " ".join(v) if isinstance(v, list) else str(v)
                out.append(f"  {key:<14} {text if len(text) <= 100 else text[:97] + '...'}")
        for key in ("env", "env_file"):
            if dep.get(key):
                out.append(f"  {key:<14} {len(dep[key])} variables (show --json lists them)")

    grouped: dict[str, list[tuple[int | None, Any]]] = defaultdict(list)
    units: dict[str, str] = {}
    for m in data.get("metrics", []):
        grouped[m["name"]].append((m.get("rank"), m["value"]))
        units[m["name"]] = m.get("unit") or ""
    if grouped:
        out.append("figures")
        width = max(len(n) for n in grouped)
        for name, vals in grouped.items():
            out.append(f"  {name:<{width}}  {_ranked(vals)} {units[name]}".rstrip())

    cfg = data.get("config") or {}
    if cfg:
        out.append("config")
        width = min(max(len(k) for k in cfg), 40)
        for k in sorted(cfg):
            v = cfg[k]
            text = v if isinstance(v, str) else json.dumps(v) if isinstance(v, (dict, list)) else str(v)  # as printed
            if len(text) > 100:
                text = text[:97] + "..."
            out.append(f"  {k:<{width}}  {text}")

    events = data.get("events") or []
    if events:
        out.append("events")
        counts: dict[str, int] = defaultdict(int)
        for e in events:
            counts[e["kind"]] += 1
        for e in events[:30]:
            rank = f" TP{e['rank']}" if e.get("rank") is not None else ""
            msg = (e.get("message") or "").strip()
            out.append(f"  line {e.get('line')}: {e['kind']}{rank}  {msg[:120]}")
        if len(events) > 30:
            out.append(f"  … {len(events) - 30} more ({', '.join(f'{k} {n}' for k, n in counts.items())})")

    rt = data.get("runtime") or {}
    if rt.get("stats_lines"):
        out.append(f"runtime  {rt['stats_lines']} stats lines")
        last, peak = rt.get("last") or {}, rt.get("max") or {}
        for k in sorted(set(last) | set(peak)):
            out.append(f"  {k:<28} last {fmt_num(last.get(k))}  max {fmt_num(peak.get(k))}")
    return "\n".join(out)
