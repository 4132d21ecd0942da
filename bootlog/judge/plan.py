"""Plan files: what a deploy is expected to look like (README "Plans").

A plan is TOML plus an optional env file (the operator's KEY=VALUE deploy config, read by
read.envfile), so the expectations can quote the very numbers the deploy was launched with
(`${MAXLEN}`) instead of repeating them and drifting apart.  Mistakes are one-line PlanErrors at
load, before any boot is judged, naming the key and what is allowed.  What a plan may cost is
bounded: what ${...} inserts (MAX_EXPANDED), and the time its own patterns' samples take at load
(parse.userpatterns: the time of each search, of each pattern's run and of all of them together).
"""

from __future__ import annotations

import difflib
import math
import os
import re
import time
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

import regex as _regex

from bootlog.errors import PlanError
from bootlog.figures import BY_NAME
from bootlog.read.envfile import (
    MAX_EXPANDED,
    MAX_MESSAGE,
    NAME,
    TOO_BIG,
    Budget,
    coerce,
    file_error,
    load_env,
    not_utf8,
    read_small,
)
from bootlog.records import EVENT_KINDS, Metric  # noqa: F401  (EVENT_KINDS: plan's vocabulary too)
from bootlog.parse import userpatterns
from bootlog.parse.userpatterns import PATTERN_BUDGET_S, PATTERN_TIMEOUT_S, UserPattern, user_pattern_hits_one, warn
from bootlog.safe import cut

# event kinds docs/figures.md adds to those bootlog.records reports
ADDED_EVENT_KINDS = ("crash_loop", "gpu_fault")

