"""The pattern catalogue against its own samples and against real lines from the corpus.

Verbatim lines below are copied from /work/shared/corpus/raw (file number in the comment, ANSI
colour codes removed as the envelope stage does); expected values come from the corpus hand
labels (.expected.json) or are read off the line by eye, never from the code under test.
"""

from __future__ import annotations

import json
import math
import re
from collections import defaultdict
from pathlib import Path

import pytest

from bootlog.parse import patterns as P
from bootlog.parse.failures import kv_insufficient_detail, oom_detail, value_error_detail
from bootlog.parse.patterns import CATALOGUE, LITERALS, Hit, match
from bootlog.parse.reprs import parse_config

KINDS = {"metric", "boot", "stat", "event", "config", "mark"}


def flatten(hits: list[Hit]) -> dict:
    """All values a line gave, in one dict (metric/boot by name, config/stats merged, event detail)."""
    out: dict = {}
    for h in hits:
        if h.kind in ("metric", "boot"):
            out[h.name] = h.value
        elif h.kind in ("config", "stat"):
            out.update(h.value)
            out.update(h.detail)
        else:
            out.update(h.detail)
    return out


def same(a: object, b: object) -> bool:
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    if isinstance(a, (int, float)) and isinstance(b, (int, float)) and not isinstance(a, bool):
        return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-9)
    return a == b


SAMPLES = [(p, i, line, exp) for p in CATALOGUE for i, (line, exp) in enumerate(p.samples)]


@pytest.mark.parametrize("p,i,line,exp", SAMPLES, ids=[f"{p.id}#{i}" for p, i, _, _ in SAMPLES])
def test_every_sample_gives_its_values(p, i, line, exp):
    hits = match(line)
    assert any(h.pattern == p.id for h in hits), f"{p.id} did not fire on its own sample"
    got = flatten(hits)
    wrong = {k: (v, got.get(k, "<missing>")) for k, v in exp.items() if not same(got.get(k, "<missing>"), v)}
    assert not wrong, wrong


def test_catalogue_entries_are_well_formed():
    ids = [p.id for p in CATALOGUE]
    assert len(ids) == len(set(ids)), "duplicate entry ids"
    for p in CATALOGUE:
        assert p.kind in KINDS, p.id
        assert p.samples, f"{p.id} has no sample"
        assert p.literal, p.id
        for line, exp in p.samples:
            assert p.literal in line, f"{p.id}: literal {p.literal!r} not in sample {line[:80]!r}"
            assert exp, f"{p.id}: sample without expected values"
        if p.kind == "metric":
            assert p.name in P.UNITS and p.unit == P.UNITS[p.name], p.id
            assert f"(?P<{p.name}>" in p.regex, f"{p.id}: regex has no group for {p.name}"


def test_literals_are_the_deduplicated_catalogue_literals():
    assert len(LITERALS) == len(set(LITERALS))
    assert set(LITERALS) == {p.literal for p in CATALOGUE}


def test_metric_units_follow_metrics_md():
    # the public names and units of docs/figures.md (kept exact)
    public = {
        "kv_cache_tokens": "tokens",
        "max_concurrency": "x",
        "max_concurrency_request_tokens": "tokens",
        "kv_cache_available_gib": "GiB",
        "num_gpu_blocks": "blocks",
        "num_cpu_blocks": "blocks",
        "model_load_gib": "GiB",
        "model_load_s": "s",
        "weights_load_s": "s",
        "memory_profiling_s": "s",
        "graph_capture_s": "s",
        "graph_capture_gib": "GiB",
        "cudagraph_estimate_gib": "GiB",
        "torch_compile_s": "s",
        "dynamo_transform_s": "s",
        "compile_graph_s": "s",
        "compile_cache_load_s": "s",
        "init_engine_s": "s",
        "init_engine_compile_s": "s",
    }
    for name, unit in public.items():
        assert P.UNITS[name] == unit, name
    fired = {h.name for p in CATALOGUE for line, _ in p.samples for h in match(line) if h.kind == "metric"}
    assert set(public) <= fired, set(public) - fired


def test_one_line_gives_several_hits_and_units():
    hits = match(
        "(EngineCore pid=270) INFO 11-20 09:12:33 [kv_cache_utils.py:2032] GPU KV cache size: "
        "1,350,182 tokens, Maximum concurrency for 32,768 tokens per request: 41.20x"
    )
    assert [(h.name, h.value, h.unit) for h in hits] == [
        ("kv_cache_tokens", 1350182, "tokens"),
        ("max_concurrency_request_tokens", 32768, "tokens"),
        ("max_concurrency", 41.2, "x"),
    ]


@pytest.mark.parametrize(
    "line",
    [
        # HPU lines that say "took ... GB" but are not model loading (corpus 029)
        "(EngineCore_DP0 pid=381139) INFO 01-27 22:06:46 [hpu_model_runner.py:3748] Wrapping in HPUGraph took 0.0000 GB",
        "(EngineCore_DP0 pid=381139) INFO 01-27 22:06:47 [hpu_model_runner.py:3776] Compilation took 0.0000 GB",
        "(EngineCore_DP0 pid=381139) INFO 01-27 22:07:25 [hpu_worker.py:236] Model profiling run took 9.042 GiB of "
        "device memory (43.84 GiB/126.5 GiB used) and 5.39 GiB of host memory (90.88 GiB/1007 GiB used)",
        "(EngineCore_DP0 pid=381139) INFO 01-27 22:07:26 [linear.py:81] Decode bucket config (min, step, max_warmup) "
        "bs:[1, 4, 64], blocks:[48, 16, 64]",
        "(EngineCore_DP0 pid=381139) INFO 01-27 22:07:26 [hpu_worker.py:288] Usable num_blocks: 1189, actual allocated "
        "num_blocks: 152320 (_PAD_BLOCK_ID=0, _PAD_SLOT_ID=-1)",
        # V1 profiling placeholder, not a block count (corpus 036)
        "(EngineCore pid=26109) INFO 04-28 11:14:01 [kv_cache_utils.py:1300] Overriding num_gpu_blocks=0 with "
        "num_gpu_blocks_override=512",
        "(EngineCore_DP0 pid=270) INFO 11-20 09:12:33 [kv_cache_utils.py:1224] Multiplying the GPU KV cache size by the "
        "dcp_world_size 4.",
        "(EngineCore_DP0 pid=4095770) WARNING 11-14 05:27:00 [kv_cache_utils.py:1095] Hybrid KV cache manager is disabled "
        "for this hybrid model, This means we do not enable any optimizations for saving KV cache memory (e.g., dropping "
        "the KV cache outside the sliding window). The compute of layers like sliding window is still saved.",
        "(EngineCore pid=38078) WARNING 08-02 09:33:32 [kv_cache_utils.py:1208] Add 3 padding layers, may waste at most "
        "10.00% KV cache memory",
        "(Worker_TP0 pid=412) INFO 11-20 09:12:33 [gpu_worker.py:372] Free memory on device (78.18/79.19 GiB) on startup. "
        "Desired GPU memory utilization is (0.9, 71.27 GiB). Actual usage is 14.99 GiB for weight, 1.24 GiB for peak "
        "activation, 0.47 GiB for non-torch memory, and 0.62 GiB for CUDAGraph memory.",
        "Capturing CUDA graph shapes: 100%|\u2588\u2588\u2588\u2588\u2588\u2588\u2588\u2588\u2588\u2588| 35/35 "
        "[00:10<00:00,  3.40it/s]",
        "(EngineCore pid=48200) INFO 06-02 14:29:41 [gpu_worker.py:142] It took 1.23 seconds to fall asleep.",
        "(Worker_TP0 pid=412) INFO 11-20 09:12:33 [backends.py:115] Directly load the compiled graph for shape None from "
        "the cache",
        "INFO 11-20 09:12:33 [loggers.py:182] Engine 000: Iteration(1532): 1 context requests, 2048 context tokens, "
        "7 generation requests, 7 generation tokens, iteration elapsed time: 41.37 ms, GPU KV cache usage: 12.5%",
    ],
)
def test_lookalike_lines_give_no_figures(line):
    assert [h for h in match(line) if h.kind in ("metric", "stat")] == []


