"""Compare boots: newer vs older (diff), a boot vs its plan (check), timings vs history.

Works on stored boots as records (shown.Shown; a `show --json` dict is read as one), so it
never touches the store and can be tested on hand-built dicts; its findings are shown.Finding
records, given back as the `diff --json` / `check --json` object.  Capacity figures (KV tokens,
blocks, concurrency, GiB of loads and graphs) are deterministic for one image + config + GPU:
any move at an unchanged config is drift, with a changed config it is `changed` and the keys
that can size it are named.  Timings are noisy: judged against earlier boots of the same config
(median +/- k*MAD, never tighter than min_pct), and only a slowdown is drift.
"""

from __future__ import annotations

import math
import re
import statistics
from dataclasses import replace
from typing import Any, Iterable, Sequence

from bootlog.parse.hits import decimal
from bootlog.figures import FIGURES, SIZING, UNITS, names
from bootlog.judge.plan import EVENT_KINDS, Expect, Plan
from bootlog.judge.verdict import FAILED, boot_problem, count_of, event_counts
from bootlog.shown import Deploy, EventRow, Finding, Shown

# Event kinds whose appearance (or growth) means something went wrong.
FAULT_EVENTS = (
    "oom",
    "engine_init_failed",
    "value_error",
    "kv_cache_insufficient",
    "gdn_hip_fault",
    "gdn_hip_fault_cap",
    "worker_died",
    "traceback",
)
# Boot fields compared before config: a version change explains capacity moves.
BOOT_FIELDS = ("vllm_version", "engine", "model", "host", "status")
CAPACITY_METRICS, TIMING_METRICS, DEPLOY_METRICS = names("capacity"), names("timing"), names("probe")
COUNTER_METRICS = names("counter")
_ORDER = {n: i for i, n in enumerate((*CAPACITY_METRICS, *TIMING_METRICS))}
_EVENT_ORDER = {k: i for i, k in enumerate(EVENT_KINDS)}
MIN_HISTORY = 3
# Object reprs carry a memory address that changes every start ("<function … at 0x7f…>").
_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")
# an enum member as Python prints it inside a dict: <CompilationMode.VLLM_COMPILE: 3>
_ENUM_REPR = re.compile(r"<([A-Za-z_][\w.]*): [^<>]*>")
_DEVICE = re.compile(r"\b(?:cuda|hip|rocm):(\d+)|\bGPU (\d+) has a total capacity")

# Config keys that cannot size GPU memory: reported as config changes but never offered as the
# explanation of a capacity move (a port change does not move the KV cache).
NON_CAPACITY_KEYS = frozenset(
    """
    host port api_key served_model_name dispatch_function model_tag uvicorn_log_level disable_log_requests
    enable_log_requests disable_log_stats allowed_origins allowed_methods allowed_headers allow_credentials
    root_path ssl_keyfile ssl_certfile ssl_ca_certs ssl_cert_reqs middleware chat_template
    chat_template_content_format default_chat_template_kwargs response_role tool_call_parser
    enable_auto_tool_choice reasoning_parser tool_parser_plugin enable_request_id_headers disable_fastapi_docs
    disable_frontend_multiprocessing return_tokens_as_token_ids max_log_len log_config_file
    enable_server_load_tracking enable_force_include_usage enable_prompt_tokens_details
    h11_max_incomplete_event_size h11_max_header_count lora_modules prompt_adapters observability_config
    collect_detailed_traces otlp_traces_endpoint show_hidden_metrics_for_version seed
""".split()
)
# Keys that size GPU memory, most direct first: named first among the candidate causes.
_SIZING = {k: i for i, k in enumerate(SIZING)}
# Which config keys can size which figure; a figure not named here may be sized by any key.
SIZED_BY: dict[str, frozenset[str]] = {f.name: f.sized_by for f in FIGURES if f.sized_by is not None}
# Figures that follow the KV pool's size: where the engine sized the pool by measuring memory
# (kv_cache_sized_by "measured": GPU profiling, the CPU backend's "Auto set"), they move a little
# between identical boots (the CPU tier: 5,382,656 -> 5,382,144 tokens, 0.05 %), so a move within
# MEASURED_KV_TOL is that measurement; an explicit size (kv_cache_memory_bytes) stays exact.
MEASURED_KV = frozenset(f.name for f in FIGURES if f.measured_kv)
MEASURED_KV_TOL = 0.01
# Changes that can move any figure: another build, image, command, model or machine.
_MOVES_ANYTHING = frozenset(
    {"vllm_version", "image_digest", "image", "image_id", "command", "model", "engine", "boot.host"}
)


# ---------------------------------------------------------------------------- helpers


def _num(v: Any) -> float | None:
    if isinstance(v, bool) or v is None:
        return None
    try:  # (text: as vLLM prints a number, ASCII decimal: "１.５" and "1_0" are no numbers)
        return float(v) if isinstance(v, (int, float)) else float(decimal(str(v)))
    except ValueError:
        return None


def explain(name: str, cause: list[str]) -> tuple[str, str]:
    """(verdict, why) of a capacity figure `name` that moved while the keys in `cause` changed:
    explained by the keys that can size it; possibly by a key bootlog does not know (a fork's
    own setting, a deploy env var); else drift."""
    sized = SIZED_BY.get(name)
    known = [k for k in cause if k in _MOVES_ANYTHING or (k in _SIZING and (sized is None or k in sized))]
    if known:
        return "changed", "explained by a change of " + _names(known)
    maybe = [k for k in cause if k not in _SIZING and k not in _MOVES_ANYTHING]
    if maybe:
        return "changed", f"possibly explained by a change of {_names(maybe)} (not known to size {name})"
    if not cause:
        return "drift", "not explained by anything the log shows: capacity must not move at an unchanged config"
    return "drift", "not explained by anything the log shows"


