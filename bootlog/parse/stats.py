"""Periodic stats lines ("Avg prompt throughput: ..."): parts joined with ", " whose set and order
changed by release, read whole (STATS_WORDINGS, stats_line) or part by part."""

from __future__ import annotations

import re as _re
from typing import Any

from bootlog.parse.hits import NUM, Hit, compile_rx
from bootlog.parse.vline import PREFIX

# One pass over "Key: value" parts; the key decides the name.  Unknown parts are ignored, so new
# parts (KV fetch, Corrupted, ...) do not break the line.
# (a key starts a word and is at most 48 characters: else a line with a long run of letters costs
# a scan to the run's end from each capital in it; 20,000 "A"s took 1 s)
_STAT_PART = compile_rx(r"(?<![A-Za-z])(?P<k>[A-Z][A-Za-z +]{0,48}): (?P<v>-?\d+(?:\.\d+)?|nan)")
_STAT_KEYS: dict[str, str] = {
    "Avg prompt throughput": "prompt_throughput_tps",
    "Avg generation throughput": "generation_throughput_tps",
    "Running": "running_reqs",
    "Waiting": "waiting_reqs",
    "Pending": "waiting_reqs",  # V0 name of the waiting queue
    "Swapped": "swapped_reqs",
    "Deferred": "deferred_reqs",
    "Preemptions": "preemptions",
    "Corrupted": "corrupted_reqs",
    "Prefix cache hit rate": "prefix_cache_hit_rate_pct",
    "External prefix cache hit rate": "external_prefix_cache_hit_rate_pct",
    "MM cache hit rate": "mm_cache_hit_rate_pct",
}
_V0_PREFIX = compile_rx(r"Prefix cache hit rate: GPU: (?P<gpu>" + NUM + r"|nan)%, CPU: (?P<cpu>" + NUM + r"|nan)%")
_ENGINE_IDX = compile_rx(r"Engine (\d{3}): ")
_AGG = compile_rx(r"(\d+) Engines Aggregated: ")


def _stats_hit(values: dict[str, float], msg: str) -> list[Hit]:
    detail: dict[str, Any] = {}
    if e := _ENGINE_IDX.search(msg):
        detail["engine_index"] = int(e.group(1))
    if a := _AGG.search(msg):
        detail["engines_aggregated"] = int(a.group(1))
    return [Hit("stat", "stats", values, None, "", detail)]


def stats_post(m: Any, msg: str) -> list[Hit] | None:
    values: dict[str, float] = {}
    usage_seen = False
    if v0p := _V0_PREFIX.search(msg):
        values["prefix_cache_hit_rate_pct"] = float(v0p["gpu"])
        values["cpu_prefix_cache_hit_rate_pct"] = float(v0p["cpu"])
    for part in _STAT_PART.finditer(msg):
        key = part["k"]
        if key.endswith("KV cache usage"):
            # "GPU KV cache usage" (XPU/CPU/TPU... v0.30+); V0 adds "CPU KV cache usage" after it
            name = "cpu_kv_cache_usage_pct" if usage_seen and key.startswith("CPU") else "kv_cache_usage_pct"
            usage_seen = True
        else:
            name = _STAT_KEYS.get(key)
        if name and name not in values:
            values[name] = float(part["v"])
    return _stats_hit(values, msg) if values else None