def test_request_logging_is_never_read_as_figures():
    # request logging (corpus 001 wording) echoes the user's prompt verbatim
    line = (
        "INFO 04-28 16:56:08 logger.py:36] Received request chat-45cf55a99b8544a6ae4e335a2ed6d622: prompt: "
        "'<s>[INST] Why does my log say GPU KV cache size: 1,350,182 tokens, Maximum concurrency for 32,768 "
        "tokens per request: 41.20x? [/INST]', params: SamplingParams(n=1)"
    )
    assert match(line) == []


def test_compile_tag_prefix_is_kept_apart_from_file_info():
    # v0.32+ prefixes compile lines with "[<tag>] " (encoder compiles); [file:line] is not a tag
    hits = match(
        "(Worker_TP0 pid=412) INFO 11-20 09:12:33 [monitor.py:62] [Qwen3VisionTransformer] "
        "torch.compile took 4.50 s in total"
    )
    assert [(h.name, h.value, h.detail.get("compile_tag")) for h in hits] == [
        ("torch_compile_s", 4.5, "Qwen3VisionTransformer")
    ]
    hits = match("(Worker_TP0 pid=412) INFO 11-20 09:12:33 [monitor.py:53] torch.compile took 35.61 s in total")
    assert "compile_tag" not in hits[0].detail


def test_encoder_graph_capture_is_not_the_model_graph_capture():
    hits = match(
        "(Worker_TP0 pid=412) INFO 11-20 09:12:33 [mm_encoder_model_runner.py:94] Encoder graph capturing "
        "finished in 3 secs, took 0.11 GiB (12 graphs)"
    )
    assert {h.name for h in hits} == {"encoder_graph_capture_s", "encoder_graph_capture_gib"}


def test_stats_line_with_per_position_rates_is_not_split_naively():
    hits = match(
        "(APIServer pid=1) INFO 11-20 09:12:33 [metrics.py:120] SpecDecoding metrics: Mean acceptance "
        "length: 3.60, Accepted throughput: 130.20 tokens/s, Drafted throughput: 200.00 tokens/s, "
        "Accepted: 1302 tokens, Drafted: 2000 tokens, Per-position acceptance rate: 0.812, 0.667, 0.523, "
        "0.402, 0.301, Avg Draft acceptance rate: 65.1%"
    )
    assert len(hits) == 1 and hits[0].kind == "stat"
    assert hits[0].value["spec_acceptance_rate_pct"] == 65.1
    assert hits[0].value["spec_mean_acceptance_length"] == 3.6


def test_nan_rates_are_kept_as_nan():
    hits = match(
        "INFO 11-20 09:12:33 [metrics.py:87] SpecDecoding metrics: Draft acceptance rate: nan%, Mean "
        "acceptance length: nan, Accepted: 0 tokens, Drafted: 0 tokens, Per-position acceptance rate: "
    )
    v = hits[0].value
    assert math.isnan(v["spec_acceptance_rate_pct"]) and math.isnan(v["spec_mean_acceptance_length"])


# ---------------------------------------------------------------------------------------------
# verbatim corpus lines

