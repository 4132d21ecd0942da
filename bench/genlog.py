#!/usr/bin/env python3
"""Write a realistic, deterministic vLLM server log of a given size, for benchmarks.

    python bench/genlog.py SIZE_MB OUT [--boots N] [--seed S] [--podman] [--noise-mb X] [--stats-share F]

The log holds several boots of a ROCm-fork TP=2 server (the operator's shape: banner,
non-default args, engine config line, loading bars, compile, KV sizing, graph capture, init,
routes, "Application startup complete.") each followed by runtime noise: periodic stats lines,
uvicorn access-log lines and long request-logging lines with prompts.  Boot lines are real
lines from the corpus (fixtures 057 / 051 / 037) with the figures varied per boot so that a
database built from the log has history worth diffing.  Same arguments -> same bytes.

--podman wraps every line in the `podman logs --timestamps` envelope (RFC 3339 UTC + space).
--noise-mb X puts X MiB of runtime noise after each boot instead of spreading SIZE_MB evenly;
with --boots 10000 --noise-mb 0 it makes a many-boot log for database-size benchmarks.
--stats-share F makes F of the runtime lines periodic stats lines (0.33: a stats line in every
third line, a month of a busy server); the rest keep the usual mix of requests and access lines.
"""

from __future__ import annotations

import argparse
import random
import sys
from datetime import datetime, timedelta, timezone
from typing import Iterator

MODEL = "/models/Qwen3.8-Flash-Next-Uncensored-FP8"
API = "(APIServer pid=1) "
ENG = "(EngineCore pid=89) "
W0 = "(Worker_TP0 pid=144) "
W1 = "(Worker_TP1 pid=147) "

# Words for prompts: lorem-like but with the vocabulary of real chat traffic, so prompt text
# looks like prompts (and contains words that also occur in boot lines, as real prompts do).
WORDS = (
    "the model cache memory token request server error warning loading graph capture compile "
    "please explain why this function fails when the input is empty and return a json object "
    "with keys summary details and code you are a helpful assistant answer briefly user system "
    "context window tool call result file path line number python rust kubernetes podman gpu "
    "KV cache size tokens concurrency out of memory traceback startup complete engine worker"
).split()