def _norm(v: Any) -> Any:
    """Config values as comparable things: '200704' == 200704, 'True' == True, '' == None."""
    if isinstance(v, str):
        s = _ADDRESS.sub(" at 0x…", v.strip().strip("'\""))
        low = s.lower()
        if low in ("", "none", "null", "true", "false"):
            return {"true": True, "false": False}.get(low)
        n = _num(s)
        if n is not None:
            return n if n == n else "nan"  # (NaN equals nothing, itself included)
        if s[:1] in "[{":  # an env file's JSON ({"enable_thinking": true}) vs Python's repr
            got = _structure(s)
            if got is not None:
                return _norm(got)
        return s
    if isinstance(v, bool) or v is None:
        return v
    if isinstance(v, (int, float)):
        return float(v) if v == v else "nan"
    if isinstance(v, dict):
        return {str(k): _norm(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_norm(x) for x in v]
    return v


MAX_NESTING = 64  # levels of a config value compared as a structure; deeper, it is compared as text


def _structure(s: str) -> dict | list | tuple | None:
    """A dict or list printed as JSON or as a Python literal (enum members read as their
    names: compilation_config), else None; also None when it nests deeper than MAX_NESTING
    (a value 500 lists deep parses, and then every walk over it -- _norm -- ran out of stack:
    the boot failed every diff, check and report)."""
    import ast
    import json

    for load in (
        json.loads,
        ast.literal_eval,
        lambda t: ast.literal_eval(_ENUM_REPR.sub(lambda m: repr(m.group(1)), t)),
    ):
        try:
            got = load(s)
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            continue
        if isinstance(got, (dict, list, tuple)):
            return None if _deeper_than(got, MAX_NESTING) else got
    return None


def _deeper_than(v: Any, limit: int) -> bool:
    """Whether a parsed value nests more than `limit` levels (found without recursion)."""
    level: list[Any] = [v]
    for _ in range(limit):
        level = [
            x for c in level for x in (c.values() if isinstance(c, dict) else c) if isinstance(x, (dict, list, tuple))
        ]
        if not level:
            return False
    return True


def _as_dict(v: Any) -> dict | None:
    if isinstance(v, dict):
        return v
    got = _structure(v.strip()) if isinstance(v, str) and v.strip()[:1] == "{" else None
    return got if isinstance(got, dict) else None


def _sub_changes(old: Any, new: Any) -> list[tuple[str, Any, Any]]:
    """(sub-key, old, new) where two dict-valued settings (compilation_config, ...) differ, so a
    diff names what changed inside; [] when either is not a dict."""
    a, b = _as_dict(old), _as_dict(new)
    if a is None or b is None:
        return []
    return [
        (str(k), a.get(k), b.get(k)) for k in sorted(set(a) | set(b), key=str) if not values_equal(a.get(k), b.get(k))
    ]


def _config_value(cfg: dict, key: str) -> tuple[bool, Any]:
    """(found, value) of a plan's config key: a key of the boot's config, or a key inside one
    of its dict-valued settings, named "setting.key" or, when only one setting has it, "key"
    alone (cudagraph_capture_sizes is inside compilation_config)."""
    if key in cfg:
        return True, cfg[key]
    top, dot, sub = key.partition(".")
    if dot and top in cfg:
        d = _as_dict(cfg[top])
        return (True, d[sub]) if d is not None and sub in d else (False, None)
    hits = []
    for v in cfg.values():
        if isinstance(v, dict) or (isinstance(v, str) and v[:1] == "{" and key in v):
            d = _as_dict(v)
            if d is not None and key in d:
                hits.append(d[key])
    return (True, hits[0]) if len(hits) == 1 else (False, None)


def values_equal(x: Any, y: Any) -> bool:
    a, b = _norm(x), _norm(y)
    if isinstance(a, float) and isinstance(b, float):
        return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)
    if (isinstance(a, bool) or isinstance(b, bool)) and (isinstance(a, float) or isinstance(b, float)):
        return float(a) == float(b)  # env files say 1/0 where Python prints True/False
    return a == b


def _clean(v: Any) -> Any:
    """Numbers as JSON-friendly ints where integral."""
    if isinstance(v, float):
        return int(v) if v.is_integer() and abs(v) < 2**53 else round(v, 6)
    return v


def finding(
    key: str,
    section: str,
    old: Any,
    new: Any,
    verdict: str,
    why: str = "",
    rank: int | None = None,
    expect: str | None = None,
) -> Finding:
    """One row of a diff or check.  expect: a check's expectation of a figure or event count
    as text ("≥ 400,700"); its `old` is then the bound, not an earlier value."""
    o, n = _num(old), _num(new)
    d = pct = None
    if o is not None and n is not None and math.isfinite(o) and math.isfinite(n):
        d, pct = _clean(n - o), (round((n - o) / abs(o) * 100, 2) if o else None)
    return Finding(key, section, rank, _clean(old), _clean(new), d, pct, verdict, why, expect)


def summarize(findings: list[Finding]) -> dict:
    return {
        "drift": sum(f.verdict == "drift" for f in findings),
        "violations": sum(f.verdict == "violation" for f in findings),
        "changed_config": sum(f.section == "config" and f.verdict == "changed" for f in findings),
        "unchanged": sum(f.verdict == "same" for f in findings),
    }


def result_of(a: Any, b: Any, findings: list[Finding]) -> dict:
    """The `diff --json` / `check --json` object (the contract's shape) of these findings."""
    return {"a": a, "b": b, "findings": [f.to_json() for f in findings], "summary": summarize(findings)}