ENGINE_V0_055 = "INFO 04-28 16:55:20 llm_engine.py:184] Initializing an LLM engine (v0.5.5) with config: model='mistralai/Mistral-7B-Instruct-v0.3', speculative_config=None, tokenizer='mistralai/Mistral-7B-Instruct-v0.3', skip_tokenizer_init=False, tokenizer_mode=auto, revision=None, rope_scaling=None, rope_theta=None, tokenizer_revision=None, trust_remote_code=False, dtype=torch.bfloat16, max_seq_len=8192, download_dir=None, load_format=LoadFormat.AUTO, tensor_parallel_size=1, pipeline_parallel_size=1, disable_custom_all_reduce=False, quantization=None, enforce_eager=False, kv_cache_dtype=auto, quantization_param_path=None, device_config=cuda, decoding_config=DecodingConfig(guided_decoding_backend='outlines'), observability_config=ObservabilityConfig(otlp_traces_endpoint=None, collect_model_forward_time=False, collect_model_execute_time=False), seed=0, served_model_name=mistralai/Mistral-7B-Instruct-v0.3, use_v2_block_manager=False, enable_prefix_caching=False)"  # corpus 001
NAMESPACE_055 = "INFO 04-28 16:55:11 api_server.py:441] args: Namespace(model_tag='mistralai/Mistral-7B-Instruct-v0.3', host='0.0.0.0', port=8000, uvicorn_log_level='info', allow_credentials=False, allowed_origins=['*'], allowed_methods=['*'], allowed_headers=['*'], api_key=None, lora_modules=None, prompt_adapters=None, chat_template=None, response_role='assistant', ssl_keyfile=None, ssl_certfile=None, ssl_ca_certs=None, ssl_cert_reqs=0, root_path=None, middleware=[], return_tokens_as_token_ids=False, disable_frontend_multiprocessing=False, model='mistralai/Mistral-7B-Instruct-v0.3', tokenizer=None, skip_tokenizer_init=False, revision=None, code_revision=None, tokenizer_revision=None, tokenizer_mode='auto', trust_remote_code=False, download_dir=None, load_format='auto', dtype='auto', kv_cache_dtype='auto', quantization_param_path=None, max_model_len=8192, guided_decoding_backend='outlines', distributed_executor_backend=None, worker_use_ray=False, pipeline_parallel_size=1, tensor_parallel_size=1, max_parallel_loading_workers=None, ray_workers_use_nsight=False, block_size=16, enable_prefix_caching=False, disable_sliding_window=False, use_v2_block_manager=False, num_lookahead_slots=0, seed=0, swap_space=4, cpu_offload_gb=0, gpu_memory_utilization=0.75, num_gpu_blocks_override=None, max_num_batched_tokens=None, max_num_seqs=256, max_logprobs=20, disable_log_stats=False, quantization=None, rope_scaling=None, rope_theta=None, enforce_eager=False, max_context_len_to_capture=None, max_seq_len_to_capture=8192, disable_custom_all_reduce=False, tokenizer_pool_size=0, tokenizer_pool_type='ray', tokenizer_pool_extra_config=None, limit_mm_per_prompt=None, enable_lora=False, max_loras=1, max_lora_rank=16, lora_extra_vocab_size=256, lora_dtype='auto', long_lora_scaling_factors=None, max_cpu_loras=None, fully_sharded_loras=False, enable_prompt_adapter=False, max_prompt_adapters=1, max_prompt_adapter_token=0, device='auto', num_scheduler_steps=1, scheduler_delay_factor=0.0, enable_chunked_prefill=None, speculative_model=None, speculative_model_quantization=None, num_speculative_tokens=None, speculative_draft_tensor_parallel_size=None, speculative_max_model_len=None, speculative_disable_by_batch_size=None, ngram_prompt_lookup_max=None, ngram_prompt_lookup_min=None, spec_decoding_acceptance_method='rejection_sampler', typical_acceptance_sampler_posterior_threshold=None, typical_acceptance_sampler_posterior_alpha=None, disable_logprobs_during_spec_decoding=None, model_loader_extra_config=None, ignore_patterns=[], preemption_mode=None, served_model_name=None, qlora_adapter_name_or_path=None, otlp_traces_endpoint=None, collect_detailed_traces=None, engine_use_ray=False, disable_log_requests=False, max_log_len=None, dispatch_function=<function serve at 0x7a90c72169e0>)"  # corpus 001
ENGINE_V0_063 = "INFO 03-19 06:27:20 llm_engine.py:237] Initializing an LLM engine (v0.6.3.post1) with config: model='/workspace/StructRAG/model/Qwen2.5-32B-Instruct', speculative_config=None, tokenizer='/workspace/StructRAG/model/Qwen2.5-32B-Instruct', skip_tokenizer_init=False, tokenizer_mode=auto, revision=None, override_neuron_config=None, rope_scaling=None, rope_theta=None, tokenizer_revision=None, trust_remote_code=False, dtype=torch.bfloat16, max_seq_len=32768, download_dir=None, load_format=LoadFormat.AUTO, tensor_parallel_size=4, pipeline_parallel_size=1, disable_custom_all_reduce=True, quantization=None, enforce_eager=False, kv_cache_dtype=auto, quantization_param_path=None, device_config=cuda, decoding_config=DecodingConfig(guided_decoding_backend='outlines'), observability_config=ObservabilityConfig(otlp_traces_endpoint=None, collect_model_forward_time=False, collect_model_execute_time=False), seed=0, served_model_name=Qwen, num_scheduler_steps=1, chunked_prefill_enabled=False multi_step_stream_outputs=True, enable_prefix_caching=False, use_async_output_proc=True, use_cached_outputs=True, mm_processor_kwargs=None)"  # corpus 003
ENGINE_V0_072 = 'INFO 04-14 08:39:08 llm_engine.py:234] Initializing a V0 LLM engine (v0.7.2) with config: model=\'Qwen/Qwen2.5-14B-Instruct\', speculative_config=None, tokenizer=\'Qwen/Qwen2.5-14B-Instruct\', skip_tokenizer_init=False, tokenizer_mode=auto, revision=None, override_neuron_config=None, tokenizer_revision=None, trust_remote_code=False, dtype=torch.float16, max_seq_len=32768, download_dir=None, load_format=LoadFormat.AUTO, tensor_parallel_size=2, pipeline_parallel_size=1, disable_custom_all_reduce=False, quantization=None, enforce_eager=False, kv_cache_dtype=auto,  device_config=cuda, decoding_config=DecodingConfig(guided_decoding_backend=\'xgrammar\'), observability_config=ObservabilityConfig(otlp_traces_endpoint=None, collect_model_forward_time=False, collect_model_execute_time=False), seed=0, served_model_name=Qwen/Qwen2.5-14B-Instruct, num_scheduler_steps=1, multi_step_stream_outputs=True, enable_prefix_caching=False, chunked_prefill_enabled=False, use_async_output_proc=True, disable_mm_preprocessor_cache=False, mm_processor_kwargs=None, pooler_config=None, compilation_config={"splitting_ops":[],"compile_sizes":[],"cudagraph_capture_sizes":[256,248,240,232,224,216,208,200,192,184,176,168,160,152,144,136,128,120,112,104,96,88,80,72,64,56,48,40,32,24,16,8,4,2,1],"max_capture_size":256}, use_cached_outputs=True, '  # corpus 004
NAMESPACE_085 = "INFO 05-12 02:45:15 [api_server.py:1044] args: Namespace(subparser='serve', model_tag='/opt/llm/deepseek-r1-14b', config='', host=None, port=8000, uvicorn_log_level='info', disable_uvicorn_access_log=False, allow_credentials=False, allowed_origins=['*'], allowed_methods=['*'], allowed_headers=['*'], api_key=None, lora_modules=None, prompt_adapters=None, chat_template=None, chat_template_content_format='auto', response_role='assistant', ssl_keyfile=None, ssl_certfile=None, ssl_ca_certs=None, enable_ssl_refresh=False, ssl_cert_reqs=0, root_path=None, middleware=[], return_tokens_as_token_ids=False, disable_frontend_multiprocessing=False, enable_request_id_headers=False, enable_auto_tool_choice=False, tool_call_parser=None, tool_parser_plugin='', model='/opt/llm/deepseek-r1-14b', task='auto', tokenizer=None, hf_config_path=None, skip_tokenizer_init=False, revision=None, code_revision=None, tokenizer_revision=None, tokenizer_mode='auto', trust_remote_code=True, allowed_local_media_path=None, load_format='auto', download_dir=None, model_loader_extra_config={}, use_tqdm_on_load=True, config_format=<ConfigFormat.AUTO: 'auto'>, dtype='auto', max_model_len=32768, guided_decoding_backend='auto', reasoning_parser=None, logits_processor_pattern=None, model_impl='auto', distributed_executor_backend=None, pipeline_parallel_size=1, tensor_parallel_size=1, data_parallel_size=1, enable_expert_parallel=False, max_parallel_loading_workers=None, ray_workers_use_nsight=False, disable_custom_all_reduce=False, block_size=None, gpu_memory_utilization=0.9, swap_space=4, kv_cache_dtype='auto', num_gpu_blocks_override=None, enable_prefix_caching=None, prefix_caching_hash_algo='builtin', cpu_offload_gb=0, calculate_kv_scales=False, disable_sliding_window=False, use_v2_block_manager=True, seed=None, max_logprobs=20, disable_log_stats=False, quantization=None, rope_scaling=None, rope_theta=None, hf_token=None, hf_overrides=None, enforce_eager=False, max_seq_len_to_capture=8192, tokenizer_pool_size=0, tokenizer_pool_type='ray', tokenizer_pool_extra_config={}, limit_mm_per_prompt={}, mm_processor_kwargs=None, disable_mm_preprocessor_cache=False, enable_lora=None, enable_lora_bias=False, max_loras=1, max_lora_rank=16, lora_extra_vocab_size=256, lora_dtype='auto', long_lora_scaling_factors=None, max_cpu_loras=None, fully_sharded_loras=False, enable_prompt_adapter=None, max_prompt_adapters=1, max_prompt_adapter_token=0, device='auto', speculative_config=None, ignore_patterns=[], served_model_name=None, qlora_adapter_name_or_path=None, show_hidden_metrics_for_version=None, otlp_traces_endpoint=None, collect_detailed_traces=None, disable_async_output_proc=False, max_num_batched_tokens=None, max_num_seqs=None, max_num_partial_prefills=1, max_long_partial_prefills=1, long_prefill_token_threshold=0, num_lookahead_slots=0, scheduler_delay_factor=0.0, preemption_mode=None, num_scheduler_steps=1, multi_step_stream_outputs=True, scheduling_policy='fcfs', enable_chunked_prefill=None, disable_chunked_mm_input=False, scheduler_cls='vllm.core.scheduler.Scheduler', override_neuron_config=None, override_pooler_config=None, compilation_config=None, kv_transfer_config=None, worker_cls='auto', worker_extension_cls='', generation_config='auto', override_generation_config=None, enable_sleep_mode=False, additional_config=None, enable_reasoning=False, disable_cascade_attn=False, disable_log_requests=False, max_log_len=None, disable_fastapi_docs=False, enable_prompt_tokens_details=False, enable_server_load_tracking=False, dispatch_function=<function ServeSubcommand.cmd at 0x7f66bd946950>)"  # corpus 006
ENGINE_V1_085 = 'INFO 05-12 02:45:30 [core.py:58] Initializing a V1 LLM engine (v0.8.5.post1) with config: model=\'/opt/llm/deepseek-r1-14b\', speculative_config=None, tokenizer=\'/opt/llm/deepseek-r1-14b\', skip_tokenizer_init=False, tokenizer_mode=auto, revision=None, override_neuron_config=None, tokenizer_revision=None, trust_remote_code=True, dtype=torch.bfloat16, max_seq_len=32768, download_dir=None, load_format=auto, tensor_parallel_size=1, pipeline_parallel_size=1, disable_custom_all_reduce=False, quantization=None, enforce_eager=False, kv_cache_dtype=auto,  device_config=cuda, decoding_config=DecodingConfig(guided_decoding_backend=\'auto\', reasoning_backend=None), observability_config=ObservabilityConfig(show_hidden_metrics=False, otlp_traces_endpoint=None, collect_model_forward_time=False, collect_model_execute_time=False), seed=None, served_model_name=/opt/llm/deepseek-r1-14b, num_scheduler_steps=1, multi_step_stream_outputs=True, enable_prefix_caching=True, chunked_prefill_enabled=True, use_async_output_proc=True, disable_mm_preprocessor_cache=False, mm_processor_kwargs=None, pooler_config=None, compilation_config={"level":3,"custom_ops":["none"],"splitting_ops":["vllm.unified_attention","vllm.unified_attention_with_output"],"use_inductor":true,"compile_sizes":[],"use_cudagraph":true,"cudagraph_num_of_warmups":1,"cudagraph_capture_sizes":[512,504,496,488,480,472,464,456,448,440,432,424,416,408,400,392,384,376,368,360,352,344,336,328,320,312,304,296,288,280,272,264,256,248,240,232,224,216,208,200,192,184,176,168,160,152,144,136,128,120,112,104,96,88,80,72,64,56,48,40,32,24,16,8,4,2,1],"max_capture_size":512}'  # corpus 006
ENGINE_V1_0100 = 'INFO 08-16 02:03:08 [core.py:71] Initializing a V1 LLM engine (v0.10.0) with config: model=\'/home/Competition2025/P12/shareP12/models/Qwen3-235B-A22B-FP8\', speculative_config=None, tokenizer=\'/home/Competition2025/P12/shareP12/models/Qwen3-235B-A22B-FP8\', skip_tokenizer_init=False, tokenizer_mode=auto, revision=None, override_neuron_config={}, tokenizer_revision=None, trust_remote_code=False, dtype=torch.bfloat16, max_seq_len=32768, download_dir=None, load_format=LoadFormat.AUTO, tensor_parallel_size=8, pipeline_parallel_size=1, disable_custom_all_reduce=False, quantization=fp8, enforce_eager=False, kv_cache_dtype=fp8,  device_config=cuda, decoding_config=DecodingConfig(backend=\'auto\', disable_fallback=False, disable_any_whitespace=False, disable_additional_properties=False, reasoning_backend=\'deepseek_r1\'), observability_config=ObservabilityConfig(show_hidden_metrics_for_version=None, otlp_traces_endpoint=None, collect_detailed_traces=None), seed=0, served_model_name=/home/Competition2025/P12/shareP12/models/Qwen3-235B-A22B-FP8, num_scheduler_steps=1, multi_step_stream_outputs=True, enable_prefix_caching=True, chunked_prefill_enabled=True, use_async_output_proc=True, pooler_config=None, compilation_config={"level":3,"debug_dump_path":"","cache_dir":"","backend":"","custom_ops":[],"splitting_ops":["vllm.unified_attention","vllm.unified_attention_with_output","vllm.mamba_mixer2"],"use_inductor":true,"compile_sizes":[],"inductor_compile_config":{"enable_auto_functionalized_v2":false},"inductor_passes":{},"use_cudagraph":true,"cudagraph_num_of_warmups":1,"cudagraph_capture_sizes":[512,504,496,488,480,472,464,456,448,440,432,424,416,408,400,392,384,376,368,360,352,344,336,328,320,312,304,296,288,280,272,264,256,248,240,232,224,216,208,200,192,184,176,168,160,152,144,136,128,120,112,104,96,88,80,72,64,56,48,40,32,24,16,8,4,2,1],"cudagraph_copy_inputs":false,"full_cuda_graph":false,"max_capture_size":512,"local_cache_dir":null}'  # corpus 010
ENGINE_V1_0111 = "(EngineCore_DP0 pid=299338) INFO 11-01 15:51:35 [core.py:94] Initializing a V1 LLM engine (v0.11.1rc3.dev29+g3fa2c1218) with config: model='rednote-hilab/dots.ocr', speculative_config=None, tokenizer='rednote-hilab/dots.ocr', skip_tokenizer_init=False, tokenizer_mode=auto, revision=None, tokenizer_revision=None, trust_remote_code=True, dtype=torch.bfloat16, max_seq_len=131072, download_dir=None, load_format=auto, tensor_parallel_size=1, pipeline_parallel_size=1, data_parallel_size=1, disable_custom_all_reduce=False, quantization=None, enforce_eager=False, kv_cache_dtype=auto, device_config=cuda, structured_outputs_config=StructuredOutputsConfig(backend='auto', disable_fallback=False, disable_any_whitespace=False, disable_additional_properties=False, reasoning_parser='', enable_in_reasoning=False), observability_config=ObservabilityConfig(show_hidden_metrics_for_version=None, otlp_traces_endpoint=None, collect_detailed_traces=None), seed=0, served_model_name=rednote-hilab/dots.ocr, enable_prefix_caching=True, chunked_prefill_enabled=True, pooler_config=None, compilation_config={'level': None, 'mode': 3, 'debug_dump_path': None, 'cache_dir': '', 'backend': 'inductor', 'custom_ops': ['none'], 'splitting_ops': ['vllm::unified_attention', 'vllm::unified_attention_with_output', 'vllm::unified_mla_attention', 'vllm::unified_mla_attention_with_output', 'vllm::mamba_mixer2', 'vllm::mamba_mixer', 'vllm::short_conv', 'vllm::linear_attention', 'vllm::plamo2_mamba_mixer', 'vllm::gdn_attention', 'vllm::sparse_attn_indexer'], 'use_inductor': None, 'compile_sizes': [], 'inductor_compile_config': {'enable_auto_functionalized_v2': False, 'combo_kernels': True, 'benchmark_combo_kernel': True}, 'inductor_passes': {}, 'cudagraph_mode': <CUDAGraphMode.FULL_AND_PIECEWISE: (2, 1)>, 'use_cudagraph': True, 'cudagraph_num_of_warmups': 1, 'cudagraph_capture_sizes': [16, 8, 4, 2, 1], 'cudagraph_copy_inputs': False, 'full_cuda_graph': True, 'cudagraph_specialize_lora': True, 'use_inductor_graph_partition': False, 'pass_config': {}, 'max_capture_size': 16, 'local_cache_dir': None}"  # corpus 019
ARGS_0111 = "(APIServer pid=295174) INFO 11-01 15:51:19 [utils.py:253] non-default args: {'model_tag': 'rednote-hilab/dots.ocr', 'host': '0.0.0.0', 'port': 30010, 'model': 'rednote-hilab/dots.ocr', 'trust_remote_code': True, 'gpu_memory_utilization': 0.6, 'max_num_batched_tokens': 8192, 'max_num_seqs': 8, 'async_scheduling': True}"  # corpus 019
ENGINE_V1_0221 = "(EngineCore pid=261) INFO 06-13 21:57:36 [core.py:112] Initializing a V1 LLM engine (v0.22.1) with config: model='/kaggle/input/models/qwen-lm/qwen-3/transformers/8b/1', speculative_config=None, tokenizer='/kaggle/input/models/qwen-lm/qwen-3/transformers/8b/1', skip_tokenizer_init=False, tokenizer_mode=auto, revision=None, tokenizer_revision=None, trust_remote_code=False, dtype=torch.float16, max_seq_len=4096, download_dir=None, load_format=auto, tensor_parallel_size=2, pipeline_parallel_size=1, data_parallel_size=1, decode_context_parallel_size=1, dcp_comm_backend=ag_rs, disable_custom_all_reduce=True, quantization=None, quantization_config=None, enforce_eager=True, enable_return_routed_experts=False, kv_cache_dtype=auto, device_config=cuda, structured_outputs_config=StructuredOutputsConfig(backend='auto', disable_any_whitespace=False, disable_additional_properties=False, reasoning_parser='', reasoning_parser_plugin='', enable_in_reasoning=False), observability_config=ObservabilityConfig(show_hidden_metrics_for_version=None, otlp_traces_endpoint=None, collect_detailed_traces=None, kv_cache_metrics=False, kv_cache_metrics_sample=0.01, cudagraph_metrics=False, enable_layerwise_nvtx_tracing=False, enable_mfu_metrics=False, enable_mm_processor_stats=False, enable_logging_iteration_details=False), seed=0, served_model_name=qwen3-8b-base, enable_prefix_caching=False, enable_chunked_prefill=False, pooler_config=None, compilation_config={'mode': <CompilationMode.NONE: 0>, 'debug_dump_path': None, 'cache_dir': '', 'compile_cache_save_format': 'binary', 'backend': 'inductor', 'custom_ops': ['all'], 'ir_enable_torch_wrap': False, 'splitting_ops': [], 'compile_mm_encoder': False, 'cudagraph_mm_encoder': False, 'encoder_cudagraph_token_budgets': [], 'encoder_cudagraph_max_vision_items_per_batch': 0, 'encoder_cudagraph_max_frames_per_batch': None, 'compile_sizes': [], 'compile_ranges_endpoints': [4096], 'inductor_compile_config': {'enable_auto_functionalized_v2': False, 'size_asserts': False, 'alignment_asserts': False, 'scalar_asserts': False, 'combo_kernels': True, 'benchmark_combo_kernel': True}, 'inductor_passes': {}, 'cudagraph_mode': <CUDAGraphMode.NONE: 0>, 'cudagraph_num_of_warmups': 0, 'cudagraph_capture_sizes': [], 'cudagraph_copy_inputs': False, 'cudagraph_specialize_lora': True, 'use_inductor_graph_partition': False, 'pass_config': {'fuse_norm_quant': True, 'fuse_act_quant': True, 'fuse_attn_quant': False, 'enable_sp': False, 'fuse_gemm_comms': False, 'fuse_allreduce_rms': False, 'fuse_rope_kvcache_cat_mla': False, 'fuse_act_padding': False}, 'max_cudagraph_capture_size': 0, 'dynamic_shapes_config': {'type': <DynamicShapesType.BACKED: 'backed'>, 'evaluate_guards': False, 'assume_32_bit_indexing': False}, 'local_cache_dir': None, 'fast_moe_cold_start': False, 'static_all_moe_layers': []}, kernel_config=KernelConfig(ir_op_priority=IrOpPriorityConfig(rms_norm=['vllm_c', 'native'], fused_add_rms_norm=['vllm_c', 'native']), enable_flashinfer_autotune=True, moe_backend='auto', linear_backend='auto')"  # corpus 043
ARGS_0221 = "(APIServer pid=241) INFO 06-13 21:57:02 [utils.py:278] non-default args: {'lora_modules': [LoRAModulePath(name='qwen3-8b-exact-type1', path='/kaggle/input/datasets/nguyenminhtric/exact-test/DATASET_DATA_TYPE_1', base_model_name=None, is_3d_lora_weight=False)], 'host': '127.0.0.1', 'port': 8001, 'model': '/kaggle/input/models/qwen-lm/qwen-3/transformers/8b/1', 'dtype': 'half', 'max_model_len': 4096, 'enforce_eager': True, 'served_model_name': ['qwen3-8b-base'], 'generation_config': 'vllm', 'attention_backend': 'TRITON_ATTN', 'tensor_parallel_size': 2, 'disable_custom_all_reduce': True, 'gpu_memory_utilization': 0.85, 'enable_prefix_caching': False, 'enable_lora': True, 'max_num_batched_tokens': 4096, 'max_num_seqs': 1, 'enable_chunked_prefill': False}"  # corpus 043
ENGINE_V1_0251 = "(EngineCore pid=38078) INFO 08-02 09:19:57 [core.py:114] Initializing a V1 LLM engine (v0.25.1) with config: model='RedHatAI/Qwen3.6-35B-A3B-NVFP4', speculative_config=SpeculativeConfig(method='mtp', model='RedHatAI/Qwen3.6-35B-A3B-NVFP4', num_spec_tokens=3), tokenizer='RedHatAI/Qwen3.6-35B-A3B-NVFP4', skip_tokenizer_init=False, tokenizer_mode=auto, revision=None, tokenizer_revision=None, trust_remote_code=False, dtype=torch.bfloat16, max_seq_len=262144, download_dir=None, load_format=auto, tensor_parallel_size=1, pipeline_parallel_size=1, data_parallel_size=1, decode_context_parallel_size=1, dcp_comm_backend=ag_rs, disable_custom_all_reduce=False, quantization=compressed-tensors, quantization_config=None, enforce_eager=False, enable_return_routed_experts=False, kv_cache_dtype=auto, device_config=cuda, structured_outputs_config=StructuredOutputsConfig(backend='auto', disable_any_whitespace=False, disable_additional_properties=False, reasoning_parser='qwen3', reasoning_parser_plugin='', enable_in_reasoning=False), observability_config=ObservabilityConfig(show_hidden_metrics_for_version=None, otlp_traces_endpoint=None, collect_detailed_traces=None, kv_cache_metrics=False, kv_cache_metrics_sample=0.01, cudagraph_metrics=False, enable_layerwise_nvtx_tracing=False, enable_mfu_metrics=False, enable_mm_processor_stats=False, enable_logging_iteration_details=False, jit_monitor_mode='warn', jit_monitor_verbose=False), seed=0, served_model_name=RedHatAI/Qwen3.6-35B-A3B-NVFP4, enable_prefix_caching=False, enable_chunked_prefill=True, pooler_config=None, compilation_config={'mode': <CompilationMode.VLLM_COMPILE: 3>, 'debug_dump_path': None, 'cache_dir': '', 'compile_cache_save_format': 'binary', 'backend': 'inductor', 'custom_ops': ['none'], 'ir_enable_torch_wrap': True, 'splitting_ops': ['vllm::unified_attention_with_output', 'vllm::unified_mla_attention_with_output', 'vllm::mamba_mixer2', 'vllm::mamba_mixer', 'vllm::short_conv', 'vllm::linear_attention', 'vllm::plamo2_mamba_mixer', 'vllm::qwen_gdn_attention_core', 'vllm::gdn_attention_core_xpu', 'vllm::olmo_hybrid_gdn_full_forward', 'vllm::kda_attention', 'vllm::sparse_attn_indexer', 'vllm::rocm_aiter_sparse_attn_indexer', 'vllm::deepseek_v4_attention', 'vllm::hpc_rope_norm_forward', 'vllm::unified_kv_cache_update', 'vllm::unified_mla_kv_cache_update'], 'compile_mm_encoder': False, 'cudagraph_mm_encoder': False, 'encoder_cudagraph_token_budgets': [], 'encoder_cudagraph_max_vision_items_per_batch': 0, 'encoder_cudagraph_max_frames_per_batch': None, 'compile_sizes': [], 'compile_ranges_endpoints': [2048], 'inductor_compile_config': {'enable_auto_functionalized_v2': False, 'size_asserts': False, 'alignment_asserts': False, 'scalar_asserts': False, 'combo_kernels': True, 'benchmark_combo_kernel': True}, 'inductor_passes': {}, 'cudagraph_mode': <CUDAGraphMode.FULL_AND_PIECEWISE: (2, 1)>, 'cudagraph_num_of_warmups': 1, 'cudagraph_capture_sizes': [1, 2, 4, 8, 16, 24, 32, 40, 48, 56, 64, 72, 80, 88, 96, 104, 112, 120, 128, 136, 144, 152, 160, 168, 176, 184, 192, 200, 208, 216, 224, 232, 240, 248, 256], 'cudagraph_copy_inputs': False, 'cudagraph_specialize_lora': True, 'use_inductor_graph_partition': False, 'pass_config': {'fuse_norm_quant': False, 'fuse_act_quant': True, 'fuse_attn_quant': False, 'enable_sp': False, 'fuse_gemm_comms': False, 'fuse_allreduce_rms': False, 'fuse_rope_kvcache_cat_mla': False, 'fuse_act_padding': False}, 'max_cudagraph_capture_size': 256, 'dynamic_shapes_config': {'type': <DynamicShapesType.BACKED: 'backed'>, 'evaluate_guards': False, 'assume_32_bit_indexing': False}, 'local_cache_dir': None, 'fast_moe_cold_start': False, 'static_all_moe_layers': []}, kernel_config=KernelConfig(ir_op_priority=IrOpPriorityConfig(rms_norm=['native'], fused_add_rms_norm=['native']), enable_flashinfer_autotune=True, enable_cutedsl_warmup=True, moe_backend='auto', linear_backend='auto')"  # corpus 049
ARGS_0251 = "(APIServer pid=37727) INFO 08-02 09:19:29 [api_utils.py:273] non-default args: {'model_tag': 'RedHatAI/Qwen3.6-35B-A3B-NVFP4', 'host': '0.0.0.0', 'model': 'RedHatAI/Qwen3.6-35B-A3B-NVFP4', 'max_model_len': 262144, 'reasoning_parser': 'qwen3', 'gpu_memory_utilization': 0.85, 'max_num_seqs': 32, 'speculative_config': {'method': 'mtp', 'num_speculative_tokens': 3}}"  # corpus 049
OOM_022 = "(EngineCore_DP0 pid=537018) ERROR 01-19 22:26:14 [core.py:866] torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 270.00 MiB. GPU 0 has a total capacity of 15.47 GiB of which 115.31 MiB is free. Including non-PyTorch memory, this process has 15.34 GiB memory in use. Of the allocated memory 14.95 GiB is allocated by PyTorch, and 12.94 MiB is reserved by PyTorch but unallocated. If reserved but unallocated memory is large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.  See documentation for Memory Management  (https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)"  # corpus 022
OOM_028_HIP = "(EngineCore_DP0 pid=367) ERROR 03-01 17:37:31 [core.py:868] torch._inductor.exc.InductorError: OutOfMemoryError: HIP out of memory. Tried to allocate 80.00 MiB. GPU 0 has a total capacity of 15.92 GiB of which 0 bytes is free. Of the allocated memory 15.63 GiB is allocated by PyTorch, and 19.68 MiB is reserved by PyTorch but unallocated. If reserved but unallocated memory is large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.  See documentation for Memory Management  (https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)"  # corpus 028
OOM_038_GIB = "(EngineCore pid=42887) ERROR 04-26 12:05:05 [core.py:1108] torch._inductor.exc.InductorError: RuntimeError: Failed to run autotuning code block: CUDA out of memory. Tried to allocate 1.02 GiB. GPU 0 has a total capacity of 14.56 GiB of which 111.81 MiB is free. Including non-PyTorch memory, this process has 14.45 GiB memory in use. Of the allocated memory 14.26 GiB is allocated by PyTorch, and 54.96 MiB is reserved by PyTorch but unallocated. If reserved but unallocated memory is large try setting PYTORCH_ALLOC_CONF=expandable_segments:True to avoid fragmentation.  See documentation for Memory Management  (https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)"  # corpus 038
OOM_058_HIP = "(Worker_TP0 pid=190) ERROR 06-19 11:16:22 [multiproc_executor.py:874] torch.OutOfMemoryError: HIP out of memory. Tried to allocate 486.00 MiB. GPU 0 has a total capacity of 15.92 GiB of which 350.00 MiB is free. Of the allocated memory 15.06 GiB is allocated by PyTorch, and 15.63 MiB is reserved by PyTorch but unallocated. If reserved but unallocated memory is large try setting PYTORCH_ALLOC_CONF=expandable_segments:True to avoid fragmentation.  See documentation for Memory Management  (https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)"  # corpus 058
OOM_055_JAX = "(EngineCore_DP0 pid=4095770) ERROR 11-14 05:27:02 [core.py:855] jax.errors.JaxRuntimeError: RESOURCE_EXHAUSTED: Error allocating device buffer: Attempting to allocate 2.64G. That was not possible. There are 1.30G free.; (0x1x0_HBM1): while running replica 0 and partition 0 of a replicated computation (other replicas may have failed as well)."  # corpus 055
OOM_042_CUMEM = "(EngineCore pid=48200) ERROR 06-02 14:31:01 [core.py:1365] RuntimeError: CUDA Error: out of memory at /workspace/csrc/cumem_allocator.cpp:139"  # corpus 042
VALUE_ERROR_014 = "(EngineCore_DP0 pid=941609) ERROR 09-30 18:29:03 [core.py:718] ValueError: Free memory on device (13.58/15.99 GiB) on startup is less than desired GPU memory utilization (0.85, 13.59 GiB). Decrease GPU memory utilization or reduce GPU memory used by other processes."  # corpus 014
KV_INSUFFICIENT_048 = "(EngineCore pid=6890) ERROR 08-03 21:49:23 [core.py:1231] ValueError: To serve at least one request with the model's max seq len (262144), (18.35 GiB KV cache is needed, which is larger than the available KV cache memory (8.72 GiB). Based on the available memory, the estimated maximum model length is 121840. Try increasing `gpu_memory_utilization` (which also controls CPU memory on the CPU backend) or decreasing `max_model_len` when initializing the engine. See https://docs.vllm.ai/en/latest/configuration/conserving_memory/ for more details."  # corpus 048
NO_CACHE_BLOCKS_013 = "(EngineCore_DP0 pid=1193328) ERROR 10-01 23:05:53 [core.py:718] ValueError: No available memory for the cache blocks. Try increasing `gpu_memory_utilization` when initializing the engine."  # corpus 013