# The names a plan's [config] may use: vLLM's engine and server arguments as their dest names
# (EngineArgs of v0.7 and v0.11, FrontendArgs and the serve parser), every key the fixture logs
# print (non-default args, Namespace(...), the engine-config line) and the ROCm fork's own flags.
# Data, not logic: a new vLLM flag is one more word here; a plan can add its own with extra_args.
VLLM_ARGS = frozenset(
    """
    additional_config aggregate_engine_logging all2all_backend allow_credentials allowed_headers
    allowed_local_media_path allowed_media_domains allowed_methods allowed_origins api_key api_server_count
    async_scheduling attention_backend block_size calculate_kv_scales chat_template chat_template_content_format
    chat_template_text_format chunked_prefill_enabled code_revision collect_detailed_traces compilation_config
    config config_format convert cpu_offload_gb cpu_offload_params cuda_graph_sizes cudagraph_capture_sizes
    data_parallel_address data_parallel_backend data_parallel_hybrid_lb data_parallel_rank data_parallel_rpc_port
    data_parallel_size data_parallel_size_local data_parallel_start_rank dbo_decode_token_threshold
    dbo_prefill_token_threshold dcp_comm_backend decode_context_parallel_size decoding_config
    default_chat_template_kwargs default_mm_loras device device_config disable_async_output_proc
    disable_cascade_attn disable_chunked_mm_input disable_custom_all_reduce disable_fastapi_docs
    disable_frontend_multiprocessing disable_hybrid_kv_cache_manager disable_log_requests disable_log_stats
    disable_logprobs_during_spec_decoding disable_mm_preprocessor_cache disable_nccl_for_dp_synchronization
    disable_sliding_window disable_uvicorn_access_log dispatch_function distributed_executor_backend download_dir
    dtype enable_auto_tool_choice enable_chunked_prefill enable_dbo enable_ep_weight_filter enable_eplb
    enable_expert_parallel enable_force_include_usage enable_log_outputs enable_log_requests enable_lora
    enable_lora_bias enable_mm_embeds enable_multimodal_encoder_data_parallel enable_prefix_caching
    enable_prompt_adapter enable_prompt_embeds enable_prompt_tokens_details enable_reasoning
    enable_request_id_headers enable_return_routed_experts enable_server_load_tracking enable_sleep_mode
    enable_ssl_refresh enable_tiered_moe enable_tokenizer_info_endpoint enforce_eager engine_use_ray eplb_config
    eplb_log_balancedness eplb_step_interval eplb_window_size exclude_tools_when_tool_choice_none expert_offload_mem
    expert_placement_strategy expert_precise_memory expert_prefetch external_parameters fully_sharded_loras
    generation_config gpu_memory_utilization grace_machine_profile guided_decoding_backend
    guided_decoding_disable_additional_properties guided_decoding_disable_any_whitespace
    guided_decoding_disable_fallback h11_max_header_count h11_max_incomplete_event_size headless hf_config_path
    hf_overrides hf_token host ignore_patterns interleave_mm_strings intial_incremental_detokenization_offset
    io_processor_plugin kernel_config kv_cache_dtype kv_cache_memory_bytes kv_events_config kv_sharing_fast_prefill
    kv_transfer_config language_model_only limit_mm_per_prompt load_format log_config_file log_error_stack
    logits_processor_pattern logits_processors logprobs_mode long_lora_scaling_factors long_prefill_token_threshold
    lora_dtype lora_extra_vocab_size lora_modules mamba_block_size mamba_cache_dtype mamba_ssm_cache_dtype
    max_context_len_to_capture max_cpu_loras max_cudagraph_capture_size max_log_len max_logprobs
    max_long_partial_prefills max_lora_rank max_loras max_model_len max_num_batched_tokens max_num_partial_prefills
    max_num_seqs max_parallel_loading_workers max_prompt_adapter_token max_prompt_adapters max_seq_len
    max_seq_len_to_capture media_io_kwargs middleware mla_cache_tier mm_encoder_attn_backend mm_encoder_tp_mode
    mm_processor_cache_gb mm_processor_cache_type mm_processor_kwargs mm_shm_cache_max_object_size_mb model
    model_impl model_loader_extra_config model_tag multi_step_stream_outputs ngram_prompt_lookup_max
    ngram_prompt_lookup_min num_gpu_blocks_override num_lookahead_slots num_redundant_experts num_scheduler_steps
    num_speculative_tokens numa_bind observability_config offload_backend optimization_level otlp_traces_endpoint
    override_attention_dtype override_generation_config override_neuron_config override_pooler_config
    pipeline_parallel_size pooler_config port preemption_mode prefix_caching_hash_algo prompt_adapters
    pt_load_map_location qlora_adapter_name_or_path quantization quantization_config quantization_param_path
    ray_workers_use_nsight reasoning_parser reasoning_parser_plugin response_role return_tokens_as_token_ids
    revision root_path rope_scaling rope_theta runner safetensors_load_strategy scheduler_cls scheduler_delay_factor
    scheduling_policy seed served_model_name show_hidden_metrics_for_version skip_mm_profiling skip_tokenizer_init
    spec_decoding_acceptance_method speculative_config speculative_disable_by_batch_size
    speculative_disable_mqa_scorer speculative_draft_tensor_parallel_size speculative_max_model_len
    speculative_model speculative_model_quantization ssl_ca_certs ssl_cert_reqs ssl_certfile ssl_keyfile
    structured_outputs_config subparser swap_space task tensor_parallel_size tiered_moe_backend tokenizer
    tokenizer_mode tokenizer_pool_extra_config tokenizer_pool_size tokenizer_pool_type tokenizer_revision
    tokens_only tool_call_parser tool_parser_plugin tool_server trust_remote_code trust_request_chat_template
    typical_acceptance_sampler_posterior_alpha typical_acceptance_sampler_posterior_threshold uds
    use_async_output_proc use_cached_outputs use_tqdm_on_load use_v2_block_manager uvicorn_log_level
    video_pruning_rate worker_cls worker_extension_cls worker_use_ray
""".split()
)
# Keys inside dict-valued settings (compilation_config, speculative_config) that a plan may
# name bare: check finds them inside the one setting that has them (compare._config_value).
NESTED_ARGS = frozenset(
    """
    backend benchmark_combo_kernel cache_dir combo_kernels compile_cache_save_format compile_mm_encoder
    compile_ranges_endpoints compile_ranges_split_points compile_sizes cudagraph_copy_inputs cudagraph_mm_encoder
    cudagraph_mode cudagraph_num_of_warmups custom_ops debug_dump_path disable_by_batch_size draft_sample_method
    draft_tensor_parallel_size full_cuda_graph inductor_compile_config inductor_passes level local_cache_dir
    max_capture_size method mode pass_config prompt_lookup_max prompt_lookup_min speculative_token_tree
    splitting_ops use_cudagraph use_inductor use_inductor_graph_partition
""".split()
)

_BOUND_KEYS = ("min", "max", "eq", "approx")
_METRIC_KEYS = set(_BOUND_KEYS) | {"tol", "rank", "hard", "kind"}
_CLOSE = 0.85  # difflib ratio from which an unknown name is taken as a typo of a known one
# levels of tables, arrays and dotted keys a plan may nest: a real one uses 3 or 4; found before
# TOML parses it (tomllib held 2.3 GB for a 128 KB key 20,000 levels deep, and the walks after
# it recurse once a level)
_MAX_NESTING = 32
_MAX_RANK = 4095  # a rank of one server (TP x PP x DP workers) is below this


@dataclass
class Expect:
    """Bounds on one figure (or an event count): numbers, or names of another figure / config
    key of the same boot."""

    name: str
    min: Any = None
    max: Any = None
    eq: Any = None
    approx: Any = None
    tol: float = 0.01  # relative tolerance of `approx`
    rank: int | str | None = None  # None/"each": every rank; an int: that rank only
    hard: bool = False


