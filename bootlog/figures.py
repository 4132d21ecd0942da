"""The one list of figures: every number bootlog reports, one entry each (docs: docs/figures.md).

An entry says what the figure is (unit, kind), how it is judged (the config keys that can size
it, whether it follows a measured KV pool), and where it is shown (OpenMetrics help, the deploy
summary's key figures, the ingest line, the report's plots, the budget it is drawn against, the
timeline phase its line ends).  Everything else reads this list; the catalogue (parse.patterns)
says how each wording of a line gives a figure.  The order is the order figures are listed in
(a diff: capacity before timing).

A new figure is one entry here (and, when a log line prints it, one catalogue entry with its
sample lines).
"""

from __future__ import annotations

from dataclasses import dataclass

# Config keys that size GPU memory, most direct first (compare names the first as the likely cause).
SIZING: tuple[str, ...] = tuple(
    """
    kv_cache_memory_bytes gpu_memory_utilization max_model_len max_seq_len max_num_seqs max_num_batched_tokens
    kv_cache_dtype tensor_parallel_size pipeline_parallel_size data_parallel_size model quantization dtype
    block_size num_gpu_blocks_override enforce_eager compilation_config cudagraph_capture_sizes speculative_config
    enable_prefix_caching swap_space cpu_offload_gb kv_offloading_size max_lora_rank enable_lora
    limit_mm_per_prompt
""".split()
)
KV_SIZING = frozenset(SIZING) - {"limit_mm_per_prompt"}
GRAPH_SIZING = frozenset(
    {
        "compilation_config",
        "cudagraph_capture_sizes",
        "enforce_eager",
        "max_num_seqs",
        "max_num_batched_tokens",
        "max_seq_len_to_capture",
        "max_model_len",
        "tensor_parallel_size",
        "pipeline_parallel_size",
        "model",
        "quantization",
        "dtype",
        "kv_cache_dtype",
        "speculative_config",
        "block_size",
    }
)
WEIGHTS_SIZING = frozenset(
    {
        "model",
        "quantization",
        "dtype",
        "tensor_parallel_size",
        "pipeline_parallel_size",
        "load_format",
        "speculative_config",
        "enable_lora",
        "max_lora_rank",
        "cpu_offload_gb",
        "revision",
    }
)
CPU_BLOCKS_SIZING = frozenset(
    {
        "swap_space",
        "block_size",
        "kv_cache_dtype",
        "model",
        "tensor_parallel_size",
        "pipeline_parallel_size",
        "cpu_offload_gb",
        "kv_offloading_size",
    }
)

KINDS = ("capacity", "timing", "probe", "counter", "runtime", "other")


@dataclass(frozen=True)
class Figure:
    name: str
    unit: str
    # capacity: deterministic for an image + config + GPU, any move is a finding; timing: noisy,
    # judged against history; probe: measured around the log (hook), judged like a timing;
    # runtime: a periodic statistics line's series; other: read and stored, judged by its unit
    kind: str
    help: str = ""  # OpenMetrics HELP (others get a generic one)
    read: bool = True  # a catalogue wording prints it (False: derived, measured or a stats series)
    sized_by: frozenset[str] | None = None  # config keys that can size it; None: any key
    measured_kv: bool = False  # follows a KV pool the engine sized by measuring memory
    key: str | None = None  # its label among the deploy summary's key figures (hook)
    brief: bool = False  # in ingest's one-line summary of a boot
    plot: bool = False  # one of the report page's key-figure plots
    budget: str | None = None  # the figure it must fit under, drawn in its plot
    phase: tuple[str, int] | None = None  # (timeline phase its line ends, depth): judge.timeline