SCORED = (
    "model",
    "tensor_parallel_size",
    "max_model_len",
    "max_num_seqs",
    "max_num_batched_tokens",
    "gpu_memory_utilization",
    "kv_cache_dtype",
    "enable_prefix_caching",
    "enforce_eager",
)


def printed(v: object) -> str:
    return str(v)  # Python spelling: True, 0.9, 8192


@pytest.mark.parametrize(
    "line,labels",
    [
        # engine config line first (corpus README labelling convention); labels from .expected.json
        (
            ENGINE_V0_055,
            {
                "model": "mistralai/Mistral-7B-Instruct-v0.3",
                "tensor_parallel_size": 1,
                "max_model_len": 8192,
                "kv_cache_dtype": "auto",
                "enable_prefix_caching": False,
                "enforce_eager": False,
            },
        ),
        (
            ENGINE_V0_063,
            {
                "model": "/workspace/StructRAG/model/Qwen2.5-32B-Instruct",
                "tensor_parallel_size": 4,
                "max_model_len": 32768,
                "kv_cache_dtype": "auto",
                "enable_prefix_caching": False,
                "enforce_eager": False,
            },
        ),
        (
            ENGINE_V0_072,
            {
                "model": "Qwen/Qwen2.5-14B-Instruct",
                "tensor_parallel_size": 2,
                "max_model_len": 32768,
                "kv_cache_dtype": "auto",
                "enable_prefix_caching": False,
                "enforce_eager": False,
            },
        ),
        (
            ENGINE_V1_085,
            {
                "model": "/opt/llm/deepseek-r1-14b",
                "tensor_parallel_size": 1,
                "max_model_len": 32768,
                "kv_cache_dtype": "auto",
                "enable_prefix_caching": True,
                "enforce_eager": False,
            },
        ),
        (
            ENGINE_V1_0100,
            {
                "model": "/home/Competition2025/P12/shareP12/models/Qwen3-235B-A22B-FP8",
                "tensor_parallel_size": 8,
                "max_model_len": 32768,
                "kv_cache_dtype": "fp8",
                "enable_prefix_caching": True,
                "enforce_eager": False,
            },
        ),
        (
            ENGINE_V1_0111,
            {
                "model": "rednote-hilab/dots.ocr",
                "tensor_parallel_size": 1,
                "max_model_len": 131072,
                "kv_cache_dtype": "auto",
                "enable_prefix_caching": True,
                "enforce_eager": False,
            },
        ),
        (
            ENGINE_V1_0221,
            {
                "model": "/kaggle/input/models/qwen-lm/qwen-3/transformers/8b/1",
                "tensor_parallel_size": 2,
                "max_model_len": 4096,
                "kv_cache_dtype": "auto",
                "enable_prefix_caching": False,
                "enforce_eager": True,
            },
        ),
        (
            ENGINE_V1_0251,
            {
                "model": "RedHatAI/Qwen3.6-35B-A3B-NVFP4",
                "tensor_parallel_size": 1,
                "max_model_len": 262144,
                "kv_cache_dtype": "auto",
                "enable_prefix_caching": False,
                "enforce_eager": False,
            },
        ),
        # the rest of the scored keys come from the args lines
        (NAMESPACE_055, {"max_num_seqs": 256, "gpu_memory_utilization": 0.75}),
        (NAMESPACE_085, {"gpu_memory_utilization": 0.9}),
        (ARGS_0111, {"max_num_seqs": 8, "max_num_batched_tokens": 8192, "gpu_memory_utilization": 0.6}),
        (
            ARGS_0221,
            {
                "max_num_seqs": 1,
                "max_num_batched_tokens": 4096,
                "gpu_memory_utilization": 0.85,
                "tensor_parallel_size": 2,
                "enforce_eager": True,
                "enable_prefix_caching": False,
            },
        ),
        (ARGS_0251, {"max_num_seqs": 32, "gpu_memory_utilization": 0.85, "max_model_len": 262144}),
    ],
)
def test_parse_config_on_real_lines(line, labels):
    cfg = parse_config(line)
    assert cfg is not None
    for k, v in labels.items():
        assert cfg.get(k) == printed(v), (k, cfg.get(k), v)