@dataclass
class Plan:
    path: Path | None = None
    env: dict[str, Any] = field(default_factory=dict)
    env_prefix: str = ""
    config: dict[str, Any] = field(default_factory=dict)
    metrics: dict[str, Expect] = field(default_factory=dict)
    events: dict[str, Expect] = field(default_factory=dict)
    boot: dict[str, Any] = field(default_factory=dict)  # status, compile_cache, hard
    boot_metrics: dict[str, Expect] = field(default_factory=dict)  # [boot] boot_to_ready_s = {...}
    patterns: list[UserPattern] = field(default_factory=list)
    k: float = 3.0  # timing tolerance: median +/- k * MAD ...
    min_pct: float = 20.0  # ... never tighter than this percentage of the median
    extra_args: set[str] = field(default_factory=set)  # config keys beyond VLLM_ARGS
    warnings: list[str] = field(default_factory=list)  # said once on stderr at load
    env_file: Path | None = None  # the env file it reads (its snapshot is stored with a boot)
    deploy: dict[str, Any] = field(default_factory=dict)  # [deploy]: image_digest, env.NAME, ...

    @property
    def user_names(self) -> set[str]:
        return {p.name for p in self.patterns}


def did_you_mean(name: str, known: Iterable[str]) -> str | None:
    """The known name `name` is most likely a typo of (`max-num-seqs`, `max_num_seq` ->
    `max_num_seqs`), or None when none is close."""
    pool = sorted(set(known))
    norm = name.strip().lower().replace("-", "_")
    if norm != name and norm in pool:
        return norm
    hits = difflib.get_close_matches(norm, pool, n=1, cutoff=_CLOSE)
    return hits[0] if hits else None


def _hint(name: str, known: Iterable[str]) -> str:
    best = did_you_mean(name, known)
    return f" (did you mean {best}?)" if best else ""


# ---------------------------------------------------------------------------- expansion

_PLAN_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}()")  # plans: only ${NAME}, so a regex's $ is safe
_NESTED_VAR = re.compile(r"\$\{[^}]*\$\{")  # `${${X}}`: the inner one expanded, the outer left as text


def _lookup(name: str, env: dict[str, Any], prefix: str) -> tuple[bool, Any]:
    for key in (prefix + name, name):
        if key in env:
            return True, env[key]
    for key in (prefix + name, name):
        if key in os.environ:
            return True, coerce(os.environ[key])
    return False, None


def expand(value: Any, env: dict[str, Any], prefix: str, where: str, budget: Budget | None = None) -> Any:
    """`${NAME}` -> env[prefix+NAME] (else env[NAME]); a value that is one reference keeps the
    referenced type, a reference inside longer text is substituted as text.  What a reference
    inserts is not expanded again; `budget` bounds what all references of one plan insert."""
    budget = budget or Budget(MAX_EXPANDED)
    if isinstance(value, list):
        return [expand(v, env, prefix, where, budget) for v in value]
    if isinstance(value, dict):
        return {k: expand(v, env, prefix, f"{where}.{k}", budget) for k, v in value.items()}
    if not isinstance(value, str) or "${" not in value:
        return value

    def get(name: str) -> Any:
        found, v = _lookup(name, env, prefix)
        if not found:
            raise PlanError(
                f"{where}: ${{{name}}} is not defined in the env file (looked for {prefix + name} and {name})",
                key=where,
            )
        key = next((k for k in (prefix + name, name) if k in env), None)
        unset = getattr(env, "unset", {}).get(key) if key is not None and v in (None, "") else None
        if unset is not None:
            ref, no = unset
            raise PlanError(
                f"{where}: ${{{name}}} is empty: the env file sets {key} from ${{{ref}}} (line {no}), "
                f"which is set neither above it nor in the environment (an env file's "
                f"${{…}} names a variable as sh sees it: no {prefix or 'prefix'} is added)",
                key=where,
            )
        if not budget.take(len(v) if isinstance(v, str) else 16):
            raise PlanError(f"{where}: ${{{name}}}: {TOO_BIG}", key=where)
        return v

    if _NESTED_VAR.search(value):
        raise PlanError(
            f"{where}: a ${{…}} inside ${{…}}: a plan names each variable once, as ${{NAME}} "
            "(what a reference inserts is not expanded again)",
            key=where,
        )
    whole = _PLAN_VAR.fullmatch(value.strip())
    if whole:
        return get(whole.group(1))
    return _PLAN_VAR.sub(lambda m: "" if (v := get(m.group(1))) is None else str(v), value)


# ---------------------------------------------------------------------------- loading