def status_finding(doc: Shown | dict, want: Any = "ready") -> Finding | None:
    """check's and diff's `status` row for a boot with a problem of its own (violation when it
    failed, drift when it survived a fault), or None."""
    own = boot_problem(doc)
    if own is None:
        return None
    status = Shown.of(doc).boot.status
    return finding("status", "config", want, status, "violation" if own[0] == FAILED else "drift", own[1])


def _fmt(v: float) -> str:
    v = round(v, 3)
    return f"{int(v):,}" if float(v).is_integer() else format(v, ",")


def _names(keys: list[str], n: int = 5) -> str:
    more = f" and {len(keys) - n} more" if len(keys) > n else ""
    return ", ".join(keys[:n]) + more


def _fail(hard: bool) -> str:
    return "violation" if hard else "drift"


# ---------------------------------------------------------------------------- figures


def figures(show: Shown | dict) -> dict[str, dict[int | None, list[float]]]:
    """name -> rank -> values in log order."""
    out: dict[str, dict[int | None, list[float]]] = {}
    for m in Shown.of(show).metrics:
        v = _num(m.value)
        if v is not None and math.isfinite(v):  # a nan/inf print is no figure to compare
            out.setdefault(m.name, {}).setdefault(m.rank, []).append(v)
    return out


def _collapse(by_rank: dict[int | None, list[float]]) -> dict[int | None, list[float]]:
    """Ranks that all printed the same values collapse to one row (rank null)."""
    lists = list(by_rank.values())
    if len(by_rank) > 1 and all(lst == lists[0] for lst in lists[1:]):
        return {None: lists[0]}
    return by_rank


def _is_timing(name: str, plan: Plan | None) -> bool:
    # the hook's measurements move from run to run like timings (GPU memory with co-tenants):
    # judged against history, bounded by a plan
    if name in TIMING_METRICS or name in DEPLOY_METRICS:
        return True
    if name in CAPACITY_METRICS:
        return False
    kind = next((up.kind for up in plan.patterns if up.name == name and up.kind), None) if plan else None
    return kind == "timing" if kind else UNITS.get(name) == "s" or name.endswith("_s")


def _history_values(history: Iterable[dict], name: str, rank: int | None, idx: int) -> list[float]:
    """One value per earlier boot; `history` holds figures() dicts (computed once per diff)."""
    vals = []
    for h in history:
        by_rank = h.get(name) or {}
        if rank in by_rank:
            if idx < len(by_rank[rank]):
                vals.append(by_rank[rank][idx])
        elif rank is None and by_rank:  # collapsed row: one value per earlier boot, the median of its ranks
            col = [lst[idx] for lst in by_rank.values() if idx < len(lst)]
            if col:
                vals.append(statistics.median(col))
    return vals


def judge_timing(new: float, hist: list[float], k: float = 3.0, min_pct: float = 20.0) -> tuple[str, str]:
    """Verdict of a timing against earlier boots of the same config."""
    if len(hist) < MIN_HISTORY:
        return "insufficient_history", f"{len(hist)} earlier boot(s) at this config; need {MIN_HISTORY}"
    med = statistics.median(hist)
    mad = statistics.median(abs(x - med) for x in hist)
    tol = max(k * 1.4826 * mad, abs(med) * min_pct / 100)
    band = f"history median {_fmt(med)} s ±{_fmt(tol)} over {len(hist)} boots"
    if new > med + tol:
        return "drift", f"slower than {band}"
    if new < med - tol:
        return "changed", f"faster than {band}"
    return "same", f"within {band}"


# ---------------------------------------------------------------------------- diff

RESIDENT = "full-length requests resident: "


def _resident(show: Shown | dict | None) -> tuple[float, float] | None:
    """(full-length requests the boot's KV cache holds, max_num_seqs), or None."""
    if not show:
        return None
    show = Shown.of(show)
    fig, cfg = figures(show), show.config
    kv = min((vals[-1] for vals in (fig.get("kv_cache_tokens") or {}).values()), default=None)  # (the tightest rank)
    mlen, seqs = _num(cfg.get("max_model_len")), _num(cfg.get("max_num_seqs"))
    if not kv or not mlen or not seqs:
        return None
    return kv / mlen, seqs


def margin_meaning(show: Shown | dict, before: Shown | dict | None = None) -> str | None:
    """What kv_margin_tokens means for a boot: how many full-length requests its KV cache holds
    of the max_num_seqs it was allowed (the shipped shape G's -200,704 is "2.00 of 3", not the
    worst deploy); with `before` (a diff's older boot), how that moved: "1.99 → 2.00 of 3"."""
    now, then = _resident(show), _resident(before)
    if now is None:
        return None
    if then is None or (f"{then[0]:.2f}", then[1]) == (f"{now[0]:.2f}", now[1]):
        return f"{RESIDENT}{now[0]:.2f} of {now[1]:g} slots"
    if then[1] == now[1]:
        return f"{RESIDENT}{then[0]:.2f} → {now[0]:.2f} of {now[1]:g} slots"
    return f"{RESIDENT}{then[0]:.2f} of {then[1]:g} → {now[0]:.2f} of {now[1]:g} slots"


def bytes_per_token_meaning(show: Shown | dict) -> str | None:
    """Which bytes kv_bytes_per_token divides, in words: the asked kv_cache_memory_bytes (what
    boots._derive divides).  vLLM's "reserved X GiB memory for KV Cache as specified by
    kv_cache_memory_bytes" prints that same ask, rounded (gpu_worker.py: format_gib(kv_cache_
    memory_bytes)); the block-aligned bytes the engine then allocates (the seeds' 3,146,129,408 B
    of a 3,150,000,000 B ask) are printed by no line, so no figure can divide them.  None when
    the stored value is not that quotient (then it is not known what it divides)."""
    show = Shown.of(show)
    fig, cfg = figures(show), show.config
    per = next(iter((fig.get("kv_bytes_per_token") or {}).values()), None)
    kv = next(iter((fig.get("kv_cache_tokens") or {}).values()), None)
    asked = _num(cfg.get("kv_cache_memory_bytes"))
    if not per or not kv or not asked or kv[0] <= 0 or not math.isclose(per[0], asked / kv[0], rel_tol=1e-9):
        return None
    reserved = next(iter((fig.get("kv_cache_reserved_gib") or {}).values()), None)
    said = f'; the log\'s "reserved {_fmt(reserved[0])} GiB" is this ask, rounded' if reserved else ""
    return (
        f"asked bytes: kv_cache_memory_bytes {_fmt(asked)} ÷ {_fmt(kv[0])} KV tokens{said}; "
        "the block-aligned bytes the engine allocated are not printed"
    )


