"""The pattern catalogue: every wording vLLM used for a boot fact, as data with samples.

One `Pattern` per wording variant: a case-sensitive `literal` every matching line contains (the
prefilter), an unanchored regex (it works on the message part and on a whole raw line) and sample
lines with the values they must give.  A named group called after a docs/figures.md figure (UNITS)
becomes one metric hit, so one line can give several figures; other named groups go into the
hit's `detail`.  `match(msg)` runs the regexes of the literals the line holds only, and keeps the
hits of recently seen lines.  What the entries call on lives beside it: hits.py (Hit, numbers),
reprs.py (config reprs), stats.py (stats lines, most of a big log: STATS_WORDINGS), failures.py
(the figures of an error line).  A new wording is one entry here, with its sample lines.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Any, Callable

import regex as re  # (the catalogue's regexes use its syntax)

from bootlog.figures import FIGURES
from bootlog.parse.hits import NUM, TOK, Hit, compile_rx, decimal, maybe_num, unreadable_number
from bootlog.parse.reprs import dict_at, engine_config_at, kv_list_at
from bootlog.parse.stats import STATS_LITERAL, bare_running_post, spec_post, stats_entry_post, stats_post

# Units of the figures a wording prints (bootlog.figures): a named group with one of these names
# is a metric value.
UNITS: dict[str, str] = {f.name: f.unit for f in FIGURES if f.read}


@dataclass(frozen=True, slots=True)
class Pattern:
    id: str  # unique entry id: name + wording variant
    kind: str  # "metric" | "boot" | "stat" | "event" | "config" | "mark"
    name: str  # metric name, boot field, event kind, "stats" or "config"
    literal: str  # case-sensitive text every matching line contains (prefilter)
    regex: str
    unit: str | None
    samples: tuple[tuple[str, dict], ...]
    # Builds the hits from a match when named groups alone cannot (config dicts, stats lines).
    # Returns None to mean "not really this fact" (e.g. a stats-looking line with no figures).
    post: Callable[[Any, str], list[Hit] | None] | None = field(default=None, compare=False, repr=False)


# ---------------------------------------------------------------------------------------------
# boot identity, config and event hits


def _engine_from_config_line(m: Any, msg: str) -> str | None:
    if m["eng"]:
        return m["eng"].lower()
    # "Initializing an LLM engine" is V0 up to v0.7.0 (fields inline ending ')' to v0.6.4, then
    # '..., use_cached_outputs=True, '), but also opt-in V1 v0.6.4-v0.7.0, which printed the bare
    # VllmConfig ending with compilation_config={...}.  Say nothing when the line does not tell.
    ver = m["vllm_version"] or ""
    old = re.match(r"0\.(\d+)\.(\d+)", ver, re.ASCII)
    if (
        "use_cached_outputs=" in msg
        or msg.rstrip().endswith(")")
        or (old and (int(old[1]), int(old[2])) < (6, 4))
        or not ver
    ):  # (v0.3.x printed no version and had no V1)
        return "v0"
    return "v1" if "compilation_config=" in msg else None


def _engine_config_post(m: Any, msg: str) -> list[Hit] | None:
    hits = [Hit("boot", "vllm_version", m["vllm_version"], None, "", {})] if m["vllm_version"] else []
    engine = _engine_from_config_line(m, msg)
    if engine:
        hits.append(Hit("boot", "engine", engine, None, "", {}))
    cfg = engine_config_at(msg, m.end())
    if cfg.get("model"):
        hits.append(Hit("boot", "model", cfg["model"], None, "", {"source": "engine_config"}))
    hits.append(Hit("config", "config", cfg, None, "", {"source": "engine_config"}))
    return hits


def _args_post(source: str) -> Callable[[Any, str], list[Hit] | None]:
    def post(m: Any, msg: str) -> list[Hit] | None:
        cfg = dict((dict_at if source == "non_default_args" else kv_list_at)(msg, m.end()))
        model = cfg.get("model") or cfg.get("model_tag")
        hits = [Hit("boot", "model", model, None, "", {"source": source})] if model and model != "None" else []
        return hits + [Hit("config", "config", cfg, None, "", {"source": source})]

    return post


def _chunked_post(m: Any, msg: str) -> list[Hit] | None:
    cfg = {"max_num_batched_tokens": m["max_num_batched_tokens"]}
    return [Hit("config", "config", cfg, None, "", {"source": "chunked_prefill"})]


def _message_post(what: str) -> Callable[[Any, str], list[Hit] | None]:
    def post(m: Any, msg: str) -> list[Hit] | None:
        detail: dict[str, Any] = {"message": msg.strip(), "what": what}
        detail.update({k: maybe_num(v) for k, v in m.groupdict().items() if v is not None})
        return [Hit("event", "warning", msg.strip(), None, "", detail)]

    return post


_GDN_FIELDS = (
    ("slot", compile_rx(r"\bslot=(\d+)")),
    ("head", compile_rx(r"\bhead=(\d+)")),
    ("limit", compile_rx(r"\blimit=([-+0-9.eE]+|inf|nan)")),
    ("fault_no", compile_rx(r"fault #(\d+)")),
    ("fault_last", compile_rx(r"fault #\d+\s*[-–]\s*#?(\d+)")),  # "fault #1-23": one line for a run
)


def _gdn_fault_post(m: Any, msg: str) -> list[Hit] | None:
    # the fork's HIP kernel guard; fields are read wherever they sit so a reworded guard still counts
    detail: dict[str, Any] = {"kernel": m["kernel"]}
    for key, rx in _GDN_FIELDS:
        f = rx.search(msg, m.end())
        if f:
            detail[key] = maybe_num(f.group(1))
    if (
        isinstance(detail.get("fault_last"), int)
        and isinstance(detail.get("fault_no"), int)
        and detail["fault_last"] >= detail["fault_no"]
    ):
        detail["faults"] = detail["fault_last"] - detail["fault_no"] + 1
    else:
        detail.pop("fault_last", None)
    return [Hit("event", "gdn_hip_fault", msg.strip(), None, "", detail)]


def _with_warmup_post(m: Any, msg: str) -> list[Hit] | None:
    # v0.18-v0.31 print this instead of "torch.compile took" when the two cannot be separated:
    # same figure, flagged so a diff can tell why it grew
    return [Hit("metric", "torch_compile_s", decimal(m["torch_compile_s"]), "s", "", {"includes_warmup": True})]


def _worker_died_post(m: Any, msg: str) -> list[Hit] | None:
    g = m.groupdict()
    detail: dict[str, Any] = {"rank": int(g["rank"])} if g.get("rank") else {}
    if g.get("proc"):
        detail["proc"] = g["proc"]
        r = re.search(r"-(\d+)$", g["proc"], re.ASCII)  # mp name "VllmWorker-<rank>"
        if r and "rank" not in detail:
            detail["rank"] = int(r.group(1))
    if g.get("pid"):
        detail["pid"] = int(g["pid"])
    if g.get("exit_code") and g["exit_code"] != "None":
        detail["exit_code"] = int(g["exit_code"])
    return [Hit("event", "worker_died", msg.strip(), None, "", detail)]


# ---------------------------------------------------------------------------------------------
# the catalogue


def _p(
    id: str,
    kind: str,
    name: str,
    literal: str,
    regex: str,
    samples: list[tuple[str, dict]],
    post: Callable | None = None,
) -> Pattern:
    return Pattern(id, kind, name, literal, regex, UNITS.get(name) if kind == "metric" else None, tuple(samples), post)


# a compile stage's tag ("[backbone] torch.compile took ..."): no "[" inside, so that a run of
# "[" costs one step each, not a scan to the end of the line each (a hostile line of 20,000 took 1 s)
_CTAG = r"(?:\[(?P<compile_tag>[^\[\]:]+)\] )?"
_KV_LINE = r"(?P<device>GPU \+ host|[A-Z][A-Za-z0-9]*) KV cache size: (?P<kv_cache_tokens>" + TOK + r") tokens"
_CONC = (
    r"Maximum concurrency for (?P<max_concurrency_request_tokens>" + TOK + r") tokens per request: "
    r"(?P<max_concurrency>\d+(?:\.\d+)?|nan|inf)x(?!\w)"
)  # ("0x10x" is no 0.00x)

CATALOGUE: tuple[Pattern, ...] = (
    # --- KV cache capacity ------------------------------------------------------------------
    _p(
        "kv_cache_tokens/v1",
        "metric",
        "kv_cache_tokens",
        "KV cache size: ",
        _KV_LINE,
        [
            (
                "(EngineCore_DP0 pid=270) INFO 11-20 09:12:33 [kv_cache_utils.py:1028] GPU KV cache size: 1,350,182 tokens",
                {"kv_cache_tokens": 1350182},
            ),
            (
                "INFO 07-09 14:35:11 [kv_cache_utils.py:578] GPU KV cache size: 69,904 tokens",
                {"kv_cache_tokens": 69904},
            ),
            ("GPU KV cache size: 398,658 tokens", {"kv_cache_tokens": 398658}),
            (
                "(EngineCore pid=270) INFO 11-20 09:12:33 [kv_cache_utils.py:2032] GPU KV cache size: 1,350,182 tokens, "
                "Maximum concurrency for 32,768 tokens per request: 41.20x",
                {"kv_cache_tokens": 1350182, "max_concurrency_request_tokens": 32768, "max_concurrency": 41.2},
            ),
            (
                "GPU KV cache size: 1,350,182 tokens, Maximum concurrency for 262,144 tokens per request: 5.15x",
                {"kv_cache_tokens": 1350182, "max_concurrency_request_tokens": 262144, "max_concurrency": 5.15},
            ),
            (
                "(EngineCore pid=270) INFO 11-20 09:12:33 [kv_cache_utils.py:1147] GPU + host KV cache size: 2,100,000 "
                "tokens, Maximum concurrency for 32,768 tokens per request: 64.09x",
                {"kv_cache_tokens": 2100000, "max_concurrency": 64.09},
            ),
            (
                "(EngineCore pid=270) INFO 11-20 09:12:33 [kv_cache_utils.py:1147] XPU KV cache size: 524,288 tokens, "
                "Maximum concurrency for 8,192 tokens per request: 64.00x",
                {"kv_cache_tokens": 524288},
            ),
            (
                "(EngineCore_DP0 pid=381139) INFO 01-27 22:07:26 [v1/core/kv_cache_utils.py:1305] GPU KV cache size: 152,192 "
                "tokens",
                {"kv_cache_tokens": 152192},
            ),
        ],
    ),
    _p(
        "max_concurrency/all",
        "metric",
        "max_concurrency",
        "Maximum concurrency for ",
        _CONC,
        [
            (
                "INFO 11-20 09:12:33 executor_base.py:116] Maximum concurrency for 32768 tokens per request: 10.52x",
                {"max_concurrency_request_tokens": 32768, "max_concurrency": 10.52},
            ),
            (
                "INFO 11-18 17:11:01 distributed_gpu_executor.py:61] Maximum concurrency for 131072 tokens per request: 3.82x",
                {"max_concurrency_request_tokens": 131072, "max_concurrency": 3.82},
            ),
            (
                "(EngineCore_DP0 pid=270) INFO 11-20 09:12:33 [kv_cache_utils.py:1032] Maximum concurrency for 32,768 tokens "
                "per request: 10.52x",
                {"max_concurrency_request_tokens": 32768, "max_concurrency": 10.52},
            ),
            (
                "Maximum concurrency for 200,704 tokens per request: 1.99x",
                {"max_concurrency_request_tokens": 200704, "max_concurrency": 1.99},
            ),
            (
                "(EngineCore_DP0 pid=4095770) INFO 11-14 05:27:00 [kv_cache_utils.py:1234] Maximum concurrency for 1,024 "
                "tokens per request: 5412.44x",
                {"max_concurrency_request_tokens": 1024, "max_concurrency": 5412.44},
            ),
        ],
    ),
    _p(
        "kv_cache_available_gib/v1",
        "metric",
        "kv_cache_available_gib",
        "Available KV cache memory: ",
        r"Available KV cache memory: (?P<kv_cache_available_gib>" + NUM + r") GiB",
        [
            (
                "(Worker_TP0 pid=412) INFO 11-20 09:12:33 [gpu_worker.py:298] Available KV cache memory: 61.23 GiB",
                {"kv_cache_available_gib": 61.23},
            ),
            (
                "(Worker_TP0 pid=412) INFO 11-20 09:12:33 [gpu_worker.py:772] Available KV cache memory: 40.0 GiB",
                {"kv_cache_available_gib": 40.0},
            ),
            (
                "(EngineCore_DP0 pid=1193328) INFO 10-01 23:05:53 [gpu_worker.py:298] Available KV cache memory: -1.66 GiB",
                {"kv_cache_available_gib": -1.66},
            ),
            (
                "(EngineCore_0 pid=1159) (RayWorkerWrapper pid=345, ip=10.42.11.243) INFO 09-10 23:48:39 [gpu_worker.py:276] "
                "Available KV cache memory: 45.32 GiB [repeated 3x across cluster]",
                {"kv_cache_available_gib": 45.32},
            ),
        ],
    ),
    _p(
        "kv_cache_reserved_gib/kv_cache_memory_bytes",
        "metric",
        "kv_cache_reserved_gib",
        "GiB memory for KV Cache as specified by kv_cache_memory_bytes",
        r"Initial free memory (?P<initial_free_gib>"
        + NUM
        + r") GiB, reserved (?P<kv_cache_reserved_gib>"
        + NUM
        + r") ?GiB memory for KV Cache as specified by kv_cache_memory_bytes",
        [
            (
                "(Worker_TP0 pid=412) INFO 11-20 09:12:33 [gpu_worker.py:240] Initial free memory 78.1796875 GiB, reserved "
                "40.00GiB memory for KV Cache as specified by kv_cache_memory_bytes config and skipped memory profiling. "
                "This does does not respect the gpu_memory_utilization config.",
                {"kv_cache_reserved_gib": 40.0, "initial_free_gib": 78.1796875},
            ),
            (
                "(Worker_TP0 pid=412) INFO 11-20 09:12:33 [gpu_worker.py:664] Initial free memory 78.18 GiB, reserved 40.0 "
                "GiB memory for KV Cache as specified by kv_cache_memory_bytes config and skipped memory profiling.",
                {"kv_cache_reserved_gib": 40.0, "initial_free_gib": 78.18},
            ),
        ],
    ),
    _p(
        "kv_cache_reserved_gib/startup_plan",
        "metric",
        "kv_cache_reserved_gib",
        "Applying persisted startup plan",
        r"Applying persisted startup plan \(fingerprint \w+\): kv_cache_memory_bytes=\d+ \((?P<kv_cache_reserved_gib>"
        + NUM
        + r") GiB\)",
        [
            (
                "(Worker_TP0 pid=412) INFO 11-20 09:12:33 [startup_plan.py:153] Applying persisted startup plan (fingerprint "
                "3f9a1c2b7d10): kv_cache_memory_bytes=42949672960 (40.00 GiB), recorded free-memory baseline 78.18 GiB, "
                "current 78.16 GiB. Memory profiling will be skipped.",
                {"kv_cache_reserved_gib": 40.0},
            )
        ],
    ),
    # the CPU backend sizes its KV pool itself: "Auto set" measured what is left of the worker's
    # share of memory (it moves between identical boots), "Explicitly set" took the size given
    _p(
        "kv_cache_available_gib/cpu",
        "metric",
        "kv_cache_available_gib",
        " GiB for KV cache on node ",
        r"(?P<kv_sizing>Auto|Explicitly) set \((?P<kv_cache_available_gib>"
        + NUM
        + r")/(?P<node_total_gib>"
        + NUM
        + r")\) GiB for KV cache on node (?P<node>\d+)(?:, with (?P<worker_requested_gib>"
        + NUM
        + r") GiB requested "
        r"memory for the worker\. (?P<non_kv_memory_gib>" + NUM + r") GiB memory was consumed by non-kv usages)?",
        [
            (
                "(Worker pid=32) INFO 12-06 03:09:18 [cpu_worker.py:260] Auto set (5.21/23.54) GiB for KV cache on node 0, "
                "with 5.89 GiB requested memory for the worker. 0.67 GiB memory was consumed by non-kv usages.",
                {"kv_cache_available_gib": 5.21, "non_kv_memory_gib": 0.67},
            ),
            (
                "(Worker_TP1 pid=26967) INFO 12-06 03:13:15 [cpu_worker.py:260] Explicitly set (0.06/23.54) GiB for KV cache "
                "on node 0.",
                {"kv_cache_available_gib": 0.06},
            ),
        ],
    ),
    _p(
        "model_init_s/v0.26",
        "metric",
        "model_init_s",
        "Initializing model took ",
        r"Initializing model took (?P<model_init_s>" + NUM + r") seconds",
        [
            (
                "(Worker pid=8479) INFO 12-06 02:59:19 [base_loader.py:82] Initializing model took 0.126372 seconds",
                {"model_init_s": 0.126372},
            )
        ],
    ),
    _p(
        "num_gpu_blocks/v0",
        "metric",
        "num_gpu_blocks",
        " blocks: ",
        r"# (?P<device>[A-Za-z]+) blocks: (?P<num_gpu_blocks>\d+)(?:, # CPU blocks: (?P<num_cpu_blocks>\d+))?",
        [
            (
                "INFO 04-28 16:55:29 gpu_executor.py:121] # GPU blocks: 10786, # CPU blocks: 2048",
                {"num_gpu_blocks": 10786, "num_cpu_blocks": 2048},
            ),
            (
                "INFO 11-18 17:11:01 distributed_gpu_executor.py:57] # GPU blocks: 31284, # CPU blocks: 4096",
                {"num_gpu_blocks": 31284, "num_cpu_blocks": 4096},
            ),
            (
                "INFO 04-14 08:39:33 executor_base.py:110] # CUDA blocks: 11770, # CPU blocks: 2730",
                {"num_gpu_blocks": 11770, "num_cpu_blocks": 2730},
            ),
            (
                "INFO 11-20 09:12:33 [executor_base.py:112] # cuda blocks: 7281, # CPU blocks: 2048",
                {"num_gpu_blocks": 7281, "num_cpu_blocks": 2048},
            ),
            (
                "INFO 11-20 09:12:33 [executor_base.py:112] # rocm blocks: 7281, # CPU blocks: 2048",
                {"num_gpu_blocks": 7281, "num_cpu_blocks": 2048},
            ),
            ("INFO 11-20 09:12:33 kv_cache_utils.py:522] # GPU blocks: 7281", {"num_gpu_blocks": 7281}),
            ("INFO 11-20 09:12:33 cpu_executor.py:214] # CPU blocks: 2048", {"num_gpu_blocks": 2048}),
        ],
    ),
    _p(
        "num_gpu_blocks/v1-cache_config_info",
        "metric",
        "num_gpu_blocks",
        "num_gpu_blocks is: ",
        r"vllm cache_config_info with initialization after num_gpu_blocks is: (?P<num_gpu_blocks>\d+)",
        [
            (
                "INFO 11-20 09:12:33 [loggers.py:134] vllm cache_config_info with initialization after num_gpu_blocks is: "
                "84386",
                {"num_gpu_blocks": 84386},
            ),
            (
                "(APIServer pid=1217) INFO 09-03 00:41:00 [loggers.py:142] Engine 000: vllm cache_config_info with "
                "initialization after num_gpu_blocks is: 28137",
                {"num_gpu_blocks": 28137},
            ),
            (
                "(APIServer pid=380742) DEBUG 01-27 22:07:29 [v1/metrics/loggers.py:271] Engine 000: vllm cache_config_info "
                "with initialization after num_gpu_blocks is: 1189",
                {"num_gpu_blocks": 1189},
            ),
        ],
    ),
    # --- model loading / profiling -------------------------------------------------------------
    _p(
        "model_load_gib/v0-GB",
        "metric",
        "model_load_gib",
        "Loading model weights took ",
        r"Loading model weights took (?P<model_load_gib>" + NUM + r") GB",
        [
            (
                "INFO 04-28 16:55:27 model_runner.py:890] Loading model weights took 13.5083 GB",
                {"model_load_gib": 13.5083},
            ),
            (
                "(VllmWorkerProcess pid=1825469) INFO 11-18 17:11:00 model_runner.py:1077] Loading model weights took 7.5122 "
                "GB",
                {"model_load_gib": 7.5122},
            ),
            (
                "(EngineCore_DP0 pid=381139) INFO 01-27 22:06:46 [hpu_model_runner.py:3706] Loading model weights took "
                "34.7600 GB",
                {"model_load_gib": 34.76},
            ),
            (
                "(EngineCore pid=204582) INFO 05-20 10:35:13 [model_runner_v1.py:3023] Loading model weights took 27.5350 GB",
                {"model_load_gib": 27.535},
            ),
        ],
    ),
    _p(
        "model_load/v1",
        "metric",
        "model_load_gib",
        "Model loading took ",
        r"Model loading took (?P<model_load_gib>"
        + NUM
        + r") Gi?B(?: memory)? and (?P<model_load_s>"
        + NUM
        + r") seconds",
        [
            (
                "(VllmWorker rank=0 pid=412) INFO 11-20 09:12:33 [gpu_model_runner.py:1181] Model loading took 14.9595 GB "
                "and 5.123456 seconds",
                {"model_load_gib": 14.9595, "model_load_s": 5.123456},
            ),
            (
                "(VllmWorker rank=1 pid=12436) INFO 07-09 14:34:34 [gpu_model_runner.py:1291] Model loading took 4.8120 GiB "
                "and 2.711224 seconds",
                {"model_load_gib": 4.812, "model_load_s": 2.711224},
            ),
            (
                "(EngineCore_DP0 pid=3362183) INFO 03-09 20:48:31 [gpu_model_runner.py:3338] Model loading took 27.5681 GiB "
                "memory and 7.024536 seconds",
                {"model_load_gib": 27.5681, "model_load_s": 7.024536},
            ),
            (
                "(Worker_TP0 pid=412) INFO 11-20 09:12:33 [gpu_model_runner.py:5088] Model loading took 14.96 GiB memory and "
                "5.123456 seconds",
                {"model_load_gib": 14.96, "model_load_s": 5.123456},
            ),
            ("Model loading took 14.2 GiB and 250.1 seconds", {"model_load_gib": 14.2, "model_load_s": 250.1}),
        ],
    ),
    _p(
        "weights_load_s/all",
        "metric",
        "weights_load_s",
        "Loading weights took ",
        r"Loading weights took (?P<weights_load_s>" + NUM + r") seconds",
        [
            (
                "(Worker_TP0 pid=412) INFO 11-20 09:12:33 [default_loader.py:268] Loading weights took 4.87 seconds",
                {"weights_load_s": 4.87},
            ),
            ("Loading weights took 1.21 seconds", {"weights_load_s": 1.21}),
        ],
    ),
    _p(
        "memory_profiling_s/all",
        "metric",
        "memory_profiling_s",
        "Memory profiling takes ",
        r"Memory profiling takes (?P<memory_profiling_s>" + NUM + r") seconds",
        [
            (
                "(VllmWorkerProcess pid=1031294) INFO 04-14 08:39:33 worker.py:267] Memory profiling takes 6.63 seconds",
                {"memory_profiling_s": 6.63},
            ),
            ("Memory profiling takes 11.94 seconds", {"memory_profiling_s": 11.94}),
            (
                "(Worker_TP0 pid=412) DEBUG 11-20 09:12:33 [mem_utils.py:216] Memory profiling takes 4.71 seconds. Total non "
                "KV cache memory: 16.7GiB; torch peak memory increase: 1.24GiB; non-torch forward increase memory: 0.47GiB; "
                "weights memory: 14.99GiB.",
                {"memory_profiling_s": 4.71},
            ),
        ],
    ),
    # --- CUDA graphs ---------------------------------------------------------------------------
    _p(
        "graph_capture/all",
        "metric",
        "graph_capture_s",
        "Graph capturing finished in ",
        r"(?<![Ee]ncoder g)Graph capturing finished in (?P<graph_capture_s>\d+(?:\.\d+)?) secs"
        r"(?:, took (?P<graph_capture_gib>" + NUM + r") GiB)?",
        [
            ("INFO 04-28 16:55:47 model_runner.py:1300] Graph capturing finished in 15 secs.", {"graph_capture_s": 15}),
            (
                "(Worker_TP0 pid=412) INFO 11-20 09:12:33 [gpu_model_runner.py:3118] Graph capturing finished in 12 secs, "
                "took 0.62 GiB",
                {"graph_capture_s": 12, "graph_capture_gib": 0.62},
            ),
            ("Graph capturing finished in 5 secs, took -0.06 GiB", {"graph_capture_s": 5, "graph_capture_gib": -0.06}),
            ("Graph capturing finished in 5 secs, took 0.31 GiB", {"graph_capture_s": 5, "graph_capture_gib": 0.31}),
        ],
    ),
    _p(
        "encoder_graph_capture/v0.31",
        "metric",
        "encoder_graph_capture_s",
        "Encoder graph capturing finished in ",
        r"Encoder graph capturing finished in (?P<encoder_graph_capture_s>\d+(?:\.\d+)?) secs, took "
        r"(?P<encoder_graph_capture_gib>" + NUM + r") GiB(?: \((?P<graphs>\d+) graphs\))?",
        [
            (
                "(Worker_TP0 pid=412) INFO 11-20 09:12:33 [mm_encoder_model_runner.py:94] Encoder graph capturing finished "
                "in 3 secs, took 0.11 GiB (12 graphs)",
                {"encoder_graph_capture_s": 3, "encoder_graph_capture_gib": 0.11},
            )
        ],
    ),
    _p(
        "cudagraph_estimate_gib/v0.18",
        "metric",
        "cudagraph_estimate_gib",
        "Estimated CUDA graph memory: ",
        r"Estimated CUDA graph memory: (?P<cudagraph_estimate_gib>" + NUM + r") GiB total",
        [
            (
                "(Worker_TP0 pid=412) INFO 11-20 09:12:33 [gpu_model_runner.py:6409] Estimated CUDA graph memory: 0.62 GiB "
                "total",
                {"cudagraph_estimate_gib": 0.62},
            ),
            ("Estimated CUDA graph memory: 0.55 GiB total", {"cudagraph_estimate_gib": 0.55}),
        ],
    ),
    _p(
        "cudagraph_pool_gib/v0.18",
        "metric",
        "cudagraph_pool_gib",
        "CUDA graph pool memory: ",
        r"CUDA graph pool memory: (?P<cudagraph_pool_gib>"
        + NUM
        + r") GiB \(actual\), (?P<estimated_gib>"
        + NUM
        + r") GiB \(estimated\)",
        [
            (
                "(Worker_TP0 pid=412) INFO 11-20 09:12:33 [gpu_worker.py:1003] CUDA graph pool memory: 0.62 GiB (actual), "
                "0.6 GiB (estimated), difference: 0.02 GiB (3.2%).",
                {"cudagraph_pool_gib": 0.62},
            )
        ],
    ),
    # --- torch.compile -------------------------------------------------------------------------
    _p(
        "torch_compile_s/all",
        "metric",
        "torch_compile_s",
        "torch.compile t",
        _CTAG + r"torch\.compile (?:takes|took) (?P<torch_compile_s>" + NUM + r") s in total",
        [
            (
                "(Worker_TP0 pid=412) INFO 11-20 09:12:33 [monitor.py:34] torch.compile takes 35.61 s in total",
                {"torch_compile_s": 35.61},
            ),
            ("torch.compile takes 19.37 s in total", {"torch_compile_s": 19.37}),
            ("torch.compile took 188.26 s in total", {"torch_compile_s": 188.26}),
            (
                "(Worker_TP0 pid=412) INFO 11-20 09:12:33 [monitor.py:62] [Qwen3VisionTransformer] torch.compile took 35.61 "
                "s in total",
                {"torch_compile_s": 35.61},
            ),
        ],
    ),
    _p(
        "torch_compile_s/with-warmup",
        "metric",
        "torch_compile_s",
        "torch.compile and initial profiling/warmup run",
        r"torch\.compile and initial profiling/warmup run together took (?P<torch_compile_s>" + NUM + r") s in total",
        [
            (
                "(Worker_TP0 pid=412) INFO 11-20 09:12:33 [monitor.py:53] torch.compile and initial profiling/warmup run "
                "together took 41.20 s in total",
                {"torch_compile_s": 41.2},
            ),
        ],
        post=_with_warmup_post,
    ),
    _p(
        "profiling_run_s/v0.18",
        "metric",
        "profiling_run_s",
        "Initial profiling/warmup run took ",
        r"Initial profiling/warmup run took (?P<profiling_run_s>" + NUM + r") s",
        [
            (
                "(EngineCore pid=26109) INFO 04-28 11:14:02 [monitor.py:76] Initial profiling/warmup run took 0.41 s",
                {"profiling_run_s": 0.41},
            )
        ],
    ),
    _p(
        "dynamo_transform_s/all",
        "metric",
        "dynamo_transform_s",
        "Dynamo bytecode transform time: ",
        _CTAG + r"Dynamo bytecode transform time: (?P<dynamo_transform_s>" + NUM + r") s",
        [
            (
                "(Worker_TP0 pid=412) INFO 11-20 09:12:33 [backends.py:559] Dynamo bytecode transform time: 7.35 s",
                {"dynamo_transform_s": 7.35},
            ),
            ("Dynamo bytecode transform time: 4.60 s", {"dynamo_transform_s": 4.6}),
        ],
    ),
    _p(
        "compile_graph_s/all",
        "metric",
        "compile_graph_s",
        "Compiling a graph for ",
        _CTAG + r"Compiling a graph for (?:(?P<shape_kind>general shape|dynamic shape)|shape (?P<shape>\S+)"
        r"|compile range (?P<range>\([^)]*\))) takes (?P<compile_graph_s>" + NUM + r") s",
        [
            (
                "INFO 05-28 20:35:39 [backends.py:150] Compiling a graph for general shape takes 39.83 s",
                {"compile_graph_s": 39.83},
            ),
            (
                "(VllmWorker rank=5 pid=775163) INFO 08-16 02:13:50 [backends.py:215] Compiling a graph for dynamic shape "
                "takes 414.61 s",
                {"compile_graph_s": 414.61},
            ),
            (
                "(Worker_TP0 pid=412) INFO 11-20 09:12:33 [backends.py:221] Compiling a graph for shape 8 takes 3.05 s",
                {"compile_graph_s": 3.05},
            ),
            ("Compiling a graph for compile range (1, 1024) takes 179.24 s", {"compile_graph_s": 179.24}),
            (
                "(Worker_TP0 pid=1537491) INFO 01-15 22:38:35 [backends.py:278] Compiling a graph for compile range (1, "
                "8192) takes 6.96 s",
                {"compile_graph_s": 6.96},
            ),
        ],
    ),
    _p(
        "compile_cache_load_s/all",
        "metric",
        "compile_cache_load_s",
        "Directly load the compiled graph",
        _CTAG + r"Directly load the compiled graph(?:\(s\))? for (?:dynamic shape|shape (?P<shape>\S+)"
        r"|compile range (?P<range>\([^)]*\))) from the cache, took (?P<compile_cache_load_s>" + NUM + r") s",
        [
            (
                "INFO 05-12 02:45:56 [backends.py:118] Directly load the compiled graph(s) for shape None from the cache, "
                "took 8.559 s",
                {"compile_cache_load_s": 8.559},
            ),
            (
                "(EngineCore_DP0 pid=943603) INFO 09-30 18:37:00 [backends.py:161] Directly load the compiled graph(s) for "
                "dynamic shape from the cache, took 1.270 s",
                {"compile_cache_load_s": 1.27},
            ),
            (
                "Directly load the compiled graph(s) for compile range (1, 1024) from the cache, took 2.143 s",
                {"compile_cache_load_s": 2.143},
            ),
        ],
    ),
    _p(
        "init_engine/all",
        "metric",
        "init_engine_s",
        "init engine (profile, create kv cache, warmup model) took ",
        r"init engine \(profile, create kv cache, warmup model\) took (?P<init_engine_s>" + NUM + r") s(?:econds)?"
        r"(?: \(compilation: (?P<init_engine_compile_s>" + NUM + r") s"
        r"(?: \S+ language_model: (?P<language_model_s>" + NUM + r") s, encoder: (?P<encoder_s>" + NUM + r") s)?)?",
        [
            (
                "(EngineCore_DP0 pid=270) INFO 11-20 09:12:33 [core.py:218] init engine (profile, create kv cache, warmup "
                "model) took 53.87 seconds",
                {"init_engine_s": 53.87},
            ),
            (
                "(EngineCore pid=270) INFO 11-20 09:12:33 [core.py:412] init engine (profile, create kv cache, warmup model) "
                "took 53.87 s",
                {"init_engine_s": 53.87},
            ),
            (
                "init engine (profile, create kv cache, warmup model) took 41.13 s (compilation: 3.98 s)",
                {"init_engine_s": 41.13, "init_engine_compile_s": 3.98},
            ),
            (
                "(EngineCore pid=270) INFO 11-20 09:12:33 [core.py:395] init engine (profile, create kv cache, warmup model) "
                "took 61.02 s (compilation: 40.11 s \u2014 language_model: 35.61 s, encoder: 4.50 s)",
                {"init_engine_s": 61.02, "init_engine_compile_s": 40.11},
            ),
        ],
    ),
    _p(
        "autofit_max_model_len/v0.32",
        "metric",
        "autofit_max_model_len",
        "Auto-fit max_model_len: ",
        r"Auto-fit max_model_len: (?:reduced from (?P<from_len>\d+) to (?P<autofit_max_model_len>\d+)"
        r"|full model context length (?P<full_len>\d+) fits)",
        [
            (
                "(EngineCore pid=270) INFO 11-20 09:12:33 [kv_cache_planning.py:1404] Auto-fit max_model_len: reduced from "
                "131072 to 98304 to fit in available KV cache memory (37.5 GiB)",
                {"autofit_max_model_len": 98304},
            )
        ],
    ),
    # --- hybrid (mamba / GDN) models: page geometry the KV pool is built on --------------------
    _p(
        "attn_block_size/mamba",
        "metric",
        "attn_block_size",
        "Setting attention block size to ",
        r"Setting attention block size to (?P<attn_block_size>\d+) tokens",
        [
            (
                "(APIServer pid=1) INFO 11-20 09:12:33 [config.py:281] Setting attention block size to 1056 tokens to ensure "
                "that attention page size is >= mamba page size.",
                {"attn_block_size": 1056},
            ),
            (
                "(Worker_TP0 pid=412) INFO 11-20 09:12:33 [interface.py:924] Setting attention block size to 32 tokens so "
                "the quantized primary KV page covers the higher-precision padded-spec page.",
                {"attn_block_size": 32},
            ),
        ],
    ),
    _p(
        "mamba_page_padding_pct/mamba",
        "metric",
        "mamba_page_padding_pct",
        "Padding mamba page size by ",
        r"Padding mamba page size by (?P<mamba_page_padding_pct>" + NUM + r")%",
        [
            (
                "(Worker_TP0 pid=412) INFO 11-20 09:12:33 [interface.py:1132] Padding mamba page size by 1.56% to ensure "
                "that mamba page size and attention page size are exactly equal.",
                {"mamba_page_padding_pct": 1.56},
            ),
            (
                "Padding mamba page size by 0.13% to ensure that mamba page size and attention page size are exactly equal.",
                {"mamba_page_padding_pct": 0.13},
            ),
        ],
    ),
    # --- boot identity -------------------------------------------------------------------------
    _p(
        "vllm_version/api-server",
        "boot",
        "vllm_version",
        "vLLM API server version ",
        r"vLLM API server version (?P<vllm_version>\S+)",
        [
            (
                "(APIServer pid=1) INFO 11-20 09:12:33 [api_server.py:1839] vLLM API server version 0.11.0",
                {"vllm_version": "0.11.0"},
            ),
            ("INFO 04-28 16:55:20 api_server.py:440] vLLM API server version 0.5.5", {"vllm_version": "0.5.5"}),
            (
                "(APIServer pid=1) INFO 01-19 22:25:58 [api_server.py:1351] vLLM API server version 0.13.0+faa43dbf.nv26.01",
                {"vllm_version": "0.13.0+faa43dbf.nv26.01"},
            ),
        ],
    ),
    _p(
        "vllm_version/server-serving",
        "boot",
        "vllm_version",
        "vLLM server version ",
        r"vLLM server version (?P<vllm_version>[^\s,]+), serving model (?P<model>\S+)",
        [
            (
                "(APIServer pid=1) INFO 11-20 09:12:33 [startup.py:18] vLLM server version 0.33.0, serving model "
                "Qwen/Qwen3-8B",
                {"vllm_version": "0.33.0", "model": "Qwen/Qwen3-8B"},
            )
        ],
    ),
    _p(
        "vllm_version/logo",
        "boot",
        "vllm_version",
        "\u2588  version ",
        r"\u2588\s+version\s+(?P<vllm_version>\S+)",
        [
            (
                "(APIServer pid=1) INFO 11-20 09:12:33 [api_utils.py:340]  \u2584\u2584 \u2584\u2588 \u2588     \u2588     "
                "\u2588 \u2580\u2584\u2580 \u2588  version 0.25.0",
                {"vllm_version": "0.25.0"},
            )
        ],
    ),
    _p(
        "model/logo",
        "boot",
        "model",
        "\u2588  model ",
        r"\u2588\s+model\s+(?P<model>\S+)",
        [
            (
                "(APIServer pid=1) INFO 11-20 09:12:33 [api_utils.py:340]   \u2588\u2584\u2588\u2580 \u2588     \u2588     "
                "\u2588     \u2588  model   Qwen/Qwen3-8B",
                {"model": "Qwen/Qwen3-8B"},
            )
        ],
    ),
    _p(
        "engine/attention-backend",
        "boot",
        "engine",
        "backend on V",
        r"backend on (?P<engine>V[01]) engine\b",
        [
            ("INFO 05-12 02:45:32 [cuda.py:221] Using Flash Attention backend on V1 engine.", {"engine": "v1"}),
            ("INFO 11-20 09:12:33 [rocm.py:201] Using Triton Attention backend on V1 engine.", {"engine": "v1"}),
        ],
    ),
    _p(
        "config/engine-config",
        "config",
        "config",
        "LLM engine",
        r"Initializing an? (?:(?P<eng>V[01]) )?LLM engine(?: \(v(?P<vllm_version>[^)\s]*)\))? with config: ",
        [
            (
                "INFO 04-28 16:55:20 llm_engine.py:184] Initializing an LLM engine (v0.5.5) with config: "
                "model='mistralai/Mistral-7B-Instruct-v0.3', speculative_config=None, "
                "tokenizer='mistralai/Mistral-7B-Instruct-v0.3', skip_tokenizer_init=False, tokenizer_mode=auto, "
                "revision=None, rope_scaling=None, rope_theta=None, tokenizer_revision=None, trust_remote_code=False, "
                "dtype=torch.bfloat16, max_seq_len=8192, download_dir=None, load_format=LoadFormat.AUTO, "
                "tensor_parallel_size=1, pipeline_parallel_size=1, disable_custom_all_reduce=False, quantization=None, "
                "enforce_eager=False, kv_cache_dtype=auto, quantization_param_path=None, device_config=cuda, "
                "decoding_config=DecodingConfig(guided_decoding_backend='outlines'), "
                "observability_config=ObservabilityConfig(otlp_traces_endpoint=None, collect_model_forward_time=False, "
                "collect_model_execute_time=False), seed=0, served_model_name=mistralai/Mistral-7B-Instruct-v0.3, "
                "use_v2_block_manager=False, enable_prefix_caching=False)",
                {
                    "vllm_version": "0.5.5",
                    "engine": "v0",
                    "model": "mistralai/Mistral-7B-Instruct-v0.3",
                    "max_model_len": "8192",
                    "tensor_parallel_size": "1",
                    "enable_prefix_caching": "False",
                    "load_format": "LoadFormat.AUTO",
                    "decoding_config": "DecodingConfig(guided_decoding_backend='outlines')",
                },
            ),
            (
                "INFO 11-20 09:12:33 llm_engine.py:237] Initializing an LLM engine (v0.6.3) with config: "
                "model='meta-llama/Llama-3.1-8B-Instruct', speculative_config=None, "
                "tokenizer='meta-llama/Llama-3.1-8B-Instruct', skip_tokenizer_init=False, tokenizer_mode=auto, "
                "revision=None, override_neuron_config=None, rope_scaling=None, rope_theta=None, tokenizer_revision=None, "
                "trust_remote_code=False, dtype=torch.bfloat16, max_seq_len=8192, download_dir=None, "
                "load_format=LoadFormat.AUTO, tensor_parallel_size=1, pipeline_parallel_size=1, "
                "disable_custom_all_reduce=False, quantization=None, enforce_eager=False, kv_cache_dtype=auto, "
                "quantization_param_path=None, device_config=cuda, "
                "decoding_config=DecodingConfig(guided_decoding_backend='outlines'), "
                "observability_config=ObservabilityConfig(otlp_traces_endpoint=None, collect_model_forward_time=False, "
                "collect_model_execute_time=False), seed=0, served_model_name=meta-llama/Llama-3.1-8B-Instruct, "
                "use_v2_block_manager=True, num_scheduler_steps=1, chunked_prefill_enabled=False "
                "multi_step_stream_outputs=True, enable_prefix_caching=False, use_async_output_proc=True, "
                "use_cached_outputs=True, mm_processor_kwargs=None)",
                {
                    "vllm_version": "0.6.3",
                    "engine": "v0",
                    "chunked_prefill_enabled": "False",
                    "multi_step_stream_outputs": "True",
                    "mm_processor_kwargs": "None",
                },
            ),
            (
                "INFO 11-20 09:12:33 llm_engine.py:234] Initializing a V0 LLM engine (v0.7.3) with config: "
                "model='Qwen/Qwen2.5-7B-Instruct', speculative_config=None, tokenizer='Qwen/Qwen2.5-7B-Instruct', "
                "max_seq_len=32768, kv_cache_dtype=auto,  device_config=cuda, "
                'compilation_config={"splitting_ops":[],"compile_sizes":[],"cudagraph_capture_sizes":[256,248,8,4,2,1],'
                '"max_capture_size":256}, use_cached_outputs=True, ',
                {
                    "vllm_version": "0.7.3",
                    "engine": "v0",
                    "model": "Qwen/Qwen2.5-7B-Instruct",
                    "max_model_len": "32768",
                    "device_config": "cuda",
                    "use_cached_outputs": "True",
                    "compilation_config": '{"splitting_ops":[],"compile_sizes":[],"cudagraph_capture_sizes":'
                    '[256,248,8,4,2,1],"max_capture_size":256}',
                },
            ),
            (
                "(EngineCore_DP0 pid=299338) INFO 11-01 15:51:35 [core.py:94] Initializing a V1 LLM engine "
                "(v0.11.1rc3.dev29+g3fa2c1218) with config: model='rednote-hilab/dots.ocr', speculative_config=None, "
                "tokenizer='rednote-hilab/dots.ocr', skip_tokenizer_init=False, tokenizer_mode=auto, revision=None, "
                "tokenizer_revision=None, trust_remote_code=True, dtype=torch.bfloat16, max_seq_len=131072, "
                "download_dir=None, load_format=auto, tensor_parallel_size=1, pipeline_parallel_size=1, "
                "data_parallel_size=1, disable_custom_all_reduce=False, quantization=None, enforce_eager=False, "
                "kv_cache_dtype=auto, device_config=cuda, structured_outputs_config=StructuredOutputsConfig(backend='auto', "
                "disable_fallback=False, disable_any_whitespace=False, disable_additional_properties=False, "
                "reasoning_parser='', enable_in_reasoning=False), "
                "observability_config=ObservabilityConfig(show_hidden_metrics_for_version=None, otlp_traces_endpoint=None, "
                "collect_detailed_traces=None), seed=0, served_model_name=rednote-hilab/dots.ocr, "
                "enable_prefix_caching=True, chunked_prefill_enabled=True, pooler_config=None, compilation_config={'level': "
                "None, 'mode': 3, 'custom_ops': ['none'], 'inductor_compile_config': {'enable_auto_functionalized_v2': "
                "False, 'combo_kernels': True}, 'cudagraph_mode': <CUDAGraphMode.FULL_AND_PIECEWISE: (2, 1)>, "
                "'use_cudagraph': True, 'cudagraph_capture_sizes': [16, 8, 4, 2, 1], 'pass_config': {}, 'max_capture_size': "
                "16, 'local_cache_dir': None}",
                {
                    "vllm_version": "0.11.1rc3.dev29+g3fa2c1218",
                    "engine": "v1",
                    "model": "rednote-hilab/dots.ocr",
                    "max_model_len": "131072",
                    "enable_prefix_caching": "True",
                    "enforce_eager": "False",
                    "served_model_name": "rednote-hilab/dots.ocr",
                    "pooler_config": "None",
                    "structured_outputs_config": "StructuredOutputsConfig(backend='auto', disable_fallback=False, "
                    "disable_any_whitespace=False, disable_additional_properties=False, "
                    "reasoning_parser='', enable_in_reasoning=False)",
                },
            ),
            (
                "INFO 11-20 09:12:33 core.py:45] Initializing an LLM engine (v0.7.0) with config: "
                "model='Qwen/Qwen2.5-7B-Instruct', speculative_config=None, max_seq_len=32768, kv_cache_dtype=auto,  "
                'device_config=cuda, compilation_config={"level":3,"max_capture_size":512}',
                {"vllm_version": "0.7.0", "engine": "v1", "max_model_len": "32768"},
            ),
        ],
        post=_engine_config_post,
    ),
    _p(
        "config/non-default-args",
        "config",
        "config",
        "non-default args: {",
        r"non-default args: \{",
        [
            (
                "(APIServer pid=85301) INFO 09-26 05:49:46 [utils.py:328] non-default args: {'model_tag': "
                "'/root/autodl-tmp/models/qwen/Qwen2.5-3B', 'host': '0.0.0.0', 'port': 8001, 'model': "
                "'/root/autodl-tmp/models/qwen/Qwen2.5-3B', 'trust_remote_code': True, 'dtype': 'float16', 'max_model_len': "
                "4096, 'max_num_seqs': 1}",
                {
                    "model": "/root/autodl-tmp/models/qwen/Qwen2.5-3B",
                    "port": "8001",
                    "trust_remote_code": "True",
                    "dtype": "float16",
                    "max_model_len": "4096",
                    "max_num_seqs": "1",
                },
            ),
            (
                "(APIServer pid=1) INFO 11-20 09:12:33 [utils.py:278] non-default args: {'model_tag': 'Qwen/Qwen3-8B', "
                "'model': 'Qwen/Qwen3-8B', 'tensor_parallel_size': 2, 'max_model_len': 32768, 'enable_prefix_caching': True}",
                {"model": "Qwen/Qwen3-8B", "tensor_parallel_size": "2", "enable_prefix_caching": "True"},
            ),
            (
                "(APIServer pid=1) INFO 10-02 09:53:01 [utils.py:278] non-default args: {'model_tag': '/models/q', "
                "'expert_precise_memory': True, 'kv_cache_dtype': 'fp8', 'served_model_name': ['frank-primary'], "
                "'default_chat_template_kwargs': {'enable_thinking': True, 'preserve_thinking': True}, 'speculative_config': "
                "{'method': 'mtp', 'num_speculative_tokens': 3}}",
                {
                    "model": "/models/q",
                    "expert_precise_memory": "True",
                    "kv_cache_dtype": "fp8",
                    "served_model_name": "['frank-primary']",
                    "default_chat_template_kwargs": "{'enable_thinking': True, 'preserve_thinking': True}",
                    "speculative_config": "{'method': 'mtp', 'num_speculative_tokens': 3}",
                },
            ),
        ],
        post=_args_post("non_default_args"),
    ),
    _p(
        "config/namespace",
        "config",
        "config",
        "args: Namespace(",
        r"args: Namespace\(",
        [
            (
                "INFO 04-28 16:55:17 api_server.py:440] args: Namespace(model_tag='mistralai/Mistral-7B-Instruct-v0.3', "
                "host='0.0.0.0', port=8000, uvicorn_log_level='info', allow_credentials=False, allowed_origins=['*'], "
                "allowed_methods=['*'], model='mistralai/Mistral-7B-Instruct-v0.3', tensor_parallel_size=1, "
                "max_model_len=None, gpu_memory_utilization=0.9, enable_prefix_caching=False, max_num_seqs=256, "
                "chat_template=None, dispatch_function=<function serve at 0x7f1c>)",
                {
                    "model": "mistralai/Mistral-7B-Instruct-v0.3",
                    "tensor_parallel_size": "1",
                    "max_model_len": "None",
                    "gpu_memory_utilization": "0.9",
                    "max_num_seqs": "256",
                    "allowed_origins": "['*']",
                    "dispatch_function": "<function serve at 0x7f1c>",
                },
            ),
        ],
        post=_args_post("namespace"),
    ),
    _p(
        "config/chunked-prefill",
        "config",
        "config",
        "Chunked prefill is enabled with max_num_batched_tokens=",
        r"Chunked prefill is enabled with max_num_batched_tokens=(?P<max_num_batched_tokens>\d+)",
        [
            (
                "INFO 11-18 17:10:51 config.py:1136] Chunked prefill is enabled with max_num_batched_tokens=512.",
                {"max_num_batched_tokens": "512"},
            ),
        ],
        post=_chunked_post,
    ),
    # --- periodic statistics -------------------------------------------------------------------
    _p(
        "stats/throughput",
        "stat",
        "stats",
        STATS_LITERAL,
        r"Avg prompt throughput: ",
        [
            (
                "INFO 04-28 16:56:08 metrics.py:351] Avg prompt throughput: 93.5 tokens/s, Avg generation throughput: 0.1 "
                "tokens/s, Running: 1 reqs, Swapped: 0 reqs, Pending: 0 reqs, GPU KV cache usage: 0.5%, CPU KV cache usage: "
                "0.0%.",
                {
                    "prompt_throughput_tps": 93.5,
                    "generation_throughput_tps": 0.1,
                    "running_reqs": 1,
                    "swapped_reqs": 0,
                    "waiting_reqs": 0,
                    "kv_cache_usage_pct": 0.5,
                    "cpu_kv_cache_usage_pct": 0.0,
                },
            ),
            (
                "INFO 11-20 09:12:33 loggers.py:72] Avg prompt throughput: 512.3 tokens/s, Avg generation throughput: 88.0 "
                "tokens/s, Running: 4 reqs, Waiting: 0 reqs GPU KV cache usage: 3.1%.",
                {"prompt_throughput_tps": 512.3, "running_reqs": 4, "waiting_reqs": 0, "kv_cache_usage_pct": 3.1},
            ),
            (
                "INFO 07-09 14:35:59 [loggers.py:87] Engine 000: Avg prompt throughput: 0.0 tokens/s, Avg generation "
                "throughput: 0.0 tokens/s, Running: 0 reqs, Waiting: 0 reqs, GPU KV cache usage: 0.0%, Prefix cache hit "
                "rate: 57.1%",
                {"kv_cache_usage_pct": 0.0, "prefix_cache_hit_rate_pct": 57.1, "engine_index": 0},
            ),
            (
                "(APIServer pid=295174) INFO 11-01 16:00:28 [loggers.py:208] Engine 000: Avg prompt throughput: 496.9 "
                "tokens/s, Avg generation throughput: 0.1 tokens/s, Running: 3 reqs, Waiting: 5 reqs, GPU KV cache usage: "
                "8.7%, Prefix cache hit rate: 0.0%, MM cache hit rate: 10.0%",
                {"waiting_reqs": 5, "prefix_cache_hit_rate_pct": 0.0, "mm_cache_hit_rate_pct": 10.0},
            ),
            (
                "(APIServer pid=1) INFO 11-20 09:12:43 [loggers.py:259] Engine 000: Avg prompt throughput: 0.0 tokens/s, Avg "
                "generation throughput: 152.4 tokens/s, Running: 8 reqs, Waiting: 3 reqs, Deferred: 1 reqs, Preemptions: 2, "
                "GPU KV cache usage: 97.8%, Prefix cache hit rate: 12.5%, External prefix cache hit rate: 3.0%",
                {
                    "running_reqs": 8,
                    "waiting_reqs": 3,
                    "deferred_reqs": 1,
                    "preemptions": 2,
                    "kv_cache_usage_pct": 97.8,
                    "prefix_cache_hit_rate_pct": 12.5,
                    "external_prefix_cache_hit_rate_pct": 3.0,
                },
            ),
            (
                "(APIServer pid=1) INFO 11-20 09:12:43 [loggers.py:270] Engine 000: Avg prompt throughput: 512.3 tokens/s, "
                "Avg generation throughput: 88.0 tokens/s, Running: 4 reqs, Waiting: 0 reqs, CPU KV cache usage: 3.1%",
                {"kv_cache_usage_pct": 3.1},
            ),
        ],
        post=stats_entry_post,
    ),
    _p(
        "stats/v0.7.0-running",
        "stat",
        "stats",
        "Running: ",
        r"Running: \d+ reqs, Waiting: \d+ reqs",
        [
            (
                "INFO 11-20 09:12:33 loggers.py:34] Running: 4 reqs, Waiting: 0 reqs ",
                {"running_reqs": 4, "waiting_reqs": 0},
            ),
        ],
        post=bare_running_post,
    ),
    _p(
        "stats/v0-prefix-cache",
        "stat",
        "stats",
        "Prefix cache hit rate: GPU: ",
        r"Prefix cache hit rate: GPU: (?P<gpu>" + NUM + r"|nan)%, CPU: (?P<cpu>" + NUM + r"|nan)%",
        [
            (
                "INFO 11-20 09:12:33 metrics.py:361] Prefix cache hit rate: GPU: 45.12%, CPU: 0.00%",
                {"prefix_cache_hit_rate_pct": 45.12},
            ),
        ],
        post=stats_post,
    ),
    _p(
        "stats/spec-v1",
        "stat",
        "stats",
        "SpecDecoding metrics: ",
        r"SpecDecoding metrics: ",
        [
            (
                "INFO 11-20 09:12:33 [metrics.py:53] SpecDecoding metrics: Draft acceptance rate: 65.1%, Accepted: 1302 "
                "tokens, Drafted: 2000 tokens",
                {"spec_acceptance_rate_pct": 65.1},
            ),
            (
                "INFO 11-20 09:12:33 [metrics.py:87] SpecDecoding metrics: Draft acceptance rate: 65.1%, Mean acceptance "
                "length: 3.26, Accepted: 1302 tokens, Drafted: 2000 tokens, Per-position acceptance rate: 0.812, 0.667, 0.523",
                {"spec_acceptance_rate_pct": 65.1, "spec_mean_acceptance_length": 3.26},
            ),
            (
                "(APIServer pid=1) INFO 11-20 09:12:33 [metrics.py:120] SpecDecoding metrics: Mean acceptance length: 3.60, "
                "Accepted throughput: 130.20 tokens/s, Drafted throughput: 200.00 tokens/s, Accepted: 1302 tokens, Drafted: "
                "2000 tokens, Per-position acceptance rate: 0.812, 0.667, 0.523, 0.402, 0.301, Avg Draft acceptance rate: "
                "65.1%",
                {"spec_acceptance_rate_pct": 65.1, "spec_mean_acceptance_length": 3.6, "spec_accepted_tokens": 1302},
            ),
            (
                "(APIServer pid=1) INFO 11-20 09:12:33 [metrics.py:120] SpecDecoding metrics: Mean acceptance length: nan, "
                "Accepted throughput: 0.00 tokens/s, Drafted throughput: 0.00 tokens/s, Accepted: 0 tokens, Drafted: 0 "
                "tokens, Per-position acceptance rate: , Avg Draft acceptance rate: nan%",
                {"spec_drafted_tokens": 0},
            ),
        ],
        post=spec_post,
    ),
    _p(
        "stats/spec-v0",
        "stat",
        "stats",
        "Speculative metrics: ",
        r"Speculative metrics: ",
        [
            (
                "INFO 11-20 09:12:33 metrics.py:380] Speculative metrics: Draft acceptance rate: 0.651, System efficiency: "
                "0.542, Number of speculative tokens: 5, Number of accepted tokens: 1302, Number of draft tokens: 2000, "
                "Number of emitted tokens: 1626.",
                {"spec_acceptance_rate_pct": 65.1, "spec_system_efficiency_pct": 54.2},
            ),
        ],
        post=spec_post,
    ),
    # --- events --------------------------------------------------------------------------------
    _p(
        "gdn_hip_fault/fork",
        "event",
        "gdn_hip_fault",
        "[gdn_hip] ERROR ",
        r"\[gdn_hip\] ERROR (?P<kernel>\w+): state out of ssm-cache range",
        [
            (
                "[gdn_hip] ERROR gdn_decode_r: state out of ssm-cache range: max|S|=0 with non-finite values (slot=42 head=3 "
                "limit=3.40282e+38) fault #1",
                {"slot": 42, "head": 3, "fault_no": 1, "limit": 3.40282e38},
            ),
            (
                "[gdn_hip] ERROR gdn_decode_r: state out of ssm-cache range: max|S|=0 with non-finite values (slot=42 head=8 "
                "limit=3.40282e+38) fault #24",
                {"slot": 42, "head": 8, "fault_no": 24, "kernel": "gdn_decode_r"},
            ),
            # the seed note's shorthand for a run of faults on one slot/head
            (
                "[gdn_hip] ERROR gdn_decode_r: state out of ssm-cache range: max|S|=0 with non-finite values (slot=42 head=3 "
                "limit=3.40282e+38) fault #1-23",
                {"head": 3, "fault_no": 1, "fault_last": 23, "faults": 23},
            ),
        ],
        post=_gdn_fault_post,
    ),
    _p(
        "gdn_hip_fault_cap/fork",
        "event",
        "gdn_hip_fault_cap",
        "[gdn_hip] ERROR: state fault report limit",
        r"\[gdn_hip\] ERROR: state fault report limit \((?P<limit>\d+)\) reached",
        [
            (
                "[gdn_hip] ERROR: state fault report limit (32) reached; further faults are counted silently",
                {"limit": 32},
            )
        ],
    ),
    _p(
        "warning/offload-exceeds-memavailable",
        "event",
        "warning",
        "exceeds MemAvailable",
        r"exceeds MemAvailable",
        [
            ("expert-offload-mem \u2026 exceeds MemAvailable at plan time", {"what": "offload_exceeds_memavailable"}),
        ],
        post=_message_post("offload_exceeds_memavailable"),
    ),
    # ("Default vLLM sampling parameters … `generation_config.json`: `{…}`" is the newer wording, in
    # the seeds' v0.22 fork and real v0.16+ logs)
    _p(
        "warning/generation-config-override",
        "event",
        "warning",
        "sampling parameters have been overridden",
        r"Default (?:vLLM )?sampling parameters have been overridden by the model's "
        r"(?:(?:Hugging Face )?generation config|`generation_config\.json`)",
        [
            (
                "WARNING 07-09 14:35:48 [config.py:1177] Default sampling parameters have been overridden by the model's "
                "Hugging Face generation config recommended from the model creator. If this is not intended, please relaunch "
                "vLLM instance with `--generation-config vllm`.",
                {"what": "generation_config_override"},
            ),
            (
                "(APIServer pid=1) WARNING 10-05 09:20:37 [model.py:1517] Default vLLM sampling parameters have been "
                "overridden by the model's `generation_config.json`: `{'temperature': 1.0, 'top_k': 20, 'top_p': 0.95}`. If "
                "this is not intended, please relaunch vLLM instance with `--generation-config vllm`.",
                {"what": "generation_config_override"},
            ),
        ],
        post=_message_post("generation_config_override"),
    ),
    _p(
        "warning/free-memory-grew",
        "event",
        "warning",
        "Free memory grew by ",
        r"Free memory grew by (?P<grew_gib>"
        + NUM
        + r") GiB during profiling \(initial (?P<initial_gib>"
        + NUM
        + r") GiB, current (?P<current_gib>"
        + NUM
        + r") GiB\)",
        [
            (
                "(Worker_TP0 pid=412) WARNING 11-20 09:12:33 [gpu_worker.py:146] Free memory grew by 0.5 GiB during "
                "profiling (initial 190.2 GiB, current 190.7 GiB). Sizing the KV cache from the 12.3 GiB torch reserved "
                "instead of the profiling difference.",
                {"what": "free_memory_grew_during_profiling", "grew_gib": 0.5, "initial_gib": 190.2},
            ),
        ],
        post=_message_post("free_memory_grew_during_profiling"),
    ),
    # systemd restarting the unit after a failed start (journalctl -u UNIT): feeds crash_loop
    _p(
        "warning/systemd-restart",
        "event",
        "warning",
        "Scheduled restart job, restart counter is at ",
        r"Scheduled restart job, restart counter is at (?P<restart_count>\d+)",
        [
            (
                "frank-primary.service: Scheduled restart job, restart counter is at 3.",
                {"what": "systemd_restart", "restart_count": 3},
            ),
        ],
        post=_message_post("systemd_restart"),
    ),
    _p(
        "worker_died/v0",
        "event",
        "worker_died",
        " died, exit code: ",
        r"Worker (?P<proc>\S+) pid (?P<pid>\d+) died, exit code: (?P<exit_code>-?\d+|None)",
        [
            (
                "ERROR 11-20 09:12:33 [multiproc_worker_utils.py:116] Worker VllmWorkerProcess pid 413 died, exit code: -9",
                {"pid": 413, "exit_code": -9},
            ),
        ],
        post=_worker_died_post,
    ),
    _p(
        "worker_died/v1",
        "event",
        "worker_died",
        "Worker proc ",
        r"Worker proc (?P<proc>\S+) died unexpectedly(?: \(exit code: (?P<exit_code>-?\d+|None)\))?, shutting down executor",
        [
            (
                "(EngineCore pid=270) ERROR 11-20 09:12:33 [multiproc_executor.py:284] Worker proc VllmWorker-1 died "
                "unexpectedly, shutting down executor.",
                {"rank": 1, "proc": "VllmWorker-1"},
            ),
            (
                "(EngineCore pid=211448) ERROR 07-17 15:09:29 [multiproc_executor.py:284] Worker proc VllmWorker-3 died "
                "unexpectedly (exit code: None), shutting down executor.",
                {"rank": 3},
            ),
            (
                "(EngineCore pid=270) ERROR 11-20 09:12:33 [multiproc_executor.py:380] Worker proc VllmWorker-1 died "
                "unexpectedly (exit code: -9), shutting down executor.",
                {"rank": 1, "exit_code": -9},
            ),
        ],
        post=_worker_died_post,
    ),
    _p(
        "worker_died/process-exit",
        "event",
        "worker_died",
        ") died with exit code ",
        r"Process (?P<proc>\S*Worker\S*) \(PID: (?P<pid>\d+)\) died with exit code (?P<exit_code>-?\d+)",
        [
            (
                "(EngineCore pid=270) ERROR 11-20 09:12:33 [utils.py:720] Process VllmWorker-1 (PID: 413) died with exit "
                "code -9",
                {"rank": 1, "pid": 413, "exit_code": -9},
            ),
        ],
        post=_worker_died_post,
    ),
    _p(
        "worker_died/ray",
        "event",
        "worker_died",
        "RayWorkerProc rank=",
        r"RayWorkerProc rank=(?P<rank>\d+) died unexpectedly",
        [
            (
                "(EngineCore pid=270) ERROR 11-20 09:12:33 [ray_executor_v2.py:522] RayWorkerProc rank=1 died unexpectedly, "
                "shutting down executor.",
                {"rank": 1},
            ),
        ],
        post=_worker_died_post,
    ),
    # the CPU backend's compile: its only record is the time between these two lines (44 s cold,
    # 8 s warm on the engine tier's tiny model); boots.py makes compile_warmup_s of them
    _p(
        "compile_warmup/cpu-start",
        "mark",
        "compile_warmup_start",
        "Warming up model for the compilation",
        r"Warming up model for the compilation",
        [
            (
                "(Worker pid=8479) INFO 12-06 02:59:20 [cpu_model_runner.py:87] Warming up model for the compilation...",
                {"mark": "compile_warmup_start"},
            )
        ],
    ),
    _p(
        "compile_warmup/cpu-done",
        "mark",
        "compile_warmup_done",
        "Warming up done.",
        r"^Warming up done\.",
        [("Warming up done.", {"mark": "compile_warmup_done"})],
    ),
    _p(
        "compile_cache_miss/v0.28",
        "event",
        "compile_cache_miss",
        "Compiling model again due to a load failure",
        r"Compiling model again due to a load failure from (?P<path>.+?)(?:, reason: (?P<reason>.*))?$",
        [
            (
                "(Worker pid=12281) WARNING 12-06 03:01:50 [decorators.py:333] [backbone] Compiling model again due to a "
                "load failure from /root/.cache/vllm/torch_compile_cache/torch_aot_compile/efdc5b/rank_0_0/model, reason: "
                "'function' object has no attribute 'finalize_loading'",
                {
                    "path": "/root/.cache/vllm/torch_compile_cache/torch_aot_compile/efdc5b/rank_0_0/model",
                    "reason": "'function' object has no attribute 'finalize_loading'",
                },
            )
        ],
    ),
    # --- how a boot's process ended (boots.py: the first of a stop request or a death after
    # "ready" decides; an EngineDeadError after a stop request is part of the stop) ------------
    _p(
        "stop/api-server-v0.28",
        "mark",
        "stop_requested",
        "[shutdown] API server: shutdown triggered",
        r"\[shutdown\] API server: shutdown triggered",
        [
            (
                "(APIServer pid=8322) INFO 12-06 03:00:42 [launcher.py:254] [shutdown] API server: shutdown triggered",
                {"mark": "stop_requested"},
            )
        ],
    ),
    _p(
        "stop/engine-core-signal",
        "mark",
        "stop_requested",
        "trigger received signal=",
        r"EngineCore: trigger received signal=(?P<signal>\w+)",
        [
            (
                "(EngineCore pid=8443) INFO 12-06 03:00:42 [core.py:1454] [shutdown] EngineCore: trigger received "
                "signal=SIGTERM",
                {"mark": "stop_requested", "signal": "SIGTERM"},
            )
        ],
    ),
    _p(
        "stop/fastapi",
        "mark",
        "stop_requested",
        "Shutting down FastAPI HTTP server",
        r"Shutting down FastAPI HTTP server",
        [
            ("INFO 05-28 20:33:48 [launcher.py:79] Shutting down FastAPI HTTP server.", {"mark": "stop_requested"}),
            (
                "(APIServer pid=1) INFO 10-02 15:16:40 [launcher.py:137] Shutting down FastAPI HTTP server.",
                {"mark": "stop_requested"},
            ),
        ],
    ),
    _p(
        "stop/gracefully",
        "mark",
        "stop_requested",
        "Gracefully stopping http server",
        r"Gracefully stopping http server",
        [("INFO 08-01 10:00:00 launcher.py:57] Gracefully stopping http server", {"mark": "stop_requested"})],
    ),
    _p(
        "stop/fork-core",
        "mark",
        "stop_requested",
        "Shutdown initiated (timeout=",
        r"Shutdown initiated \(timeout=",
        [
            (
                "(EngineCore pid=31) INFO 10-02 15:16:40 [core.py:1491] Shutdown initiated (timeout=0)",
                {"mark": "stop_requested"},
            )
        ],
    ),
    # uvicorn's own words: a stop when nothing said the engine died first (after a death uvicorn
    # shuts down too, and then it is part of the death)
    _p(
        "stop/uvicorn",
        "mark",
        "stop_requested",
        "Shutting down",
        r"^(?:\([^()]*\) )?(?:INFO:\s+)?Shutting down$",
        [
            ("INFO:     Shutting down", {"mark": "stop_requested"}),
            ("(APIServer pid=28269) INFO:     Shutting down", {"mark": "stop_requested"}),
        ],
    ),
    _p(
        "died/mpclient-v0.28",
        "mark",
        "engine_died",
        "engine core exited unexpectedly",
        r"engine core exited unexpectedly",
        [
            (
                "(APIServer pid=11958) WARNING 12-06 03:02:08 [core_client.py:817] [shutdown] MPClient: engine core exited "
                "unexpectedly; starting cleanup",
                {"mark": "engine_died"},
            )
        ],
    ),
    _p(
        "died/engine-core-proc",
        "mark",
        "engine_died",
        "died unexpectedly",
        r"Engine core proc(?:ess)? (?P<proc>\S+) died unexpectedly",
        [
            (
                "(APIServer pid=1) ERROR 11-20 09:12:33 [core_client.py:667] Engine core proc EngineCore_DP0 died "
                "unexpectedly, shutting down client.",
                {"mark": "engine_died", "proc": "EngineCore_DP0"},
            ),
            ("RuntimeError: Engine core process EngineCore_DP0 died unexpectedly.", {"proc": "EngineCore_DP0"}),
        ],
    ),
    _p(
        "died/engine-core-fatal",
        "mark",
        "engine_died",
        "EngineCore encountered a fatal error",
        r"EngineCore encountered a fatal error",
        [
            (
                "(EngineCore pid=26509) ERROR 12-06 03:12:23 [core.py:1512] EngineCore encountered a fatal error.",
                {"mark": "engine_died"},
            )
        ],
    ),
    _p(
        "died/v0-engine-failed",
        "mark",
        "engine_died",
        "has failed, terminating server process",
        r"(?:AsyncLLMEngine|Engine) has failed, terminating server process",
        [
            (
                "CRITICAL 11-20 09:12:33 launcher.py:99] AsyncLLMEngine has failed, terminating server process",
                {"mark": "engine_died"},
            )
        ],
    ),
    _p(
        "died/v0-mq-dead",
        "mark",
        "engine_died",
        "is already dead, terminating server process",
        r"MQLLMEngine is already dead, terminating server process",
        [
            (
                "CRITICAL 11-20 09:12:33 launcher.py:116] MQLLMEngine is already dead, terminating server process",
                {"mark": "engine_died"},
            )
        ],
    ),
    # --- GPU hard faults (docs/figures.md gpu_fault): the driver's words, with or without an exception
    _p(
        "gpu_fault/rocm",
        "event",
        "gpu_fault",
        "Memory access fault by GPU node-",
        r"Memory access fault by GPU node-(?P<node>\d+)(?: \(Agent handle: (?P<agent>[^)]*)\))? on address "
        r"(?P<address>0x[0-9A-Fa-f]+|\(nil\))\.?(?:\s*Reason: (?P<reason>[^.]+))?",
        [
            (
                "Memory access fault by GPU node-1 (Agent handle: 0x55ac14d27600) on address 0x7f9587e00000. Reason: Page "
                "not present or supervisor privilege.",
                {"node": 1, "address": "0x7f9587e00000", "reason": "Page not present or supervisor privilege"},
            ),
            (
                "Memory access fault by GPU node-4 (Agent handle: 0x26ff9f00) on address 0x7edbdee00000. Reason: Unknown.",
                {"node": 4, "reason": "Unknown"},
            ),
            ("Memory access fault by GPU node-1 on address 0x556905b5a000.", {"node": 1, "address": "0x556905b5a000"}),
        ],
    ),
    _p(
        "gpu_fault/illegal-address",
        "event",
        "gpu_fault",
        "an illegal memory access was encountered",
        r"(?P<reason>an illegal memory access was encountered)",
        [
            (
                "torch.AcceleratorError: CUDA error: an illegal memory access was encountered",
                {"reason": "an illegal memory access was encountered"},
            ),
            (
                "(Worker_TP1 pid=311) ERROR 11-20 09:12:33 [multiproc_executor.py:703] RuntimeError: CUDA error: an illegal "
                "memory access was encountered",
                {"reason": "an illegal memory access was encountered"},
            ),
        ],
    ),
    _p(
        "gpu_fault/launch-failure",
        "event",
        "gpu_fault",
        "unspecified launch failure",
        r"(?P<reason>unspecified launch failure)",
        [
            ("RuntimeError: HIP error: unspecified launch failure", {"reason": "unspecified launch failure"}),
            ("RuntimeError: CUDA error: unspecified launch failure", {"reason": "unspecified launch failure"}),
        ],
    ),
    _p(
        "gpu_fault/nccl",
        "event",
        "gpu_fault",
        "unhandled cuda error",
        r"(?P<reason>unhandled cuda error)",
        [
            (
                "torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/NCCLUtils.hpp:317, "
                "unhandled cuda error (run with NCCL_DEBUG=INFO for details), NCCL version 2.21.5",
                {"reason": "unhandled cuda error"},
            ),
            (
                "RuntimeError: NCCL Error 1: unhandled cuda error (run with NCCL_DEBUG=INFO for details)",
                {"reason": "unhandled cuda error"},
            ),
        ],
    ),
)

LITERALS: tuple[str, ...] = tuple(dict.fromkeys(p.literal for p in CATALOGUE))

# literal -> its patterns, in catalogue order; each regex is compiled the first time a line holds
# its literal (most reads need a fraction of them)
_BY_LITERAL: tuple[tuple[str, tuple[Pattern, ...]], ...] = tuple(
    (lit, tuple(p for p in CATALOGUE if p.literal == lit)) for lit in LITERALS
)
_RX: dict[str, Any] = {}


def _compiled(p: Pattern) -> Any:
    _RX[p.id] = rx = compile_rx(p.regex)
    return rx


def _hits_from_groups(p: Pattern, m: Any) -> list[Hit]:
    groups = {k: v for k, v in m.groupdict().items() if v is not None}
    if p.kind == "metric":
        detail = {k: v for k, v in groups.items() if k not in UNITS}
        return [Hit("metric", k, decimal(v), UNITS[k], p.id, dict(detail)) for k, v in groups.items() if k in UNITS]
    if p.kind == "boot":
        return [Hit("boot", k, v.lower() if k == "engine" else v, None, p.id, {}) for k, v in groups.items()]
    if p.kind == "event":
        detail = {k: maybe_num(v) for k, v in groups.items()}
        return [Hit("event", p.name, m.string.strip(), None, p.id, detail)]
    if p.kind == "mark":
        return [Hit("mark", p.name, m.string.strip(), None, p.id, {"mark": p.name, **groups})]
    return []


_SEARCH: list = []  # the literals' scan.Search, made on the first match()


def match(msg: str) -> list[Hit]:
    """Every hit on one line (message part or whole raw line), in catalogue order."""
    if "Received request " in msg:
        return []  # request logging echoes user prompts, which may quote anything
    # fresh Hits and dicts for each caller, so none can change what the cache holds (their
    # values and details hold str/int/float only: tests/test_patterns_config.py checks)
    return [
        Hit(h.kind, h.name, dict(h.value) if type(h.value) is dict else h.value, h.unit, h.pattern, dict(h.detail))
        for h in _match_cached(msg)
    ]


# A crash-looping server prints the same lines every boot (the config, the KV cache size, most
# warnings: 22,010 distinct messages among the 242,285 match() calls of an 8,000-boot log).
# The hits are a pure function of the text, so the last lines' hits are kept.
_MATCH_CACHE = 1024  # (1024 -> 2048 saves 5,000 of 45,733 misses there: not worth the memory)


def _match(msg: str) -> tuple[Hit, ...]:
    if not _SEARCH:
        from bootlog.read.scan import Search

        _SEARCH.append(Search([lit for lit, _ in _BY_LITERAL], every=True))
    hits: list[Hit] = []
    for li in _SEARCH[0].which(msg):  # the literals msg holds, ascending: one search of the line
        for p in _BY_LITERAL[li][1]:
            m = (_RX.get(p.id) or _compiled(p)).search(msg)
            if m is None:
                continue
            try:
                got = _hits_from_groups(p, m) if p.post is None else p.post(m, msg)
            except ValueError as e:
                if not unreadable_number(e):
                    raise
                continue  # not this fact
            if got and p.post is not None:
                for h in got:
                    h.pattern = p.id
            hits.extend(got or ())
    return tuple(hits)


_match_cached = functools.lru_cache(maxsize=_MATCH_CACHE)(_match)