def _line_of(text: str, needle: str | re.Pattern) -> int | None:
    # a pattern for keys too short to search as text (`k` of [tolerance])
    for no, line in enumerate(text.splitlines(), 1):
        if needle.search(line) if isinstance(needle, re.Pattern) else needle in line:
            return no
    return None


def _err(text: str, needle: str | re.Pattern, msg: str, **data: Any) -> PlanError:
    no = _line_of(text, needle)
    at = f"line {no}: " if no else ""
    return PlanError(f"plan {at}{msg}", line=no, **data)


def _what(v: Any) -> str:
    """A TOML value as an error shows it: scalars as written (long text cut), containers by kind."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, str) and len(v) > 60:
        return repr(v[:57]) + "…"
    if isinstance(v, (int, float, str)):
        return repr(v)
    kinds = ((dict, "a table"), (list, "an array"), (type(None), "nothing (an empty ${NAME}?)"))
    return next((what for t, what in kinds if isinstance(v, t)), "a date/time")


def _table(value: Any, text: str, needle: str, where: str) -> dict:
    # `config = 5` or `pattern = [1]` must be a plan error, not an AttributeError in .items()
    if not isinstance(value, dict):
        raise _err(text, needle, f"{where}: expected a table, got {_what(value)}", key=needle)
    return value


def _string(value: Any, text: str, needle: str, where: str) -> str | None:
    if value is not None and not isinstance(value, str):
        raise _err(text, needle, f"{where}: expected a string, got {_what(value)}", key=needle)
    return value


def _number(value: Any, text: str, needle: str | re.Pattern, where: str, key: str = "") -> float:
    """A finite number >= 0; a string holding one is taken as before (`k = "3"`)."""
    f = None
    if not isinstance(value, (bool, dict, list)):
        try:
            f = float(value)
        except (TypeError, ValueError):
            pass
    if f is None or not math.isfinite(f) or f < 0:
        raise _err(text, needle, f"{where}: expected a number ≥ 0, got {_what(value)}", key=key or needle)
    return f


def _flag(value: Any, text: str, needle: str, where: str) -> bool:
    # bool("false") is True: a quoted flag must not silently mean the opposite.  1/0 stay
    # accepted because env files write flags that way (`hard = "${STRICT}"` with STRICT=1).
    if isinstance(value, bool) or (isinstance(value, int) and value in (0, 1)):
        return bool(value)
    raise _err(text, needle, f"{where}: expected true or false, got {_what(value)}", key=needle)


def warning_whats() -> set[str]:
    """What the built-in warnings warn of (their detail "what"): [events] may bound each by
    that name, as compare.check counts them."""
    out = {"arg_overridden"}  # (made by boots.py from two config lines, not by one pattern)
    try:
        from bootlog.parse import patterns

        for p in patterns.CATALOGUE:
            if p.name == "warning":
                out.update(want["what"] for _, want in p.samples if isinstance(want.get("what"), str))
    except Exception:  # noqa: BLE001 - a sibling being rewritten must not make plans unloadable
        pass
    return out


def known_figures() -> set[str]:
    """Names a plan may bound: the docs/figures.md vocabulary plus the catalogue's own figures."""
    names = set(BY_NAME)
    try:  # the catalogue may define newer figures; it is optional for plan loading
        from bootlog.parse import patterns as _patterns

        names |= {p.name for p in getattr(_patterns, "CATALOGUE", ()) if getattr(p, "kind", "") == "metric"}
    except Exception:  # noqa: BLE001 - a broken sibling module must not make plans unloadable
        pass
    return names