def _say_margin(out: list[Finding], show: Shown, before: Shown | None = None) -> None:
    meaning = margin_meaning(show, before)
    for f in out:
        if meaning and f.key == "kv_margin_tokens" and f.section == "metric":
            f.why = f"{meaning}; {f.why}" if f.why else meaning  # (what it means first)


def diff(
    a: Shown | dict,
    b: Shown | dict,
    *,
    history: Iterable[Shown | dict] = (),
    plan: Plan | None = None,
    with_check: bool = True,
) -> dict:
    """Compare boot `a` (newer) with boot `b` (older); `history` = earlier boots of a's shape.
    plan: its tolerance and own figures, and (with_check) its verdict on `a` riding along."""
    a, b = Shown.of(a), Shown.of(b)
    figs = [figures(h) for h in map(Shown.of, history) if h.boot.id != a.boot.id]
    k, min_pct = (plan.k, plan.min_pct) if plan else (3.0, 20.0)
    ba, bb = a.boot, b.boot
    ca, cb = a.config, b.config
    out: list[Finding] = []

    # --- cause first: how the boots were deployed, and what they were asked to be
    from bootlog.measure.deploy import deploy_findings

    deployed = [f for f in deploy_findings(_doc(b.deploy), _doc(a.deploy)) if f.verdict != "same"]
    out.extend(deployed)
    for f in BOOT_FIELDS:
        if f == "status" or (f in ca or f in cb) and f != "host":
            continue  # a config key of the same name says it once
        old, new = getattr(bb, f), getattr(ba, f)
        if not values_equal(old, new):
            why = "different vLLM build: capacity moves are expected" if f == "vllm_version" else ""
            out.append(finding(_boot_key(f, ca, cb), "config", old, new, "changed", why))
    changed_keys = []
    for key in sorted(set(ca) | set(cb), key=lambda k: (_SIZING.get(k, len(_SIZING)), k)):
        if not values_equal(cb.get(key), ca.get(key)):
            changed_keys.append(key)
            subs = _sub_changes(cb.get(key), ca.get(key))
            if subs:  # what changed inside it, not two long prints that differ somewhere
                out.extend(finding(f"{key}.{sub}", "config", o, n, "changed") for sub, o, n in subs)
            else:
                out.append(finding(key, "config", cb.get(key), ca.get(key), "changed"))
    out.extend(_status_findings(a, b))
    measured = "measured" in (ba.kv_cache_sized_by, bb.kv_cache_sized_by)
    cause = [f.key for f in deployed if f.key != "restart_count"]
    if not values_equal(ba.vllm_version, bb.vllm_version):
        cause.append("vllm_version")
    cause += [k for k in changed_keys if k not in NON_CAPACITY_KEYS]  # (already in _SIZING order)
    inert = [k for k in changed_keys if k in NON_CAPACITY_KEYS]
    for f in ("model", "engine", "host"):  # another machine may hold another GPU
        if not values_equal(getattr(ba, f), getattr(bb, f)) and _boot_key(f, ca, cb) not in cause:
            cause.append(_boot_key(f, ca, cb))

    # --- effect: the figures
    fa, fb = figures(a), figures(b)
    non_kv = _non_kv_explains(fa, fb) if measured else ""
    cache = _compile_cache_finding(fa, fb, cause)
    for name in sorted(set(fa) | set(fb), key=lambda n: (_is_timing(n, plan), _ORDER.get(n, len(_ORDER)), n)):
        rows = _metric_findings(
            name,
            fa.get(name, {}),
            fb.get(name, {}),
            cause,
            figs,
            plan,
            k,
            min_pct,
            inert,
            measured and name in MEASURED_KV,
            non_kv,
        )
        if cache and name in ("compile_graph_s", "compile_cache_load_s"):
            # the compile_cache row says it once: cold vs warm, and what it cost
            rows = [r for r in rows if r.verdict not in ("new", "gone")]
        out.extend(rows)
    if cache:
        out.append(cache)
    out.extend(_event_findings(a, b))

    if plan is not None and with_check:
        # the plan's verdict on the new boot rides along, minus what the diff already said
        seen = {(f.key, f.rank, f.verdict) for f in out}
        out.extend(
            f
            for f in _check(a, plan)
            if f.verdict != "same" and f.key != "status" and (f.key, f.rank, f.verdict) not in seen
        )
    _say_margin(out, a, b)
    return result_of(ba.id, bb.id, out)


def _doc(deploy: Deploy | None) -> dict | None:
    return None if deploy is None else deploy.doc


def _boot_key(f: str, ca: dict, cb: dict) -> str:
    # the machine, not vLLM's --host bind address
    return "boot.host" if f == "host" and (f in ca or f in cb) else f


def _status_findings(a: Shown, b: Shown) -> list[Finding]:
    new, old = a.boot.status, b.boot.status
    # (the contract's exit 4 for a boot that failed, at start or serving; verdict.py's one rule)
    own = status_finding(a, old)
    if own is not None:
        return [own]
    return [] if values_equal(old, new) else [finding("status", "config", old, new, "changed")]