def test_parse_config_keeps_nested_values_whole():
    cfg = parse_config(ENGINE_V1_0111)
    # Python dict repr with enum reprs; its commas and colons stay inside the one value
    assert cfg["compilation_config"].startswith("{'level': None, 'mode': 3,")
    assert "<CUDAGraphMode.FULL_AND_PIECEWISE: (2, 1)>" in cfg["compilation_config"]
    assert cfg["compilation_config"].endswith("'local_cache_dir': None}")
    assert cfg["structured_outputs_config"].startswith("StructuredOutputsConfig(backend='auto',")
    assert cfg["served_model_name"] == "rednote-hilab/dots.ocr"
    assert "pooler_config" in cfg and "dtype" in cfg
    cfg = parse_config(ENGINE_V0_072)  # compact JSON, double space, trailing ", "
    assert cfg["compilation_config"].startswith('{"splitting_ops":[]')
    assert cfg["device_config"] == "cuda" and cfg["use_cached_outputs"] == "True"
    cfg = parse_config(ARGS_0221)  # a list holding a repr with commas
    assert cfg["lora_modules"].startswith("[LoRAModulePath(name='qwen3-8b-exact-type1',")
    assert cfg["served_model_name"] == "['qwen3-8b-base']"
    assert cfg["generation_config"] == "vllm"
    cfg = parse_config(ARGS_0251)
    assert cfg["speculative_config"] == "{'method': 'mtp', 'num_speculative_tokens': 3}"