def _expect(name: str, spec: Any, text: str, section: str) -> Expect:
    where = f"[{section}.{name}]"

    def err(msg: str) -> PlanError:
        return _err(text, name, msg, key=name)

    bounds = [spec] if not isinstance(spec, dict) else [spec.get(op) for op in _BOUND_KEYS]
    if any(isinstance(b, float) and not math.isfinite(b) for b in bounds):
        # (TOML has nan and inf: a bound no figure can meet, or one every figure meets)
        raise err(f"{where}: a bound must be a finite number")
    if section == "events" and any(isinstance(b, (int, float)) and not isinstance(b, bool) and b < 0 for b in bounds):
        raise err(f"{where}: an event count cannot be negative")
    if isinstance(spec, (int, float)) and not isinstance(spec, bool):
        return Expect(name=name, max=spec) if section == "events" else Expect(name=name, eq=spec)
    if not isinstance(spec, dict):
        raise err(f"[{section}] {name}: expected a number or a table like {{ min = … }}, got {_what(spec)}")
    unknown = sorted(set(spec) - _METRIC_KEYS)
    if unknown:
        raise err(
            f"{where}: unknown key {unknown[0]!r}{_hint(unknown[0], _METRIC_KEYS)} "
            f"(use {', '.join(sorted(_METRIC_KEYS))})"
        )
    if not any(k in spec for k in _BOUND_KEYS):
        raise err(f"{where}: no bound (min, max, eq or approx)")
    for op in _BOUND_KEYS:
        b = spec.get(op)
        if isinstance(b, bool) or not isinstance(b, (int, float, str, type(None))):
            raise err(f"{where} {op}: expected a number or a figure/config name, got {_what(b)}")
    rank = spec.get("rank")
    if rank is not None and not (
        (isinstance(rank, int) and not isinstance(rank, bool) and 0 <= rank <= _MAX_RANK)
        or rank in ("each", "all", "any")
    ):
        raise err(f'{where} rank {_what(rank)}: a rank from 0 to {_MAX_RANK}, or "each"')
    # (None: a ${NAME} the env file leaves empty, which means unset: the default)
    tol = 0.01 if spec.get("tol") is None else _number(spec["tol"], text, name, f"{where} tol")
    hard = spec.get("hard") is not None and _flag(spec["hard"], text, name, f"{where} hard")
    return Expect(
        name=name,
        min=spec.get("min"),
        max=spec.get("max"),
        eq=spec.get("eq"),
        approx=spec.get("approx"),
        tol=tol,
        rank=rank,
        hard=hard,
    )


def _sample(s: Any, text: str, name: str) -> tuple[str, float | None]:
    """One entry of a pattern's samples: a line, or { line = "…", value = N }."""
    if isinstance(s, str):
        return s, None
    where = f"[[pattern]] {name} samples"
    s = _table(s, text, name, where)
    line, want = s.get("line"), s.get("value")
    if not isinstance(line, str):
        raise _err(text, name, f'{where}: each needs line = "…" (a string), got {_what(line)}', key=name)
    if want is not None and (isinstance(want, bool) or not isinstance(want, (int, float))):
        raise _err(text, name, f"{where}: value must be a number, got {_what(want)}", key=name)
    return line, want


def compile_pattern(spec: dict, text: str, clock: Budget) -> UserPattern:
    """One [[pattern]] table -> UserPattern; its samples must match and give their values,
    within the pattern's per-search timeout each, its run budget together and what is left of
    `clock` (the time all samples of its plan may take)."""
    name = spec.get("name")
    if not isinstance(name, str) or not re.fullmatch(r"[a-z_][a-z0-9_]*", name):
        raise _err(text, "[[pattern]]", f"[[pattern]] name {_what(name)}: lowercase_with_underscores", key=str(name))
    if name in known_figures():
        # (its figures would be stored under a name bootlog reads itself: [metrics] would
        # judge the built-in one, and the pattern's values would be silently ignored)
        raise _err(
            text,
            name,
            f"[[pattern]] {name}: the name of a figure bootlog reads itself; give the pattern a name of its own",
            key=name,
        )

    def err(msg: str) -> PlanError:
        return _err(text, name, f"[[pattern]] {name}{msg}", key=name)

    src = spec.get("regex")
    if not isinstance(src, str) or not src:
        raise err(": missing regex")
    try:
        rx = _regex.compile(src)
    except _regex.error as e:
        raise err(f": regex does not compile: {e}") from None
    unit, event, literal, kind = (
        _string(spec.get(k), text, name, f"[[pattern]] {name} {k}") for k in ("unit", "event", "literal", "kind")
    )
    if kind not in (None, "capacity", "timing"):
        raise err(f" kind {_what(kind)}: capacity or timing")
    if event is None and "value" not in rx.groupindex:
        raise err(': a figure pattern needs a named group (?P<value>…); set event = "kind" for an event pattern')
    up = UserPattern(name=name, regex=rx, source=src, unit=unit, event=event, literal=literal, kind=kind)
    samples = spec.get("samples") or []
    if not samples:
        raise err(": give at least one sample line")
    if not isinstance(samples, list):  # a bare string would be taken apart character by character
        raise err(f" samples: expected an array, got {_what(samples)}")
    budget = min(PATTERN_BUDGET_S, clock.left)
    too_slow = err(
        f": its samples took more than {budget:g} s to match"
        + (
            " (its budget for a whole run)"
            if budget == PATTERN_BUDGET_S
            else f" (what is left of {userpatterns.PLAN_BUDGET_S:g} s for all samples of the plan)"
        )
    )
    started = time.perf_counter()
    try:
        for s in samples:
            line, want = _sample(s, text, name)
            left = budget - (time.perf_counter() - started)
            if left <= 0:
                raise too_slow
            try:
                hits = user_pattern_hits_one(up, line, limit=min(PATTERN_TIMEOUT_S, left))
            except TimeoutError:
                if left < PATTERN_TIMEOUT_S:  # cut short by the budget, not by its own timeout
                    raise too_slow from None
                raise err(": regex timed out on its sample") from None
            if not hits and up.not_numbers:
                raise err(f": its sample {_what(line)} captures {up.not_numbers[-1][1]!r}, which is not a number")
            if not hits:
                raise err(f": does not match its sample {_what(line)}")
            got = hits[0]
            if (
                isinstance(got, Metric)
                and want is not None
                and abs(got.value - float(want)) > 1e-9 * max(1.0, abs(float(want)))
            ):
                raise err(f": sample {_what(line)} gives {got.value}, expected {want}")
    finally:
        clock.left -= time.perf_counter() - started
    up.not_numbers.clear()  # (the samples' matches are no log's)
    return up