F = Figure
FIGURES: tuple[Figure, ...] = (
    # ---- capacity
    F(
        "kv_cache_tokens",
        "tokens",
        "capacity",
        "GPU KV cache size in tokens",
        sized_by=KV_SIZING,
        measured_kv=True,
        key="KV cache",
        brief=True,
        plot=True,
    ),
    F("num_gpu_blocks", "blocks", "capacity", "KV cache blocks on the GPU", sized_by=KV_SIZING, measured_kv=True),
    F(
        "num_cpu_blocks",
        "blocks",
        "capacity",
        "KV cache blocks on the CPU (swap)",
        sized_by=CPU_BLOCKS_SIZING,
        measured_kv=True,
    ),
    F(
        "max_concurrency",
        "x",
        "capacity",
        "Maximum concurrency for max_concurrency_request_tokens-token requests",
        sized_by=KV_SIZING,
        measured_kv=True,
        key="concurrency",
        brief=True,
        plot=True,
    ),
    F(
        "max_concurrency_request_tokens",
        "tokens",
        "capacity",
        "Request length the maximum concurrency is printed for",
        sized_by=frozenset({"max_model_len", "max_seq_len"}),
    ),
    F("kv_cache_available_gib", "GiB", "capacity", "Available KV cache memory", sized_by=KV_SIZING, measured_kv=True),
    F("model_load_gib", "GiB", "capacity", "Memory the model weights took", sized_by=WEIGHTS_SIZING),
    F(
        "graph_capture_gib",
        "GiB",
        "capacity",
        "Memory CUDA graph capture took (can be negative)",
        sized_by=GRAPH_SIZING,
        key="CUDA graphs",
        brief=True,
        plot=True,
        budget="cudagraph_estimate_gib",
    ),
    F("cudagraph_estimate_gib", "GiB", "capacity", "Estimated CUDA graph memory", sized_by=GRAPH_SIZING),
    F(
        "kv_bytes_per_token",
        "B/token",
        "capacity",
        "KV cache bytes per token (kv_cache_memory_bytes / kv_cache_tokens)",
        read=False,
        sized_by=KV_SIZING,
    ),
    F(
        "kv_margin_tokens",
        "tokens",
        "capacity",
        "KV cache tokens beyond max_num_seqs x max_model_len",
        read=False,
        sized_by=KV_SIZING,
        measured_kv=True,
    ),
    F(
        "non_kv_memory_gib",
        "GiB",
        "capacity",
        "CPU backend: worker memory consumed by non-KV usages when the KV cache was sized",
        measured_kv=True,
    ),
    # ---- timing
    F("model_load_s", "s", "timing", "Model loading time", phase=("model_load", 0)),
    F("weights_load_s", "s", "timing", "Weight loading time", phase=("weights_load", 2)),
    F("memory_profiling_s", "s", "timing", "Memory profiling time", phase=("memory_profiling", 2)),
    # (before torch_compile_s: the total is placed from the transform's start, judge.timeline rule 1)
    F("dynamo_transform_s", "s", "timing", "Dynamo bytecode transform time", phase=("dynamo_transform", 2)),
    F("compile_graph_s", "s", "timing", "Inductor graph compile time", phase=("compile", 2)),
    F(
        "compile_cache_load_s",
        "s",
        "timing",
        "Compiled graph load time from the cache",
        phase=("compile_cache_load", 2),
    ),
    F(
        "torch_compile_s",
        "s",
        "timing",
        "torch.compile time in total",
        key="torch.compile",
        brief=True,
        plot=True,
        phase=("compile", 1),
    ),
    F("graph_capture_s", "s", "timing", "CUDA graph capture time", phase=("graph_capture", 2)),
    F(
        "init_engine_s",
        "s",
        "timing",
        "init engine (profile, create kv cache, warmup model) time",
        phase=("init_engine", 0),
    ),
    F("init_engine_compile_s", "s", "timing", "Compilation part of init engine"),
    F(
        "boot_to_ready_s",
        "s",
        "timing",
        "First line of the boot to Application startup complete",
        read=False,
        key="boot to ready",
        plot=True,
    ),
    F("model_init_s", "s", "timing", "Model initialisation time (before weights load)"),
    # (the CPU backend's compile: "Warming up model for the compilation..." -> "Warming up done.",
    # two marks the boot splitter times)
    F(
        "compile_warmup_s",
        "s",
        "timing",
        "CPU backend compile warm-up (Warming up model ... Warming up done.)",
        read=False,
        phase=("compile", 1),
    ),
    # ---- measured around the log (the hook): docs/figures.md "added for the deploy around the log"
    F("probe_health_s", "s", "probe", "Time for GET /health to answer 200 after ready", read=False, key="health"),
    F("probe_ttft_s", "s", "probe", "Probe completion: time to first token", read=False, key="first token"),
    F("probe_decode_tps", "tok/s", "probe", "Probe completion: decode tokens per second", read=False, key="decode"),
    F("gpu_used_gib", "GiB", "probe", "GPU memory used after ready", read=False),
    F("gpu_free_gib", "GiB", "probe", "GPU memory free after ready", read=False, key="GPU free"),
    # ---- the server's own /metrics after ready (the hook, run.server_metrics): its word on the KV pool
    F(
        "metrics_kv_cache_tokens",
        "tokens",
        "capacity",
        "KV cache tokens by /metrics: num_gpu_blocks x block_size",
        read=False,
        sized_by=KV_SIZING,
        measured_kv=True,
        key="/metrics KV",
    ),
    F(
        "metrics_num_gpu_blocks",
        "blocks",
        "capacity",
        "KV cache blocks the engine allocated (/metrics vllm:cache_config_info)",
        read=False,
        sized_by=KV_SIZING,
        measured_kv=True,
    ),
    F(
        "metrics_block_size",
        "tokens",
        "capacity",
        "Tokens per KV cache block (/metrics vllm:cache_config_info)",
        read=False,
    ),
    # the server's counters at probe time: they count whatever traffic reached the server before
    # the probe, so a diff never calls their move drift; a plan may bound them
    F(
        "metrics_requests",
        "requests",
        "counter",
        "Requests finished by probe time (/metrics vllm:request_success_total)",
        read=False,
    ),
    F(
        "metrics_prompt_tokens",
        "tokens",
        "counter",
        "Prompt tokens processed by probe time (/metrics vllm:prompt_tokens_total)",
        read=False,
    ),
    F(
        "metrics_generation_tokens",
        "tokens",
        "counter",
        "Tokens generated by probe time (/metrics vllm:generation_tokens_total)",
        read=False,
    ),
    F(
        "metrics_num_preemptions",
        "preemptions",
        "counter",
        "Preemptions by probe time (/metrics vllm:num_preemptions_total)",
        read=False,
        key="preemptions",
    ),
    # ---- runtime statistics lines (a time series per boot)
    F("prompt_throughput_tps", "tokens/s", "runtime", read=False),
    F("generation_throughput_tps", "tokens/s", "runtime", read=False),
    F("running_reqs", "reqs", "runtime", read=False),
    F("waiting_reqs", "reqs", "runtime", read=False),
    F("kv_cache_usage_pct", "%", "runtime", read=False),
    F("prefix_cache_hit_rate_pct", "%", "runtime", read=False),
    F("spec_acceptance_rate_pct", "%", "runtime", read=False),
    F("spec_mean_acceptance_length", "tokens", "runtime", read=False),
    # ---- read by the catalogue beyond docs/figures.md's list
    F("kv_cache_reserved_gib", "GiB", "other", "KV cache memory reserved by kv_cache_memory_bytes", sized_by=KV_SIZING),
    F("initial_free_gib", "GiB", "other"),
    F("encoder_graph_capture_s", "s", "other"),
    F("encoder_graph_capture_gib", "GiB", "other"),
    F("cudagraph_pool_gib", "GiB", "other", "CUDA graph pool memory (actual)"),
    F("profiling_run_s", "s", "other", "Initial profiling/warmup run time", phase=("profiling_run", 2)),
    F("autofit_max_model_len", "tokens", "other"),
    F("attn_block_size", "tokens", "other"),
    F("mamba_page_padding_pct", "%", "other"),
)
del F

BY_NAME: dict[str, Figure] = {f.name: f for f in FIGURES}
UNITS: dict[str, str] = {f.name: f.unit for f in FIGURES}


def names(kind: str) -> tuple[str, ...]:
    """The figures of one kind, in list order."""
    if kind not in KINDS:
        raise ValueError(f"unknown kind of figure: {kind}")
    return tuple(f.name for f in FIGURES if f.kind == kind)