def _metric_findings(
    name: str,
    ra: dict,
    rb: dict,
    cause: list[str],
    history: list[dict],
    plan: Plan | None,
    k: float,
    min_pct: float,
    inert: Sequence[str] = (),
    measured: bool = False,
    non_kv: str = "",
) -> list[Finding]:
    ca, cb = _collapse(ra), _collapse(rb)
    if (len(ca) == 1 and None in ca) == (len(cb) == 1 and None in cb) or not ra or not rb:
        ra, rb = ca, cb  # collapse only when both sides do, so ranks stay comparable
    if set(ra) != set(rb) and len(ra) == 1 and len(rb) == 1:
        # one side printed once (rank null), the other once with a rank: same figure
        ra, rb = {None: next(iter(ra.values()))}, {None: next(iter(rb.values()))}
    elif set(ra) != set(rb) and (set(ra) == {None} or set(rb) == {None}) and ra and rb:
        # TP1 (no rank) against TP>1 whose ranks differ: hold every rank to the single value
        if set(ra) == {None}:
            ra = {r: ra[None] for r in rb}
        else:
            rb = {r: rb[None] for r in ra}
    timing = _is_timing(name, plan)
    out = []
    for rank in sorted(set(ra) | set(rb), key=lambda r: (r is not None, r or 0)):
        la, lb = ra.get(rank, []), rb.get(rank, [])
        if la and lb and len(la) != len(lb):
            # one figure printed again with the same value (the engine core's KV sizing once per
            # TP worker: v0.8-v0.10): once, else a boot printing it once reads as "new"
            la, lb = _once(la), _once(lb)
        for idx in range(max(len(la), len(lb))):
            if idx >= len(lb):
                out.append(finding(name, "metric", None, la[idx], "new", "", rank))
                continue
            if idx >= len(la):
                out.append(finding(name, "metric", lb[idx], None, "gone", "", rank))
                continue
            old, new = lb[idx], la[idx]
            if name in COUNTER_METRICS:
                verdict, why = (
                    ("same", "")
                    if values_equal(old, new)
                    else ("changed", "a counter at probe time: it moves with the traffic before the probe")
                )
            elif timing:
                verdict, why = judge_timing(new, _history_values(history, name, rank, idx), k, min_pct)
                if verdict == "insufficient_history" and values_equal(old, new):
                    verdict = "same"
                elif verdict == "same" and not values_equal(old, new):
                    verdict = "changed"  # the contract: moved, but within tolerance
            elif values_equal(old, new):
                verdict, why = "same", ""
            elif measured and non_kv:
                verdict, why = "changed", non_kv
            elif measured and _within(old, new, MEASURED_KV_TOL):
                verdict, why = (
                    "changed",
                    (
                        f"within ±{MEASURED_KV_TOL:.0%} of a KV cache the engine sized by "
                        "measuring memory (kv_cache_sized_by: measured)"
                    ),
                )
            else:
                verdict, why = explain(name, cause)
                if measured:
                    why += f" (more than the ±{MEASURED_KV_TOL:.0%} a measured KV cache moves)"
                step = print_step(name, old, new)
                if verdict == "drift" and step is not None and abs(new - old) <= step * (1 + 1e-6):
                    # -0.06 -> -0.05 GiB: the same capture rounded the other way, not a move
                    unit = f" {UNITS[name]}" if UNITS.get(name) and UNITS[name] != "x" else ""
                    verdict, why = (
                        "changed",
                        (f"moved by the last digit it is printed with ({step:g}{unit}): within its print resolution"),
                    )
                elif verdict == "drift" and inert:
                    why += f" (only {', '.join(inert[:4])} changed, which do not size memory)"
                elif verdict == "drift" and cause:
                    why += f" ({_names(cause)} changed, which do not size {name})"
            out.append(finding(name, "metric", old, new, verdict, why, rank))
    return out


def _non_kv_explains(fa: dict, fb: dict) -> str:
    """Why a measured KV pool moved, when the log says it: the CPU backend sizes it as what the
    worker's share leaves after its non-KV memory ("Auto set (5.21/23.54) GiB ... 0.67 GiB memory
    was consumed by non-kv usages"), so KV + non-KV is the share, unchanged within the two
    figures' print resolution (0.01 GiB each) when only the non-KV use moved."""

    def first(f: dict, name: str) -> float | None:
        vals = [v for rank in sorted(f.get(name, {}), key=lambda r: (r is not None, r or 0)) for v in f[name][rank]]
        return _num(vals[0]) if vals else None

    ka, kb = first(fa, "kv_cache_available_gib"), first(fb, "kv_cache_available_gib")
    na, nb = first(fa, "non_kv_memory_gib"), first(fb, "non_kv_memory_gib")
    if None in (ka, kb, na, nb) or na == nb or abs((ka + na) - (kb + nb)) > 0.02 + 1e-9:
        return ""
    return (
        f"explained by the engine's non-KV memory use: {_fmt(nb)} → {_fmt(na)} GiB, and it sized the KV "
        "cache from what was left (kv_cache_sized_by: measured)"
    )


def _within(old: Any, new: Any, rel: float) -> bool:
    o, n = _num(old), _num(new)
    return o is not None and n is not None and abs(n - o) <= rel * max(abs(o), abs(n))


# figures bootlog computes (boots._derive) rather than reads off a printed line: exact
_DERIVED = frozenset({"kv_bytes_per_token", "kv_margin_tokens", "boot_to_ready_s"})