def load_plan(path: str | Path, *, judge: bool = False) -> Plan:
    """Read a plan TOML (and its env file); PlanError names the line or key that is wrong.
    Warnings (a [config] key bootlog does not know) are in .warnings and said on stderr.
    judge: the plan will judge a boot (check, diff, hook, report), so one that holds no
    expectation is an error: every boot would pass it (ingest and explain only run its
    patterns; a pattern-only plan is theirs)."""
    p = Path(path)
    try:
        text = read_small(p, "plan")
    except OSError as e:
        raise file_error("plan", p, e.strerror or str(e)) from e
    except UnicodeDecodeError as e:  # TOML is UTF-8 by definition
        raise file_error("plan", p, not_utf8(e)) from None
    depth, no = _nesting(text)
    if depth > _MAX_NESTING:
        raise file_error(
            "plan", p, f"tables, arrays or dotted keys nested more than {_MAX_NESTING} levels deep", line=no
        )
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        if _looks_like_env(text):
            raise file_error(
                "plan",
                p,
                "not a plan: it reads like an env file (NAME=value lines); a plan "
                f'is TOML and names its env file with env_file = "{_toml_str(p.name)}"',
            ) from None
        raise file_error("plan", p, f"bad TOML: {e}") from e
    except RecursionError:  # tomllib recurses once per nested array/table
        raise file_error("plan", p, "bad TOML: arrays or tables nested too deeply") from None
    try:
        plan = _build(data, text, p)
    except PlanError as e:
        msg, data_ = str(e), dict(e.data)
        if data_.get("line") is None and data_.get("key"):
            # name the line for errors found after parsing (an undefined ${NAME}, ...)
            no = _line_of(text, str(data_["key"]).split(".")[-1])
            if no:
                data_["line"] = no
                msg = f"plan line {no}: {msg}"
        raise PlanError(
            cut(f"{p.name}: {msg}", MAX_MESSAGE), path=str(p), **{k: v for k, v in data_.items() if k != "path"}
        ) from None
    if judge and not (
        plan.config
        or plan.metrics
        or plan.events
        or plan.boot_metrics
        or plan.deploy
        or plan.boot.get("status")
        or plan.boot.get("compile_cache") in ("warm", "cold")
    ):
        raise file_error(
            "plan",
            p,
            "holds no expectation (no [config], [metrics.NAME], [events], [boot] "
            "status/figure or [deploy] entry): every boot would pass it",
        )
    for w in plan.warnings:
        warn(f"{p.name}: {w}")
    return plan


_ENV_LINE = re.compile(r"(?:export\s+)?[A-Za-z_][A-Za-z0-9_]*=")


def _looks_like_env(text: str) -> bool:
    """Most of its statements are NAME=value with no spaces around "=" (a shell env file such as
    the deploy's frank-primary.env, given to --plan instead of the plan that names it)."""
    lines = [ln.strip() for ln in text.splitlines()[:2000] if ln.strip() and not ln.lstrip().startswith("#")]
    env = sum(1 for ln in lines if _ENV_LINE.match(ln))
    return bool(lines) and env * 2 > len(lines)


def _toml_str(name: str) -> str:
    return name.replace("\\", "\\\\").replace('"', '\\"')


# the tokens of TOML that make nesting, and the strings and comments in which nothing does
_NEST_TOKEN = re.compile(
    r'"""(?:[^\\]|\\.)*?"""|\'\'\'.*?\'\'\'|"(?:[^"\\\n]|\\.)*"|\'[^\'\n]*\'|#[^\n]*'
    r"|[\[\]{}=,.\n]",
    re.S,
)


