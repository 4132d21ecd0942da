"""The vLLM server's own /metrics, read once by the hook after ready (and after its probe):
what the log does not say, and what the log should agree with.

    read(text) -> ServerMetrics(figures={"metrics_num_gpu_blocks": 1024, "metrics_block_size": 128,
                                         "metrics_kv_cache_tokens": 131072, "metrics_requests": 3, ...},
                                cache_dtype="auto")
    kv_disagreement(show) -> "/metrics says 1,024 blocks x 128 tokens = 131,072 KV cache tokens;
                              the log says 130,000 (kv_cache_tokens)"   (from the stored figures)

* `vllm:cache_config_info` (an info gauge: its labels are the values) gives the KV pool the
  engine allocated, `num_gpu_blocks` x `block_size` tokens, and its `cache_dtype`.  The log's
  "KV cache size: N tokens" is the same pool: a disagreement is a finding (verdict.boot_problem:
  DRIFT, in the hook, check, diff, the report and the OpenMetrics verdict alike).
* Counters at probe time (they include the probe's own requests): finished requests
  (`vllm:request_success_total`, every finished_reason), prompt and generation tokens,
  preemptions (`vllm:num_preemptions_total`; a preemption right after a deploy means the KV pool
  is already too small for the traffic).  Several engines (data parallel): summed.

The exposition text is read by the rules of the Prometheus text format (escaped label values,
a `_total` sample of a counter family, NaN, optional timestamps); a line that is none of them is
skipped.  Standard library only (and bootlog.safe), like probe.py.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any, Iterator

from bootlog.figures import BY_NAME
from bootlog.figures import FIGURES as _FIGURES
from bootlog.safe import one_line
from bootlog.shown import Shown

# figure -> (unit, what it is), from the one list of figures (bootlog.figures)
FIGURES: dict[str, tuple[str, str]] = {f.name: (f.unit, f.help) for f in _FIGURES if f.name.startswith("metrics_")}
# capacity-like (the engine's allocation: deterministic for an image + config + machine) vs
# counters (they move with traffic, judged like the probe's timings)
CAPACITY = tuple(n for n in FIGURES if BY_NAME[n].kind == "capacity")
COUNTERS = {  # figure -> the counter family summed
    "metrics_requests": "vllm:request_success",
    "metrics_prompt_tokens": "vllm:prompt_tokens",
    "metrics_generation_tokens": "vllm:generation_tokens",
    "metrics_num_preemptions": "vllm:num_preemptions",
}
INFO = "vllm:cache_config_info"

_SAMPLE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?[ \t]+(\S+)(?:[ \t]+\S+)?[ \t]*$")
_LABEL = re.compile(r'\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*=\s*"((?:[^"\\]|\\.)*)"\s*(?:,|$)')
_UNESCAPE = re.compile(r"\\(.)")


@dataclass
class ServerMetrics:
    """What /metrics said: numeric figures (FIGURES' names) and the cache dtype (text)."""

    figures: dict[str, float] = field(default_factory=dict)
    cache_dtype: str | None = None


def samples(text: str) -> Iterator[tuple[str, dict[str, str], float]]:
    """(name, labels, value) of every sample line of Prometheus/OpenMetrics text."""
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        m = _SAMPLE.match(line)
        if m is None:
            continue
        try:
            value = float(m.group(3))
        except ValueError:
            continue
        labels: dict[str, str] = {}
        body = m.group(2) or ""
        at = 0
        while at < len(body.rstrip()):
            lm = _LABEL.match(body, at)
            if lm is None:
                break
            labels[lm.group(1)] = _UNESCAPE.sub(lambda e: "\n" if e.group(1) == "n" else e.group(1), lm.group(2))
            at = lm.end()
        else:
            yield m.group(1), labels, value


def _int(text: str | None) -> int | None:
    try:
        n = int(str(text))
    except (TypeError, ValueError):
        return None
    return n if n >= 0 else None


def read(text: str) -> ServerMetrics:
    """The figures of a vLLM server's /metrics text (module docstring); absent ones are left out."""
    out = ServerMetrics()
    sums: dict[str, float] = {}
    family = {fam: fig for fig, fam in COUNTERS.items()}
    info: dict[str, str] | None = None
    for name, labels, value in samples(text):
        if name == INFO and info is None:
            info = labels  # (one engine's config: every engine of a server has the same)
            continue
        fam = name[: -len("_total")] if name.endswith("_total") else name
        fig = family.get(fam)
        if fig is not None and math.isfinite(value):
            sums[fig] = sums.get(fig, 0.0) + value
    if info is not None:
        blocks, size = _int(info.get("num_gpu_blocks")), _int(info.get("block_size"))
        if blocks is not None:
            out.figures["metrics_num_gpu_blocks"] = blocks
        if size is not None:
            out.figures["metrics_block_size"] = size
        if blocks is not None and size is not None:
            out.figures["metrics_kv_cache_tokens"] = blocks * size
        dtype = info.get("cache_dtype")
        out.cache_dtype = dtype if dtype not in (None, "", "None") else None
    out.figures.update(sums)
    return out


def _n(v: float) -> str:
    return f"{int(v):,}" if float(v).is_integer() else f"{v:,}"


def kv_disagreement(show: Shown | dict[str, Any]) -> str | None:
    """The line saying that the KV pool /metrics gave (stored as metrics_kv_cache_tokens) is not
    the one the log printed (kv_cache_tokens), for a boot (a show --json document or its record);
    None when they agree or either is missing.  A stored fact: verdict.boot_problem judges it (DRIFT)."""
    metrics = Shown.of(show).metrics

    def values(name: str) -> list[float]:
        return sorted({m.value for m in metrics if m.name == name})

    server, logged = values("metrics_kv_cache_tokens"), values("kv_cache_tokens")
    if not server or not logged or all(v in server for v in logged):
        return None
    blocks, size = values("metrics_num_gpu_blocks"), values("metrics_block_size")
    how = f"{_n(blocks[0])} blocks x {_n(size[0])} tokens = " if blocks and size else ""
    return (
        f"/metrics says {how}{' / '.join(_n(v) for v in server)} KV cache tokens; the log says "
        f"{' / '.join(_n(v) for v in logged)} (kv_cache_tokens)"
    )


def dtype_disagreement(server: ServerMetrics, show: dict[str, Any]) -> str | None:
    """The line saying that /metrics' cache_dtype is not the one the log's config printed."""
    config = show.get("config") or {}
    said = config.get("cache_dtype", config.get("kv_cache_dtype"))
    if server.cache_dtype is None or said in (None, "") or str(said) == server.cache_dtype:
        return None
    return f"/metrics says cache_dtype {one_line(server.cache_dtype, 40)}; the log says {one_line(said, 40)}"