def print_step(name: str, *values: float) -> float | None:
    """The resolution a fractional capacity figure was printed with: one unit of its last
    printed digit (vLLM prints GiB and concurrency with %.2f, older lines with 4 decimals).  The
    digits are read off the values themselves, never fewer than 2 (0.30 is stored as 0.3: a
    move 0.30 -> 0.40 is 10 units of 0.01, not one of 0.1).  None for counts (tokens, blocks:
    exact) and for figures bootlog derives."""
    if name in _DERIVED or all(float(v).is_integer() for v in values):
        return None
    digits = max(len(repr(float(v)).partition(".")[2].rstrip("0")) for v in values)
    return 10.0 ** -max(2, min(digits, 6))


def _once(vals: list[float]) -> list[float]:
    """[v] for a list holding one value repeated, else the list."""
    return vals[:1] if all(values_equal(v, vals[0]) for v in vals[1:]) else vals


def _sum_max(by_rank: dict | None) -> float | None:
    """Seconds a boot spent on something printed per rank: the slowest rank's total."""
    return max(sum(v) for v in by_rank.values()) if by_rank else None


def _cache_state(fig: dict) -> str | None:
    graph, load = fig.get("compile_graph_s"), fig.get("compile_cache_load_s")
    return "cold" if graph and not load else "warm" if load and not graph else None


def _compile_cache_finding(fa: dict, fb: dict, cause: list[str]) -> Finding | None:
    states = (_cache_state(fa), _cache_state(fb))
    if states == ("cold", "warm"):
        cold, warm = _sum_max(fa["compile_graph_s"]), _sum_max(fb["compile_cache_load_s"])
        mounts = [k for k in cause if k.startswith("mount.")]
        if mounts:  # the cache lived in the container: its mount went or moved
            return finding(
                "compile_cache",
                "metric",
                warm,
                cold,
                "changed",
                f"cold compile {_fmt(cold)} s after a warm boot, cost {_fmt(cold - warm)} s, with "
                f"{_names(mounts)} changed (a compile cache kept in a mount starts empty without it)",
            )
        if cause:
            return finding(
                "compile_cache",
                "metric",
                warm,
                cold,
                "changed",
                f"cold compile {_fmt(cold)} s after a warm boot; the cache key changed with {_names(cause)}",
            )
        return finding(
            "compile_cache",
            "metric",
            warm,
            cold,
            "drift",
            f"compile cache missed: cold compile {_fmt(cold)} s after a warm boot "
            f"(cache load {_fmt(warm)} s) at the same config, cost {_fmt(cold - warm)} s",
        )
    if states == ("warm", "cold"):
        cold, warm = _sum_max(fb["compile_graph_s"]), _sum_max(fa["compile_cache_load_s"])
        return finding(
            "compile_cache",
            "metric",
            cold,
            warm,
            "changed",
            f"compile cache hit: load {_fmt(warm)} s instead of compiling {_fmt(cold)} s",
        )
    return None


def _ranks_note(evs: list[EventRow]) -> str:
    ranks = sorted({e.rank for e in evs if e.rank is not None})
    if ranks:
        return f" on rank{'s' if len(ranks) > 1 else ''} {', '.join(map(str, ranks))}"
    # a worker tag without a TP suffix ("(Worker pid=231)"): the message names the device
    devices = {int(m.group(1) or m.group(2)) for e in evs for m in _DEVICE.finditer(e.message or "")}
    if devices:
        return f" on device{'s' if len(devices) > 1 else ''} " + ", ".join(f"cuda:{d}" for d in sorted(devices))
    return ""


def _event_findings(a: Shown, b: Shown) -> list[Finding]:
    ea, eb = event_counts(a), event_counts(b)
    out = []
    for kind in sorted(set(ea) | set(eb), key=lambda k: (_EVENT_ORDER.get(k, 99), k)):
        na, nb = count_of(ea.get(kind, [])), count_of(eb.get(kind, []))
        note = _ranks_note(ea.get(kind, []))
        if kind == "gdn_hip_fault" and "gdn_hip_fault_cap" in ea:
            note += "; report limit reached, further faults counted silently"
        if kind == "compile_cache_miss" and na:
            # (every boot of vLLM 0.28-0.32 on CPU says this: read and said, not drift)
            reason = ea[kind][0].facts.get("reason")
            note += f"; compiled again: {reason}" if reason else "; compiled again"
        if kind in FAULT_EVENTS and na > nb:
            out.append(finding(kind, "event", nb, na, "drift", f"{na - nb} more {kind} event(s){note}"))
        else:
            verdict = "same" if na == nb else "new" if nb == 0 else "gone" if na == 0 else "changed"
            out.append(finding(kind, "event", nb, na, verdict, "" if verdict == "gone" else note.strip("; ")))
    return out


# ---------------------------------------------------------------------------- check


def _fig_lookup(fig: dict, cfg: dict, name: str, rank: int | None) -> float | None:
    by_rank = fig.get(name)
    if not by_rank:
        return _num(cfg[name]) if name in cfg else None
    if rank in by_rank or None in by_rank:
        return by_rank[rank if rank in by_rank else None][-1]
    return max(v[-1] for v in by_rank.values()) if len(by_rank) == 1 or rank is None else None


def _bound(b: Any, fig: dict, cfg: dict, rank: int | None) -> tuple[float | None, str]:
    """A bound value and how to name it ('cudagraph_estimate_gib 0.07')."""
    n = _num(b)
    if n is not None:
        return n, _fmt(n)
    if not isinstance(b, str):
        return None, str(b)
    v = _fig_lookup(fig, cfg, b, rank)
    return v, f"{b} {_fmt(v)}" if v is not None else b


# op -> (sign, test of value against the bound)
_OPS = {
    "min": ("≥", lambda v, b, tol: v >= b),
    "max": ("≤", lambda v, b, tol: v <= b),
    "eq": ("=", lambda v, b, tol: math.isclose(v, b, rel_tol=1e-9, abs_tol=1e-9)),
    "approx": ("≈", lambda v, b, tol: math.isclose(v, b, rel_tol=tol, abs_tol=1e-9)),
}