def test_parse_config_v063_glued_fields():
    # v0.6.3 printed "chunked_prefill_enabled=%s multi_step_stream_outputs=%s" without a comma
    cfg = parse_config(ENGINE_V0_063)
    assert cfg["chunked_prefill_enabled"] == "False"
    assert cfg["multi_step_stream_outputs"] == "True"
    assert cfg["mm_processor_kwargs"] == "None"  # the closing ')' of the line is not part of it


def test_parse_config_chunked_prefill_and_non_config_lines():
    assert parse_config(
        "INFO 11-18 17:10:51 config.py:1136] Chunked prefill is enabled with max_num_batched_tokens=512."
    ) == {"max_num_batched_tokens": "512"}
    assert parse_config(OOM_022) is None
    assert parse_config("INFO 04-28 16:55:29 gpu_executor.py:121] # GPU blocks: 10786, # CPU blocks: 2048") is None


@pytest.mark.parametrize(
    "line,version,engine",
    [
        (ENGINE_V0_055, "0.5.5", "v0"),
        (ENGINE_V0_063, "0.6.3.post1", "v0"),
        (ENGINE_V0_072, "0.7.2", "v0"),
        (ENGINE_V1_085, "0.8.5.post1", "v1"),
        (ENGINE_V1_0100, "0.10.0", "v1"),
        (ENGINE_V1_0111, "0.11.1rc3.dev29+g3fa2c1218", "v1"),
        (ENGINE_V1_0251, "0.25.1", "v1"),
    ],
)
def test_engine_config_line_gives_identity(line, version, engine):
    got = {h.name: h.value for h in match(line) if h.kind == "boot"}
    assert got["vllm_version"] == version and got["engine"] == engine
    assert got["model"] == parse_config(line)["model"]