def _nesting(text: str, limit: int = _MAX_NESTING) -> tuple[int, int]:
    """(the deepest nesting of the TOML text, its line), found without parsing it: the table
    a header opens (its dotted parts), plus the dotted parts of a key, plus the arrays and
    inline tables open around it.  A dot counts only in a key (before `=`, or in a header):
    a number's is a value's.  It stops at the first place deeper than `limit`."""
    deepest, at = 0, 1
    line, table, dots, inline = 1, 0, 0, 0  # inline: arrays and inline tables open
    open_: list[str] = []  # the brackets open: "[" array, "{" inline table, "h" a header
    in_key = True
    for m in _NEST_TOKEN.finditer(text):
        t = m.group()
        if t == "\n":
            line += 1
            if not open_:
                in_key, dots = True, 0
            continue
        if len(t) > 1 or t[0] in "\"'#":
            line += t.count("\n")
            continue
        if t == "." and in_key:
            dots += 1
        elif t == "=":
            in_key = False
        elif t in "[{":
            if t == "[" and in_key and not open_:
                open_.append("h")  # a [table] / [[array of tables]] header
                table, dots = 1, 0
                continue
            if t == "[" and open_ and open_[-1] == "h":
                continue  # the second [ of [[…]]
            open_.append(t)
            inline += 1
            in_key = t == "{"
            dots = 0 if in_key else dots
        elif t in "]}":
            if open_ and open_[-1] == "h":
                open_.pop()
                table, dots = table + dots, 0
                continue
            if open_:
                open_.pop()
                inline -= 1
        elif t == ",":
            in_key, dots = bool(open_) and open_[-1] == "{", 0
        depth = table + dots + inline
        if depth > deepest:
            deepest, at = depth, line
            if deepest > limit:
                break
    return deepest, at


# What each top-level key holds: a wrong kind is a plan error here, not a crash further on.
_TOP_TYPES: dict[str, Any] = {
    "env_file": str,
    "env_prefix": str,
    "name": str,
    "description": str,
    "config": dict,
    "metrics": dict,
    "events": dict,
    "boot": dict,
    "tolerance": dict,
    "pattern": list,
    "extra_args": "names",
    "deploy": dict,
}
# what [deploy] may require (docs/figures.md "deploy"): equal to the stored deploy context's
DEPLOY_KEYS = ("image", "image_digest", "restart_count", "exit_code", "oom_killed", "env")
_BOOT_CHOICES = {"status": ("ready", "failed", "incomplete"), "compile_cache": ("warm", "cold", "any")}


def _check_top(data: dict, text: str) -> None:
    for k, v in data.items():
        kind = _TOP_TYPES.get(k)
        if kind is None:
            raise _err(text, k, f"unknown top-level key {k!r}{_hint(k, _TOP_TYPES)}", key=k)
        if kind == "names":
            if not (isinstance(v, list) and all(isinstance(x, str) and NAME.fullmatch(x) for x in v)):
                raise _err(text, k, f'{k}: expected an array of names like ["my_flag"]', key=k)
        elif kind is list:
            if not isinstance(v, list):
                raise _err(text, k, f"{k}: expected [[{k}]] tables, got {_what(v)}", key=k)
            for item in v:
                _table(item, text, k, f"[[{k}]] entry")
        elif kind is str:
            _string(v, text, k, k)
        else:
            _table(v, text, k, k)


def _config_items(config: dict) -> Iterable[tuple[str, Any]]:
    """[config] entries, a table's entries one level down as "setting.key": TOML makes
    `compilation_config.cudagraph_mode = "PIECEWISE"` a table, which means "these keys of the
    setting", not "the setting is exactly this table" (a boot prints every key of it)."""
    for key, value in config.items():
        if isinstance(value, dict) and value:
            yield from ((f"{key}.{sub}", v) for sub, v in value.items())
        else:
            yield key, value


def _config_key(key: str, known: set[str], text: str) -> str | None:
    """None if a [config] key is a known argument (for `a.b`: its head `a`), a warning if it
    is close to none, a PlanError if it looks like a typo of one."""
    head = key.split(".", 1)[0]
    if head in known:
        return None
    best = did_you_mean(head, known)
    if best:
        raise _err(
            text,
            key,
            f"[config] {key}: not a vLLM argument (did you mean {best}?); "
            f'a fork\'s own flag of that name goes in extra_args = ["{head}"]',
            key=key,
        )
    return (
        f"[config] {key}: not a vLLM argument bootlog knows; it is checked against the "
        f"boot's config as written (list it in extra_args to say it is meant)"
    )