# The stats wordings, most common first: the whole message, a named group per figure.  A stats
# message is read by the first that matches it, else part by part (stats_post); a whole line in
# the usual shape (vline.PREFIX, then a wording) is read in one match (stats_line: most lines of
# a big log are these).
_FNUM = r"(?:-?\d+(?:\.\d+)?|nan)"
_THROUGHPUT = (
    r"Avg prompt throughput: (?P<prompt_throughput_tps>" + _FNUM + r") tokens/s, "
    r"Avg generation throughput: (?P<generation_throughput_tps>" + _FNUM + r") tokens/s, "
    r"Running: (?P<running_reqs>\d+) reqs, "
)
STATS_WORDINGS: tuple[str, ...] = (
    # V1 v0.7.3-v0.29 in its everyday shape (no optional part)
    r"(?:Engine \d{3}: )?" + _THROUGHPUT + r"Waiting: (?P<waiting_reqs>\d+) reqs, "
    r"GPU KV cache usage: (?P<kv_cache_usage_pct>" + _FNUM + r")%, "
    r"Prefix cache hit rate: (?P<prefix_cache_hit_rate_pct>" + _FNUM + r")%",
    # V1 v0.7.1+ ("Engine 000: " v0.8.3+; Deferred v0.20+; "<DEV> KV cache usage" v0.30+;
    # optional parts Preemptions, Prefix cache, Corrupted, External prefix cache, MM cache)
    r"(?:Engine \d{3}: )?" + _THROUGHPUT + r"Waiting: (?P<waiting_reqs>\d+) reqs"
    r"(?:, Deferred: (?P<deferred_reqs>\d+) reqs)?(?:, Preemptions: (?P<preemptions>\d+))?"
    r",? [A-Z]{2,4} KV cache usage: (?P<kv_cache_usage_pct>" + _FNUM + r")%"
    r"(?:, Prefix cache hit rate: (?P<prefix_cache_hit_rate_pct>" + _FNUM + r")%)?"
    r"(?:, Corrupted: (?P<corrupted_reqs>\d+) reqs)?"
    r"(?:, External prefix cache hit rate: (?P<external_prefix_cache_hit_rate_pct>" + _FNUM + r")%)?"
    r"(?:, MM cache hit rate: (?P<mm_cache_hit_rate_pct>" + _FNUM + r")%)?\.?",
    # V0 v0.3.1-v0.11
    _THROUGHPUT + r"Swapped: (?P<swapped_reqs>\d+) reqs, "
    r"Pending: (?P<waiting_reqs>\d+) reqs, GPU KV cache usage: (?P<kv_cache_usage_pct>" + _FNUM + r")%, "
    r"CPU KV cache usage: (?P<cpu_kv_cache_usage_pct>" + _FNUM + r")%\.?",
)
STATS_LITERAL = "Avg prompt throughput: "  # in every wording: the stats entry's literal
# (fullmatch, figure names: the wording's groups in order)
_STATS_MSG = [(rx.fullmatch, tuple(rx.groupindex)) for rx in map(_re.compile, STATS_WORDINGS)]
_STATS_LINE = [
    (_re.compile(f"{PREFIX}(?P<msg>{body})", _re.ASCII).fullmatch, names, len(names))
    for body, (_, names) in zip(STATS_WORDINGS, _STATS_MSG)
]


def stats_line(text: str) -> tuple[Any, tuple[str, ...], list] | None:
    """(the match, figure names, values: float or None where the line has no such part) of a
    whole stats line in the usual shape: vline.PREFIX (its groups give the VLine:
    vline.from_prefix), then one of STATS_WORDINGS (group "msg"); None for any other line (it goes
    the general way: vline.parse_line, then match())."""
    for fullmatch, names, n in _STATS_LINE:
        m = fullmatch(text)
        if m is not None:
            return m, names, [float(x) if x is not None else None for x in m.groups()[-n:]]
    return None


def stats_entry_post(m: Any, msg: str) -> list[Hit] | None:
    for fullmatch, names in _STATS_MSG:
        w = fullmatch(msg)
        if w is not None:
            vals = {k: float(x) for k, x in zip(names, w.groups()) if x is not None}
            return _stats_hit(vals, msg) if vals else None
    return stats_post(m, msg)


def bare_running_post(m: Any, msg: str) -> list[Hit] | None:
    # v0.7.0 printed only "Running: N reqs, Waiting: M reqs "; later lines with throughput are
    # handled by the "Avg prompt throughput" entry and must not be counted twice.
    return None if "Avg prompt throughput" in msg else stats_post(m, msg)


# (regex, figure): V1's "SpecDecoding metrics:" line, V0's "Speculative metrics:" (fractions)
_SPEC_V1 = (
    (compile_rx(r"(?:Avg )?Draft acceptance rate: (" + NUM + r"|nan)%"), "spec_acceptance_rate_pct"),
    (compile_rx(r"Mean acceptance length: (" + NUM + r"|nan)"), "spec_mean_acceptance_length"),
    (compile_rx(r"Accepted: (\d+) tokens"), "spec_accepted_tokens"),
    (compile_rx(r"Drafted: (\d+) tokens"), "spec_drafted_tokens"),
)
_SPEC_V0 = (
    (compile_rx(r"Draft acceptance rate: (" + NUM + r"|nan)(?!%)\b"), "spec_acceptance_rate_pct"),
    (compile_rx(r"System efficiency: (" + NUM + r"|nan)\b"), "spec_system_efficiency_pct"),
)


def spec_post(m: Any, msg: str) -> list[Hit] | None:
    v1 = "SpecDecoding metrics:" in msg
    values: dict[str, float] = {}
    for rx, name in _SPEC_V1 if v1 else _SPEC_V0:
        r = rx.search(msg)
        if r:  # V0 prints fractions: 0.651 -> 65.1 %
            values[name] = float(r.group(1)) if v1 else round(float(r.group(1)) * 100, 6)
    return [Hit("stat", "stats", values, None, "", {"part": "spec_decode"})] if values else None