def _boot_lines(rng: random.Random, n: int, variant: dict) -> list[tuple[float, str]]:
    """One boot as (seconds after boot start, line-without-timestamp-envelope) pairs.

    The vLLM date is filled in later: "{ts}" marks where "MM-DD HH:MM:SS" goes.
    """
    v = variant
    maxlen = v["max_model_len"]
    seqs = v["max_num_seqs"]
    kv = v["kv_tokens"]
    conc = kv / maxlen
    load_s = v["load_s"]
    compile_s = v["compile_s"]
    cold = v["cold"]
    out: list[tuple[float, str]] = []
    t = 0.0

    def add(dt: float, text: str) -> None:
        nonlocal t
        t += dt
        out.append((t, text))

    add(0, "gpu-lease: waiting for 2 free GPU(s)…")
    add(
        0.5,
        "[w4a8_fp8_wmma] registered at _POSSIBLE_KERNELS[ROCM][0]: ['RocmW4A8Fp8WmmaLinearKernel', 'TritonW4A16LinearKernel', 'ConchLinearKernel', 'ExllamaLinearKernel']",
    )
    add(0, f"{API}INFO {{ts}} [utils.py:344] ")
    add(0, f"{API}INFO {{ts}} [utils.py:344]        █     █     █▄   ▄█")
    add(0, f"{API}INFO {{ts}} [utils.py:344]  ▄▄ ▄█ █     █     █ ▀▄▀ █  version {v['version']}")
    add(0, f"{API}INFO {{ts}} [utils.py:344]   █▄█▀ █     █     █     █  model   {MODEL}")
    add(0, f"{API}INFO {{ts}} [utils.py:344]    ▀▀  ▀▀▀▀▀ ▀▀▀▀▀ ▀     ▀")
    add(0, f"{API}INFO {{ts}} [utils.py:344] ")
    prefix = "'enable_prefix_caching': False, " if v["no_prefix"] else ""
    add(
        0,
        f"{API}INFO {{ts}} [utils.py:278] non-default args: {{'model_tag': '{MODEL}', 'enable_auto_tool_choice': True, 'tool_call_parser': 'qwen3_xml', 'host': '0.0.0.0', 'port': 7770, 'model': '{MODEL}', 'max_model_len': {maxlen}, 'reasoning_parser': 'qwen3', 'served_model_name': ['frank-primary'], 'tensor_parallel_size': 2, 'gpu_memory_utilization': {v['util']}, 'kv_cache_dtype': 'fp8', 'kv_cache_memory_bytes': {v['kv_bytes']}, {prefix}'max_num_batched_tokens': {v['mnbt']}, 'max_num_seqs': {seqs}, 'expert_precise_memory': True}}",
    )
    for var in ("VLLM_TP_CU_WEIGHTS", "VLLM_ROCM_W4A8_FP8_WMMA_MOE", "VLLM_ATTN_AUTOTUNE_PARALLEL"):
        add(0, f"{API}WARNING {{ts}} [envs.py:2060] Unknown vLLM environment variable detected: {var}")
    add(0, f"{API}INFO {{ts}} [model.py:617] Resolved architecture: Qwen3_5MoeForConditionalGeneration")
    add(0, f"{API}INFO {{ts}} [model.py:1760] Using max model len {maxlen}")
    add(
        0,
        f"{API}INFO {{ts}} [cache.py:278] Using fp8 data type to store kv cache. It reduces the GPU memory footprint and boosts the performance. Meanwhile, it may cause accuracy drop without a proper scaling factor",
    )
    add(0, f"{API}INFO {{ts}} [scheduler.py:239] Chunked prefill is enabled with max_num_batched_tokens={v['mnbt']}.")
    add(
        1,
        f"{API}INFO {{ts}} [interface.py:662] Setting attention block size to 3136 tokens to ensure that attention page size is >= mamba page size.",
    )
    add(
        0,
        f"{API}INFO {{ts}} [interface.py:680] Padding mamba page size by 0.13% to ensure that mamba page size and attention page size are exactly equal.",
    )
    add(
        6,
        f"{ENG}INFO {{ts}} [core.py:124] Initializing a V1 LLM engine (v{v['version']}) with config: model='{MODEL}', speculative_config=None, tokenizer='{MODEL}', skip_tokenizer_init=False, tokenizer_mode=auto, revision=None, tokenizer_revision=None, trust_remote_code=False, dtype=torch.bfloat16, max_seq_len={maxlen}, download_dir=None, load_format=auto, tensor_parallel_size=2, pipeline_parallel_size=1, data_parallel_size=1, decode_context_parallel_size=1, dcp_comm_backend=ag_rs, disable_custom_all_reduce=True, quantization=fp8, quantization_config=None, enforce_eager=False, enable_return_routed_experts=False, kv_cache_dtype=fp8, device_config=cuda, structured_outputs_config=StructuredOutputsConfig(backend='auto', disable_any_whitespace=False, disable_additional_properties=False, reasoning_parser='qwen3', reasoning_parser_plugin='', enable_in_reasoning=False), observability_config=ObservabilityConfig(show_hidden_metrics_for_version=None, otlp_traces_endpoint=None, collect_detailed_traces=None, kv_cache_metrics=False, kv_cache_metrics_sample=0.01, cudagraph_metrics=False, enable_layerwise_nvtx_tracing=False, enable_mfu_metrics=False, enable_mm_processor_stats=False, enable_logging_iteration_details=False), seed=0, served_model_name=frank-primary, enable_prefix_caching={not v['no_prefix']}, enable_chunked_prefill=True, pooler_config=None, compilation_config={{'mode': <CompilationMode.VLLM_COMPILE: 3>, 'debug_dump_path': None, 'cache_dir': '', 'compile_cache_save_format': 'binary', 'backend': 'inductor', 'custom_ops': ['none'], 'splitting_ops': ['vllm::unified_attention_with_output', 'vllm::qwen_gdn_attention_core'], 'compile_sizes': [], 'compile_ranges_endpoints': [{v['mnbt']}], 'cudagraph_mode': <CUDAGraphMode.FULL_AND_PIECEWISE: (2, 1)>, 'cudagraph_num_of_warmups': 1, 'cudagraph_capture_sizes': [1, 2, 4, 8], 'max_cudagraph_capture_size': 8}}, kernel_config=KernelConfig(ir_op_priority=IrOpPriorityConfig(rms_norm=['native'], fused_add_rms_norm=['native']), enable_flashinfer_autotune=True, moe_backend='auto', linear_backend='auto')",
    )
    add(
        0,
        f"{ENG}WARNING {{ts}} [multiproc_executor.py:1033] Reducing Torch parallelism from 16 threads to 1 to avoid unnecessary CPU contention. Set OMP_NUM_THREADS in the external environment to tune this value as needed.",
    )
    add(
        0,
        f"{ENG}INFO {{ts}} [multiproc_executor.py:140] DP group leader: node_rank=0, node_rank_within_dp=0, master_addr=127.0.0.1, mq_connect_ip=10.88.0.7 (local), world_size=2, local_world_size=2",
    )
    add(
        5,
        "(Worker pid=144) INFO {ts} [parallel_state.py:1422] world_size=2 rank=0 local_rank=0 distributed_init_method=tcp://127.0.0.1:45987 backend=nccl",
    )
    add(
        2,
        "(Worker pid=147) INFO {ts} [parallel_state.py:1422] world_size=2 rank=1 local_rank=1 distributed_init_method=tcp://127.0.0.1:45987 backend=nccl",
    )
    add(0, "(Worker pid=144) INFO {ts} [pynccl.py:113] vLLM is using nccl==2.27.7")
    add(
        12,
        "(Worker pid=144) INFO {ts} [parallel_state.py:1735] rank 0 in world size 2 is assigned as DP rank 0, PP rank 0, PCP rank 0, TP rank 0, EP rank 0, EPLB rank N/A",
    )
    for w in (W0, W1):
        add(0, f"{w}INFO {{ts}} [gpu_model_runner.py:5070] Starting to load model {MODEL}...")
    add(
        0,
        f"{W0}INFO {{ts}} [rocm.py:563] Found incompatible backend(s) [TURBOQUANT] with AttentionType.DECODER. Overriding with TRITON_ATTN out of potential backends: ['TRITON_ATTN', 'ROCM_ATTN'].",
    )
    shards = 131
    step = load_s / 8
    for i in range(9):
        k = min(shards, i * shards // 8)
        pct = 100 * k // shards
        add(
            step if i else 0,
            f"{W0}Loading safetensors checkpoint shards: {pct:3d}% Completed | {k}/{shards} [{int(i * step) // 60:02d}:{int(i * step) % 60:02d}<{int((8 - i) * step) // 60:02d}:{int((8 - i) * step) % 60:02d}, {step / 16:.2f}s/it]",
        )
    add(0, f"{W0}")
    for w in (W0, W1):
        add(
            0,
            f"{w}INFO {{ts}} [default_loader.py:397] Loading weights took {load_s - rng.uniform(0.3, 0.9):.2f} seconds",
        )
    for w in (W0, W1):
        add(
            0.5,
            f"{w}INFO {{ts}} [gpu_model_runner.py:5165] Model loading took {v['load_gib']:.2f} GiB memory and {load_s:.6f} seconds",
        )
    add(
        1,
        f"{W0}INFO {{ts}} [backends.py:1089] Using cache directory: /root/.cache/vllm/torch_compile_cache/9ec5ad06fa/rank_0_0/backbone for vLLM's torch.compile",
    )
    add(1, f"{W0}INFO {{ts}} [backends.py:1148] Dynamo bytecode transform time: {rng.uniform(1.2, 15):.2f} s")
    if cold:
        add(
            compile_s - 9,
            f"{W0}INFO {{ts}} [backends.py:393] Compiling a graph for compile range (1, {v['mnbt']}) takes {compile_s - 9:.2f} s",
        )
        add(
            1,
            f"{W0}INFO {{ts}} [decorators.py:708] saved AOT compiled function to /root/.cache/vllm/torch_compile_cache/torch_aot_compile/8088973561c555bd631c3f18d36754a0e6e5a5bfad56d2cc9f94c4e796025f63/rank_0_0/model",
        )
    else:
        add(
            2,
            f"{W0}INFO {{ts}} [backends.py:292] Directly load the compiled graph(s) for compile range (1, {v['mnbt']}) from the cache, took {rng.uniform(2, 2.4):.3f} s",
        )
        add(
            0,
            f"{W0}INFO {{ts}} [decorators.py:311] Directly load AOT compilation from path /root/.cache/vllm/torch_compile_cache/torch_aot_compile/38c721a068b9388bec6b0c2c0c75ac620eb51c566b30a54431dd0ed2c283eb29/rank_0_0/model",
        )
    add(0, f"{W0}INFO {{ts}} [monitor.py:87] torch.compile took {compile_s:.2f} s in total")
    add(3, f"{W0}INFO {{ts}} [monitor.py:116] Initial profiling/warmup run took {rng.uniform(3, 4):.2f} s")
    for w in (W1, W0):
        add(0, f"{w}INFO {{ts}} [gpu_model_runner.py:6806] Estimated CUDA graph memory: {v['graph_est']:.2f} GiB total")
    add(0, f"{W0}INFO {{ts}} [gpu_worker.py:469] Available KV cache memory: {v['kv_gib']:.2f} GiB")
    if v.get("fail") == "oom":
        return out + _oom_tail(t)
    add(0, f"{ENG}INFO {{ts}} [kv_cache_utils.py:1733] GPU KV cache size: {kv:,} tokens")
    add(
        0,
        f"{ENG}INFO {{ts}} [kv_cache_utils.py:1734] Maximum concurrency for {maxlen:,} tokens per request: {conc:.2f}x",
    )
    add(
        1,
        f"{W0}Capturing CUDA graphs (mixed prefill-decode, PIECEWISE):   0%|          | 0/4 [00:00<?, ?it/s]Capturing CUDA graphs (mixed prefill-decode, PIECEWISE): 100%|██████████| 4/4 [00:01<00:00,  3.91it/s]",
    )
    add(
        0,
        f"{W0}Capturing CUDA graphs (decode, FULL):   0%|          | 0/4 [00:00<?, ?it/s]Capturing CUDA graphs (decode, FULL): 100%|██████████| 4/4 [00:01<00:00,  3.40it/s]",
    )
    for w, gib in ((W0, v["graph_gib"][0]), (W1, v["graph_gib"][1])):
        add(
            1,
            f"{w}INFO {{ts}} [gpu_model_runner.py:6494] Graph capturing finished in {rng.randint(3, 6)} secs, took {gib:.2f} GiB",
        )
    add(
        0,
        f"{ENG}INFO {{ts}} [core.py:320] init engine (profile, create kv cache, warmup model) took {v['init_s']:.2f} s (compilation: {compile_s + 0.01:.2f} s)",
    )
    add(1, f"{API}INFO {{ts}} [api_server.py:600] Supported tasks: ['generate']")
    add(0, f'{API}INFO {{ts}} [parser_manager.py:202] "auto" tool choice has been enabled.')
    add(
        0,
        f"{API}WARNING {{ts}} [model.py:1517] Default vLLM sampling parameters have been overridden by the model's `generation_config.json`: `{{'temperature': 1.0, 'top_k': 20, 'top_p': 0.95}}`. If this is not intended, please relaunch vLLM instance with `--generation-config vllm`.",
    )
    add(0, f"{API}INFO {{ts}} [api_server.py:604] Starting vLLM server on http://0.0.0.0:7770")
    add(0, f"{API}INFO {{ts}} [launcher.py:37] Available routes are:")
    for route, methods in (
        ("/openapi.json", "HEAD, GET"),
        ("/docs", "HEAD, GET"),
        ("/health", "GET"),
        ("/metrics", "GET"),
        ("/v1/models", "GET"),
        ("/v1/chat/completions", "POST"),
        ("/v1/completions", "POST"),
        ("/v1/responses", "POST"),
        ("/tokenize", "POST"),
    ):
        add(0, f"{API}INFO {{ts}} [launcher.py:46] Route: {route}, Methods: {methods}")
    add(0, f"{API}INFO:     Started server process [1]")
    add(0, f"{API}INFO:     Waiting for application startup.")
    add(0, f"{API}INFO:     Application startup complete.")
    return out


def _oom_tail(t: float) -> list[tuple[float, str]]:
    """The death of a boot at graph capture (the operator's ladder failures), as the fork prints it."""
    lines = [
        f"{W1}ERROR {{ts}} [multiproc_executor.py:839] WorkerProc hit an exception.",
        f"{W1}ERROR {{ts}} [multiproc_executor.py:839] Traceback (most recent call last):",
        f'{W1}ERROR {{ts}} [multiproc_executor.py:839]   File "/app/vllm/vllm/v1/worker/gpu_model_runner.py", line 6494, in capture_model',
        f"{W1}ERROR {{ts}} [multiproc_executor.py:839]     self._capture_cudagraphs(",
        f"{W1}ERROR {{ts}} [multiproc_executor.py:839] torch.OutOfMemoryError: HIP out of memory. Tried to allocate 76.00 MiB. GPU 1 has a total capacity of 31.86 GiB of which 0 bytes free. Of the allocated memory 29.12 GiB is allocated by PyTorch, and 1.02 GiB is reserved by PyTorch but unallocated.",
        f"{ENG}ERROR {{ts}} [core.py:1010] EngineCore failed to start.",
        f"{ENG}ERROR {{ts}} [core.py:1010] Exception: WorkerProc initialization failed due to an exception in a background process. See stack trace for root cause.",
        f"{API}RuntimeError: Engine core initialization failed. See root cause above. Failed core proc(s): {{}}",
    ]
    return [(t + 1, s) for s in lines]


def _variants(rng: random.Random, n: int) -> list[dict]:
    """Per-boot figures: mostly the deployed shape, with the config changes and failures an
    operator's history really has (a window change, one OOM rung, a cold compile)."""
    out = []
    for i in range(n):
        maxlen, seqs, kv = 200704, 3, 398658
        if i % 7 == 3:  # a ladder rung that died at graph capture
            maxlen, kv = 262144, 0
        elif i % 5 == 4:  # a config change: longer window, fewer... still 3 seqs, bigger pool
            maxlen, kv = 241664, 732359
        variant = {
            "version": "0.22.69",
            "max_model_len": maxlen,
            "max_num_seqs": seqs,
            "kv_tokens": kv,
            "kv_bytes": 3166500000 if maxlen == 200704 else 6100000000,
            "util": 0.982,
            "mnbt": 2048,
            "no_prefix": i % 2 == 0,
            "load_s": rng.uniform(380, 430),
            "load_gib": 14.21,
            "cold": i == 0 or i % 9 == 5,
            "graph_est": 0.07,
            "graph_gib": (0.31, 0.17) if i % 3 else (-0.06, -0.06),
            "kv_gib": 2.93 if maxlen == 200704 else 5.41,
            "init_s": rng.uniform(38, 45),
            "fail": "oom" if kv == 0 else None,
        }
        variant["compile_s"] = rng.uniform(180, 190) if variant["cold"] else rng.uniform(3.9, 4.2)
        out.append(variant)
    return out


def _prompt(rng: random.Random, n_words: int) -> str:
    words = rng.choices(WORDS, k=n_words)
    # Chat templates put literal \n escapes into the logged repr, as real request logs show.
    return (
        "<|im_start|>system\\nYou are a helpful assistant.<|im_end|>\\n<|im_start|>user\\n"
        + " ".join(words)
        + "<|im_end|>\\n<|im_start|>assistant\\n"
    )


def _noise(
    rng: random.Random, start: datetime, budget: int, fmt_ts, faults: bool, stats_share: float | None = None
) -> Iterator[tuple[datetime, str]]:
    """Runtime lines (with their time) after a ready boot, about `budget` bytes of them; with
    stats_share, that share of them are stats lines (one per tick, the others balanced to it)."""
    size = 0
    t = start
    tick = 0
    fault_at = budget // 2 if faults else -1
    others = 0.0  # lines other than stats still owed to reach stats_share
    while size < budget:
        t += timedelta(seconds=10)
        tick += 1
        ts = fmt_ts(t)
        lines: list[str] = []
        n_health = 0
        if stats_share is not None:
            # the other lines in the usual mix's proportions: mostly requests (3 lines each)
            others += (1 - stats_share) / stats_share
            n_req = 0
            while others >= 3:  # (what is left carries over to the next tick)
                if rng.random() < 0.93:
                    n_req += 1
                    others -= 3
                else:
                    n_health += 1
                    others -= 1
        else:
            n_req = rng.randint(0, 3)
        for _ in range(n_req):
            rid = "%032x" % rng.getrandbits(128)
            lines.append(
                f"{API}INFO {ts} [logger.py:41] Received request chatcmpl-{rid}: prompt: '{_prompt(rng, rng.randint(40, 400))}', "
                f"params: SamplingParams(n=1, presence_penalty=0.0, frequency_penalty=0.0, repetition_penalty=1.0, temperature=0.7, top_p=0.95, top_k=20, min_p=0.0, seed=None, stop=[], stop_token_ids=[], bad_words=[], include_stop_str_in_output=False, ignore_eos=False, max_tokens={rng.randint(256, 65536)}, min_tokens=0, logprobs=None, prompt_logprobs=None, skip_special_tokens=True, spaces_between_special_tokens=True, truncate_prompt_tokens=None, structured_outputs=None, extra_args=None), prompt_token_ids: None, prompt_embeds shape: None, lora_request: None."
            )
            lines.append(f"{API}INFO {ts} [async_llm.py:312] Added request chatcmpl-{rid}.")
            lines.append(
                f'{API}INFO:     192.168.0.{rng.randint(2, 254)}:{rng.randint(30000, 65000)} - "POST /v1/chat/completions HTTP/1.1" 200 OK'
            )
        if stats_share is None and tick % 3 == 0:
            n_health = 1
        for _ in range(n_health):
            lines.append(f'{API}INFO:     127.0.0.1:{rng.randint(30000, 65000)} - "GET /health HTTP/1.1" 200 OK')
        lines.append(
            f"{API}INFO {ts} [loggers.py:259] Engine 000: Avg prompt throughput: {rng.uniform(0, 3000):.1f} tokens/s, "
            f"Avg generation throughput: {rng.uniform(0, 40):.1f} tokens/s, Running: {rng.randint(0, 3)} reqs, "
            f"Waiting: {rng.randint(0, 1)} reqs, GPU KV cache usage: {rng.uniform(0, 45):.1f}%, Prefix cache hit rate: {rng.uniform(0, 60):.1f}%"
        )
        if 0 <= fault_at <= size:
            # The fork's gdn_hip state-fault burst from the operator's notes, then its cap line.
            fault_at = -1
            for k in range(1, 33):
                head = 3 if k <= 23 else 8
                lines.append(
                    f"[gdn_hip] ERROR gdn_decode_r: state out of ssm-cache range: max|S|=0 with non-finite values (slot=42 head={head} limit=3.40282e+38) fault #{k}"
                )
            lines.append("[gdn_hip] ERROR: state fault report limit (32) reached; further faults are counted silently")
        for line in lines:
            size += len(line) + 1
            yield t, line


def generate(
    size_mb: float,
    out_path: str,
    *,
    boots: int = 6,
    seed: int = 7,
    podman: bool = False,
    noise_mb: float | None = None,
    stats_share: float | None = None,
) -> int:
    """Write the log; return the number of bytes written.

    Without noise_mb the runtime noise is spread so the file ends near size_mb; the last
    boot's noise is cut at the target (a log ends wherever the server is when you read it).
    """
    rng = random.Random(seed)
    total = int(size_mb * 1024 * 1024)
    variants = _variants(rng, boots)
    clock = datetime(2026, 10, 2, 16, 53, 1, tzinfo=timezone.utc)
    written = 0
    produced = 0  # bytes emitted so far, flushed or not
    buf: list[str] = []

    def vllm_ts(t: datetime) -> str:
        return t.strftime("%m-%d %H:%M:%S")

    with open(out_path, "wb") as fh:

        def emit(t: datetime, text: str) -> None:
            nonlocal produced
            if podman:
                text = t.strftime("%Y-%m-%dT%H:%M:%S.") + f"{t.microsecond:06d}000Z " + text
            buf.append(text)
            produced += len(text.encode("utf-8")) + 1
            if len(buf) >= 5000:
                flush()

        def flush() -> None:
            nonlocal written
            if buf:
                data = ("\n".join(buf) + "\n").encode("utf-8")
                fh.write(data)
                written += len(data)
                buf.clear()

        for i, variant in enumerate(variants):
            t = clock
            before = produced
            for dt, text in _boot_lines(rng, i, variant):
                t = clock + timedelta(seconds=dt)
                emit(t, text.replace("{ts}", vllm_ts(t)) if "{ts}" in text else text)
            boot_bytes = produced - before
            clock = t + timedelta(seconds=1)
            if variant["fail"] is None:
                if noise_mb is not None:
                    budget = int(noise_mb * 1024 * 1024)
                else:
                    # share what is left of the target among the ready boots still to come
                    later = variants[i + 1 :]
                    ready_left = 1 + sum(1 for v in later if v["fail"] is None)
                    budget = max(0, (total - produced - boot_bytes * len(later)) // ready_left)
                if budget:
                    for t, line in _noise(rng, clock, budget, vllm_ts, faults=(i % 4 == 1), stats_share=stats_share):
                        emit(t, line)
                    clock = t
            clock += timedelta(minutes=3)
        flush()
    return written


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("size_mb", type=float, help="target size in MiB (runtime noise fills it)")
    ap.add_argument("out", help="output file")
    ap.add_argument("--boots", type=int, default=6)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--podman", action="store_true", help="wrap lines in the podman --timestamps envelope")
    ap.add_argument("--noise-mb", type=float, default=None, help="MiB of runtime noise after each ready boot")
    ap.add_argument(
        "--stats-share",
        type=float,
        default=None,
        help="share of the runtime lines that are stats lines (0 < F <= 1; 0.33: every third line)",
    )
    a = ap.parse_args(argv)
    if a.stats_share is not None and not 0 < a.stats_share <= 1:
        ap.error("--stats-share must be in (0, 1]")
    n = generate(
        a.size_mb, a.out, boots=a.boots, seed=a.seed, podman=a.podman, noise_mb=a.noise_mb, stats_share=a.stats_share
    )
    print(f"wrote {n / 1048576:.1f} MiB to {a.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