def expect_text(ex: Expect, fig: dict, cfg: dict, rank: int | None) -> str:
    """What the plan expects of a figure or count, as text: "≥ 400,700", "≤ cudagraph_estimate_gib 0.07"."""
    parts = []
    for op, (sign, _) in _OPS.items():
        raw = getattr(ex, op)
        if raw is not None:
            tol = f" ±{ex.tol * 100:g}%" if op == "approx" else ""
            parts.append(f"{sign} {_bound(raw, fig, cfg, rank)[1]}{tol}")
    return " and ".join(parts)


def _judge_expect(ex: Expect, value: float, fig: dict, cfg: dict, rank: int | None) -> tuple[bool | None, Any, str]:
    """(ok, bound value used, text). ok None = a bound could not be resolved."""
    ok, used = True, None
    for op, (_sign, test) in _OPS.items():
        raw = getattr(ex, op)
        if raw is None:
            continue
        bv, label = _bound(raw, fig, cfg, rank)
        if bv is None:
            return None, None, f"{op} {label}: not in this boot"
        good = test(value, bv, ex.tol)
        used = bv if used is None or not good else used
        ok = ok and good
    return ok, used, expect_text(ex, fig, cfg, rank)


def meets(ex: Expect, value: float, boot: Shown | dict, rank: int | None = None) -> bool | None:
    """Whether `value` of a figure of `boot` (a show --json document or its record) meets the
    plan's expectation `ex`, as check judges it; None when a bound it names is not in the boot."""
    boot = Shown.of(boot)
    return _judge_expect(ex, value, figures(boot), boot.config, rank)[0]


def _unread(plan_lines: str | None) -> str | None:
    """Why a plan's own patterns were never run on the boot's lines (reread.py), or None."""
    return plan_lines if plan_lines and plan_lines.startswith("source no longer readable") else None


def _check_metric(
    ex: Expect,
    fig: dict,
    cfg: dict,
    user: set[str],
    failed: bool = False,
    plan_lines: str | None = None,
    not_numbers: dict | None = None,
) -> list[Finding]:
    by_rank = fig.get(ex.name)
    unsure = "violation" if ex.hard else "insufficient_history"  # (hard: what cannot be checked is not met)
    if not by_rank:
        unread = _unread(plan_lines)
        bad = (not_numbers or {}).get(ex.name)
        if failed:  # the failure is the finding; figures it never reached are not more drift
            verdict, why = "insufficient_history", "not printed: the boot failed before it"
        elif ex.name in user and bad is not None:
            where = f" line {bad[0]:,}" if bad[0] is not None else " a line"
            verdict, why = (
                unsure,
                (
                    f"[[pattern]] {ex.name} matched{where}, but its value {bad[1]!r} is not a "
                    "number (a figure is read as vLLM prints one: ASCII decimal)"
                ),
            )
        elif ex.name in user and unread:
            verdict, why = unsure, unread
        elif ex.name in user and plan_lines is None and not ex.hard:  # not known whether it was looked for
            verdict = "insufficient_history"
            why = "no value for this user pattern in the stored boot (re-ingest with --plan to apply it)"
        else:
            verdict, why = _fail(ex.hard), "expected by the plan but not printed by this boot"
        return [finding(ex.name, "metric", None, None, verdict, why, expect=expect_text(ex, fig, cfg, None))]
    ranks = by_rank
    if isinstance(ex.rank, int):
        ranks = {ex.rank: by_rank.get(ex.rank, [])}
        if not ranks[ex.rank]:
            return [
                finding(
                    ex.name,
                    "metric",
                    None,
                    None,
                    _fail(ex.hard),
                    f"no value on rank {ex.rank}",
                    ex.rank,
                    expect=expect_text(ex, fig, cfg, ex.rank),
                )
            ]
    rows = []
    for rank in sorted(ranks, key=lambda r: (r is not None, r or 0)):
        value = ranks[rank][-1]  # the last print is the figure the boot went on with
        ok, bound, text = _judge_expect(ex, value, fig, cfg, rank)
        if ok is None:  # a bound naming a figure or config key this boot lacks (or a typo of one)
            rows.append(
                finding(
                    ex.name,
                    "metric",
                    None,
                    value,
                    unsure,
                    text + (" (hard: cannot be checked)" if ex.hard else ""),
                    rank,
                    expect=expect_text(ex, fig, cfg, rank),
                )
            )
        else:
            rows.append(
                finding(
                    ex.name,
                    "metric",
                    bound,
                    value,
                    "same" if ok else _fail(ex.hard),
                    f"plan: {text}" if ok else f"plan expects {text}",
                    rank,
                    expect=text,
                )
            )
    # identical rows on every rank read as one
    first = (rows[0].old, rows[0].new, rows[0].verdict) if rows else None
    if len(rows) > 1 and all((r.old, r.new, r.verdict) == first for r in rows):
        rows = [replace(rows[0], rank=None)]
    return rows


def _missing_why(key: str, deploy: Deploy | None) -> str:
    """Why a plan's config key is not in the boot's config: "silently dropped" only when the run
    line (the deploy's command) passed the flag and the engine does not show it; a run line
    without it did not ask for it; with no run line known, neither is claimed."""
    command = deploy.command if deploy is not None else None
    if not isinstance(command, list) or not command:
        return (
            f"the boot's config does not have {key} (its run line is not known: a boot read from its "
            "container tells a flag the engine dropped from one never passed)"
        )
    flag = re.compile(r"(?<![\w-])--" + re.escape(key).replace("_", "[_-]") + r"(?![\w-])")
    if any(flag.search(str(arg)) for arg in command):
        return f"silently dropped: the run line passes --{key.replace('_', '-')} but the boot's config does not have it"
    return f"not passed: the run line has no --{key.replace('_', '-')} and the boot's config does not have {key}"