def test_args_lines_give_the_model():
    assert [h.value for h in match(NAMESPACE_055) if h.name == "model"] == ["mistralai/Mistral-7B-Instruct-v0.3"]
    assert [h.value for h in match(ARGS_0251) if h.name == "model"] == ["RedHatAI/Qwen3.6-35B-A3B-NVFP4"]


# ---------------------------------------------------------------------------------------------
# failure details


@pytest.mark.parametrize(
    "line,want",
    [
        (OOM_022, {"requested_mib": 270.0, "free_mib": 115.31, "total_gib": 15.47}),
        (OOM_028_HIP, {"requested_mib": 80.0, "free_mib": 0.0, "total_gib": 15.92}),
        (OOM_038_GIB, {"requested_mib": 1.02 * 1024, "free_mib": 111.81, "total_gib": 14.56}),
        (OOM_058_HIP, {"requested_mib": 486.0, "free_mib": 350.0, "total_gib": 15.92}),
        (OOM_055_JAX, {"requested_mib": 2.64 * 1024, "free_mib": 1.30 * 1024}),
        (OOM_042_CUMEM, {}),
        # the seeds' own quote of a runtime death
        (
            "torch.OutOfMemoryError 'Tried to allocate 50.00 MiB ... 0 bytes free'",
            {"requested_mib": 50.0, "free_mib": 0.0},
        ),
        ("RuntimeError: HIP error: hipErrorOutOfMemory", {}),
    ],
)
def test_oom_detail(line, want):
    got = oom_detail(line)
    assert got is not None and set(got) == set(want), got
    for k, v in want.items():
        assert math.isclose(got[k], v, rel_tol=1e-6), (k, got[k], v)