def _build(data: dict, text: str, p: Path) -> Plan:
    _check_top(data, text)
    env_file = (p.parent / data["env_file"]).resolve() if data.get("env_file") else None
    env = load_env(env_file) if env_file is not None else {}
    prefix = data.get("env_prefix", "")
    plan = Plan(path=p, env=env, env_prefix=prefix, extra_args=set(data.get("extra_args", ())), env_file=env_file)
    budget = Budget(MAX_EXPANDED)
    samples_clock, run_clock = Budget(userpatterns.PLAN_BUDGET_S), Budget(userpatterns.PLAN_BUDGET_S)

    def exp(value: Any, where: str) -> Any:
        return expand(value, env, prefix, where, budget)

    tol = data.get("tolerance", {})
    for key in ("k", "min_pct"):
        if tol.get(key) is not None:
            # `k = …`, `{ k = … }` or `tolerance.k = …`: a bare "k" would match any line
            at = re.compile(rf"(^\s*|[{{,.]\s*){key}\s*=")
            setattr(
                plan,
                key,
                _number(exp(tol[key], f"tolerance.{key}"), text, at, f"[tolerance] {key}", f"tolerance.{key}"),
            )

    for spec in data.get("pattern", []):
        # the regex is taken verbatim: `$` and `{…}` belong to the regex, not to the env file
        up = compile_pattern(
            {k: (v if k == "regex" else exp(v, f"pattern.{k}")) for k, v in spec.items()}, text, samples_clock
        )
        up.shared = run_clock
        plan.patterns.append(up)

    figures = known_figures() | plan.user_names
    args = set(VLLM_ARGS) | NESTED_ARGS | plan.extra_args
    for key, value in _config_items(data.get("config", {})):
        warning = _config_key(key, args, text)
        if warning:
            plan.warnings.append(warning)
        plan.config[key] = exp(value, f"config.{key}")

    for key, value in _config_items(data.get("deploy", {})):
        if key.split(".", 1)[0] not in DEPLOY_KEYS or key == "env":
            raise _err(
                text,
                key,
                f"[deploy] {key}: not a deploy fact{_hint(key, DEPLOY_KEYS)} (one of "
                + ", ".join(k if k != "env" else "env.NAME" for k in DEPLOY_KEYS)
                + ")",
                key=key,
            )
        plan.deploy[key] = exp(value, f"deploy.{key}")

    for name, spec in data.get("metrics", {}).items():
        if name not in figures:
            raise _err(
                text,
                name,
                f"[metrics.{name}]: unknown figure {name!r}{_hint(name, figures)} "
                "(not in the metrics vocabulary nor a [[pattern]] name)",
                key=name,
            )
        plan.metrics[name] = _expect(name, exp(spec, f"metrics.{name}"), text, "metrics")

    kinds = set(EVENT_KINDS) | set(ADDED_EVENT_KINDS) | {up.event for up in plan.patterns if up.event}
    whats = warning_whats()
    for kind, spec in data.get("events", {}).items():
        if kind not in kinds and kind not in whats:
            raise _err(
                text,
                kind,
                f"[events]: unknown event kind {kind!r}{_hint(kind, kinds | whats)} "
                f"(known: {', '.join(sorted(kinds))}, or a warning's what: "
                f"{', '.join(sorted(whats))})",
                key=kind,
            )
        plan.events[kind] = _expect(kind, exp(spec, f"events.{kind}"), text, "events")

    for key, value in data.get("boot", {}).items():
        value = exp(value, f"boot.{key}")
        if key in _BOOT_CHOICES:
            *some, last = choices = _BOOT_CHOICES[key]
            if value not in choices:
                raise _err(text, key, f"[boot] {key} {_what(value)}: {', '.join(some)} or {last}", key=key)
            plan.boot[key] = value
        elif key == "hard":
            plan.boot["hard"] = value is not None and _flag(value, text, "hard", "[boot] hard")
        elif key in figures:
            plan.boot_metrics[key] = _expect(key, value, text, "boot")
        else:
            hint = _hint(key, figures | {"status", "compile_cache", "hard"})
            raise _err(
                text,
                key,
                f"[boot]: unknown key {key!r}{hint} (status, compile_cache, hard, or a figure such as boot_to_ready_s)",
                key=key,
            )
    _check_bounds(plan, figures | args | set(plan.config), text)
    return plan


def _bound_ok(b: str, names: set[str]) -> bool:
    if b in names:
        return True
    try:  # a number written as text ("400700", "1,000"), as compare reads it
        return math.isfinite(float(b.replace(",", "")))
    except ValueError:
        return False


def _check_bounds(plan: Plan, names: set[str], text: str) -> None:
    """A text bound must be a number, a figure or a config key: `min = "lots"` can never be
    checked, so it is a plan error now rather than "not in this boot" at every check."""
    for section, table in (("metrics", plan.metrics), ("boot", plan.boot_metrics), ("events", plan.events)):
        for ex in table.values():
            for op in _BOUND_KEYS:
                b = getattr(ex, op)
                if isinstance(b, str) and not _bound_ok(b.strip(), names):
                    raise _err(
                        text,
                        ex.name,
                        f"[{section}.{ex.name}] {op} = {_what(b)}: not a "
                        f"number, a figure or a config key{_hint(b, names)}",
                        key=ex.name,
                    )