def _check_deploy(deploy: Deploy | None, want: dict[str, Any]) -> list[Finding]:
    """[deploy]: the facts the plan pins (the image by digest, an env value) against what the
    container engine said of this boot's run; a pinned image reference is held to its digest."""
    out = []
    for key, value in want.items():
        if deploy is None:
            out.append(
                finding(
                    key,
                    "deploy",
                    value,
                    None,
                    "violation",
                    "no deploy context stored: read the boot from its container (ingest --container, hook)",
                )
            )
            continue
        have = deploy.env.get(key[4:]) if key.startswith("env.") else deploy.get(key)
        if key == "image_digest" and isinstance(value, str) and "@" in value:
            value = value.rsplit("@", 1)[1]  # a whole reference pinned by digest: its digest
        ok = values_equal(have, value) or (
            key == "image"
            and isinstance(value, str)
            and "@" in value
            and value.rsplit("@", 1)[1] == deploy.image_digest
        )
        out.append(
            finding(
                key,
                "deploy",
                value,
                have,
                "same" if ok else "violation",
                "" if ok else f"the plan pins {key} = {value!r}",
            )
        )
    return out


def check(boot: Shown | dict, plan: Plan) -> dict:
    """A boot against its plan: config, figures, events, boot status; `b` is None."""
    boot = Shown.of(boot)
    return result_of(boot.boot.id, None, _check(boot, plan))


def _check(boot: Shown, plan: Plan) -> list[Finding]:
    bd = boot.boot
    cfg = boot.config
    fig = figures(boot)
    out: list[Finding] = []

    for key, want in plan.config.items():
        found, have = _config_value(cfg, key)
        if not found and want is False:  # an absent flag is off: nothing was dropped
            out.append(finding(key, "config", want, None, "same", "absent (off)"))
        elif not found and want is not None:
            out.append(finding(key, "config", want, None, "violation", _missing_why(key, boot.deploy)))
        elif not values_equal(have, want):
            out.append(
                finding(key, "config", want, have, "violation", f"the boot runs {key}={have!r}, the plan says {want!r}")
            )
        else:
            out.append(finding(key, "config", want, have, "same"))

    out.extend(_check_deploy(boot.deploy, plan.deploy))
    hard_boot = bool(plan.boot.get("hard", False))
    want_status, status = plan.boot.get("status"), bd.status
    own = status_finding(boot, want_status or "ready")  # (what the boot says is wrong, plan or not)
    if own is not None:
        out.append(own)
    elif want_status and status != want_status:
        out.append(
            finding(
                "status", "config", want_status, status, _fail(hard_boot), f"plan expects the boot to be {want_status}"
            )
        )
    elif want_status:
        out.append(finding("status", "config", want_status, status, "same"))

    not_numbers = boot.extra.get("plan_not_numbers")  # (reread.py: the boot's lines read again)
    for ex in [*plan.metrics.values(), *plan.boot_metrics.values()]:
        out.extend(
            _check_metric(
                ex,
                fig,
                cfg,
                plan.user_names,
                failed=status == "failed",
                plan_lines=boot.extra.get("plan_lines"),
                not_numbers=not_numbers,
            )
        )

    cache = plan.boot.get("compile_cache")
    if cache in ("warm", "cold"):
        warm = bool(fig.get("compile_cache_load_s")) and not fig.get("compile_graph_s")
        state = "warm" if warm else "cold" if fig.get("compile_graph_s") else None
        if state is None:
            out.append(
                finding(
                    "compile_cache",
                    "metric",
                    cache,
                    None,
                    "insufficient_history",
                    "the boot printed no compile or cache-load line",
                )
            )
        elif state == cache:
            out.append(finding("compile_cache", "metric", cache, state, "same"))
        else:
            secs = _sum_max(fig.get("compile_graph_s")) if state == "cold" else None
            why = f"plan expects a {cache} compile cache"
            if secs is not None:
                why += f"; compiled for {_fmt(secs)} s"
            out.append(finding("compile_cache", "metric", cache, state, _fail(hard_boot), why))

    evs = event_counts(boot)
    own_kinds = {up.event for up in plan.patterns if up.event}
    unread = _unread(boot.extra.get("plan_lines"))
    for kind, ex in plan.events.items():
        got = evs.get(kind, [])
        if kind in own_kinds and not got and unread:
            # never looked for: a count of 0 would be a pass nobody earned
            out.append(
                finding(
                    kind,
                    "event",
                    None,
                    None,
                    "violation" if ex.hard else "insufficient_history",
                    unread,
                    expect=expect_text(ex, fig, cfg, None),
                )
            )
            continue
        if not got:
            # a plan may name a built-in warning by what it warns of (a [[pattern]] event of
            # the same name on a boot stored without --plan is that warning)
            got = [e for e in evs.get("warning", []) if e.facts.get("what") == kind]
        n = float(count_of(got))
        ok, bound, text = _judge_expect(ex, n, fig, cfg, None)
        note = _ranks_note(got)
        if kind == "gdn_hip_fault" and "gdn_hip_fault_cap" in evs:
            limits = [e.facts.get("limit") for e in evs["gdn_hip_fault_cap"]]
            lim = next((x for x in limits if x is not None), None)
            note += (
                f"; report limit ({lim}) reached" if lim is not None else "; report limit reached"
            ) + ", further faults counted silently"
        out.append(
            finding(
                kind,
                "event",
                bound,
                int(n),
                "same" if ok else _fail(ex.hard),
                f"plan: {text}" if ok else f"plan expects count {text}; {int(n)} seen{note}",
                expect=text if ok is not None else expect_text(ex, fig, cfg, None),
            )
        )
    _say_margin(out, boot)
    return out