def test_oom_detail_ignores_other_errors():
    assert oom_detail(VALUE_ERROR_014) is None
    assert oom_detail(KV_INSUFFICIENT_048) is None


def test_value_error_detail():
    assert value_error_detail(VALUE_ERROR_014) == {
        "free_gib": 13.58,
        "total_gib": 15.99,
        "gpu_memory_utilization": 0.85,
        "requested_gib": 13.59,
    }
    # v0.14+ names the device; the fork refuses util 1.0 with it (seed quote, abbreviated there)
    got = value_error_detail(
        "ValueError: Free memory on device cuda:0 (31.29/31.86 GiB) on startup is less than "
        "desired GPU memory utilization (1.0, 31.86 GiB). Decrease GPU memory utilization or "
        "reduce GPU memory used by other processes."
    )
    assert got == {
        "free_gib": 31.29,
        "total_gib": 31.86,
        "gpu_memory_utilization": 1.0,
        "requested_gib": 31.86,
        "device": "cuda:0",
    }
    assert value_error_detail(NO_CACHE_BLOCKS_013) is None
    assert value_error_detail(OOM_022) is None


def test_value_error_detail_of_the_cpu_backend():
    # vLLM 0.32 CPU, the engine tier's `--gpu-memory-utilization 0.99` (fixtures/logs/engine/e07,
    # line 48, read by eye) and the kv allocation wording of cpu_worker.py (issue 29: empty before)
    got = value_error_detail(
        "ValueError: Available memory on node 0 (17.52/23.54 GiB) on startup is less than "
        "desired CPU memory utilization (0.99, 23.3 GiB). On the CPU backend, the "
        "`--gpu-memory-utilization` flag controls the fraction of CPU memory reserved"
    )
    assert got == {
        "free_gib": 17.52,
        "total_gib": 23.54,
        "gpu_memory_utilization": 0.99,
        "requested_gib": 23.3,
        "node": 0,
    }
    got = value_error_detail(
        "ValueError: Available memory on node 0 (21.65/23.54 GiB) on kv cache allocation is "
        "less than requested memory for kv (64.0 GiB). Decrease --kv-cache-memory-bytes, "
        "VLLM_CPU_KVCACHE_SPACE, or reduce CPU memory used by other processes."
    )
    assert got == {"free_gib": 21.65, "total_gib": 23.54, "requested_gib": 64.0, "node": 0}


def test_kv_insufficient_detail():
    assert kv_insufficient_detail(KV_INSUFFICIENT_048) == {
        "needed_gib": 18.35,
        "available_gib": 8.72,
        "estimated_max_model_len": 121840,
        "max_model_len": 262144,
    }
    # v0.8.4-v0.9.0.1 source bug: the estimate sentence is cut off (reference TSV)
    got = kv_insufficient_detail(
        "ValueError: To serve at least one request with the models's max seq len (131072), "
        "(16.00 GiB KV cache is needed, which is larger than the available KV cache memory "
        "(12.34 GiB). Based on the available memory,  Try increasing `gpu_memory_utilization`"
    )
    assert got == {"needed_gib": 16.0, "available_gib": 12.34, "max_model_len": 131072}
    # v0.7.0-v0.8.2 said "GB" for GiB values
    got = kv_insufficient_detail(
        "ValueError: To serve at least one request with the models's max seq len (131072), "
        "(16.00 GB KV cache is needed, which is larger than the available KV cache memory "
        "(12.34 GB). Try increasing `gpu_memory_utilization`"
    )
    assert got == {"needed_gib": 16.0, "available_gib": 12.34, "max_model_len": 131072}
    assert kv_insufficient_detail(VALUE_ERROR_014) is None


# ---------------------------------------------------------------------------------------------
# the corpus as a whole: every labelled figure is produced (when the corpus is at hand)

_CORPUS_DIRS = (Path(__file__).resolve().parent.parent / "fixtures" / "logs", Path("/work/shared/corpus/raw"))
CORPUS = next((d for d in _CORPUS_DIRS if d.is_dir() and any(d.glob("*.expected.json"))), None)
ANSI = re.compile(r"\x1b\[[0-9;]*m")


def corpus_cases() -> list[Path]:
    if CORPUS is None:
        return []
    out = []
    for exp in sorted(CORPUS.glob("*.expected.json")):
        boots = json.loads(exp.read_text())
        log = exp.with_name(exp.name.replace(".expected.json", ".log"))
        if len(boots) == 1 and log.exists():
            out.append(log)
    return out


@pytest.mark.skipif(CORPUS is None, reason="corpus not available")
@pytest.mark.parametrize("log", corpus_cases(), ids=lambda p: p.name[:3])
def test_corpus_labelled_figures_are_produced(log):
    boot = json.loads(log.with_name(log.name.replace(".log", ".expected.json")).read_text())[0]
    got: dict[str, list] = defaultdict(list)
    text = log.read_bytes().decode("utf-8", "replace").split("\n")
    for line in text[boot["boot_start_line"] - 1 :]:
        for h in match(ANSI.sub("", line).rstrip("\r")):
            if h.kind == "metric":
                got[h.name].append(float(h.value))
    for name in P.UNITS:
        if name not in boot:
            continue
        want = boot[name]
        if isinstance(want, list):  # one value per rank, in print order
            assert sorted(got[name]) == sorted(map(float, want)), name
        else:  # printed once (ranks repeating the same figure print the same value)
            assert got[name] and all(v == float(want) for v in got[name]), (name, got[name], want)


def test_the_newer_generation_config_override_wording_is_a_warning():
    # "Default vLLM sampling parameters … `generation_config.json`: `{…}`": the seeds' v0.22 fork
    # and real v0.16+ logs (the one knob that changes answers: kept on every boot)
    from paths import FIXTURES

    from bootlog.parse.parse import parse
    from test_golden import read_records

    for path in (
        FIXTURES / "seed" / "04-shape-g-kv-400700-no-prefix-cache.log",
        FIXTURES / "057-rocm-rdna4-gfx12-tp2-v0.22.69-fork-boot.log",
    ):
        recs = read_records(path)
        bs = parse(recs, year=2026, total_lines=len(recs))
        whats = [e.detail.get("what") for b in bs for e in b.events if e.kind == "warning"]
        assert "generation_config_override" in whats, path.name
