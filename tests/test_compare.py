"""diff / check / exit codes / rendering on show dicts built from the operator's measured numbers
(seeds: frank-primary shapes D, E, F, G, the 5 x 262144 night and the compile-cache proof)."""

from __future__ import annotations

from bootlog.judge import compare, verdict
from bootlog.render import render
from bootlog.judge.plan import Expect, Plan

CFG_D = {
    "max_model_len": 200704,
    "max_num_seqs": 3,
    "kv_cache_dtype": "fp8",
    "kv_cache_memory_bytes": 3146129408,
    "max_num_batched_tokens": 1024,
    "enable_prefix_caching": True,
    "tensor_parallel_size": 2,
}
CFG_E = {**CFG_D, "expert_precise_memory": True}
CONTRACT_KEYS = {"key", "section", "rank", "old", "new", "delta", "pct", "verdict", "why"}


def show(id, config, metrics, events=(), status="ready", version="0.22.69", failure=None, failure_message=None):
    rows = []
    for i, (name, value, rank) in enumerate(metrics):
        rows.append({"name": name, "value": value, "unit": "", "rank": rank, "line": 100 + i})
    evs = [
        {"kind": k, "rank": r, "line": 500 + i, "ts": None, "message": "", "detail": d}
        for i, (k, r, d) in enumerate(events)
    ]
    return {
        "boot": {
            "id": id,
            "status": status,
            "failure": failure,
            "failure_message": failure_message,
            "vllm_version": version,
            "engine": "v1",
            "model": "/models/qfn",
        },
        "metrics": rows,
        "config": dict(config),
        "events": evs,
        "runtime": {},
    }


def shape_d(id=7, **kw):
    # MEASURED LIVE 2026-10-02: GPU KV cache size: 398,658 tokens, 1.99x at 200,704
    return show(
        id,
        kw.pop("config", CFG_D),
        [
            ("model_load_gib", 86.4, 0),
            ("model_load_gib", 86.4, 1),
            ("kv_cache_tokens", 398658, None),
            ("max_concurrency_request_tokens", 200704, None),
            ("max_concurrency", 1.99, None),
            ("graph_capture_gib", 0.31, 0),
            ("graph_capture_gib", 0.17, 1),
            ("init_engine_s", 41.13, None),
        ],
        **kw,
    )


def by_key(result, key, rank="any"):
    return [f for f in result["findings"] if f["key"] == key and (rank == "any" or f["rank"] == rank)]


def test_d_to_e_only_precise_memory_changed_and_kv_unchanged():
    r = compare.diff(shape_d(8, config=CFG_E), shape_d(7))
    assert r["a"] == 8 and r["b"] == 7
    changed = [f for f in r["findings"] if f["section"] == "config"]
    assert [(f["key"], f["old"], f["new"], f["verdict"]) for f in changed] == [
        ("expert_precise_memory", None, True, "changed")
    ]
    kv = by_key(r, "kv_cache_tokens")
    assert [(f["old"], f["new"], f["verdict"]) for f in kv] == [(398658, 398658, "same")]
    assert r["summary"]["drift"] == 0 and r["summary"]["changed_config"] == 1
    assert verdict.exit_code(r) == 0
    for f in r["findings"]:
        assert set(f) == CONTRACT_KEYS
    assert set(r) == {"a", "b", "findings", "summary"}
    assert set(r["summary"]) == {"drift", "violations", "changed_config", "unchanged"}


def test_text_rendering_matches_the_contract_example():
    r = compare.diff(shape_d(8, config=CFG_E), shape_d(7))
    text = render.render_text(r)
    lines = text.splitlines()
    assert lines[0] == "bootlog diff 7 → 8   (legend: ~ changed  ! drift  ✗ violation  + new  - gone)"
    assert lines[1:3] == ["config", "  ~ expert_precise_memory: None → True"]
    assert lines[3] == "metrics"
    assert any(line.split() == ["=", "kv_cache_tokens", "398,658", "→", "398,658"] for line in lines)
    n_same = r["summary"]["unchanged"]
    assert lines[-1] == f"summary: 0 drift, 0 violations, 1 config change, {n_same} unchanged"


def test_capacity_move_at_unchanged_config_is_drift():
    # shape G's KV 401,408 against shape D's 398,658 with nothing in the config saying why
    a = shape_d(9)
    a["metrics"][2]["value"] = 401408
    r = compare.diff(a, shape_d(8))
    (kv,) = by_key(r, "kv_cache_tokens")
    assert (kv["old"], kv["new"], kv["delta"], kv["pct"], kv["verdict"]) == (398658, 401408, 2750, 0.69, "drift")
    assert "unchanged config" in kv["why"]
    assert verdict.exit_code(r) == 3
    assert "! kv_cache_tokens" in render.render_text(r)


def test_capacity_move_with_config_change_names_the_candidates():
    cfg = {**CFG_D, "kv_cache_memory_bytes": 3166500000}
    a = shape_d(9, config=cfg)
    a["metrics"][2]["value"] = 401408
    r = compare.diff(a, shape_d(8))
    (kv,) = by_key(r, "kv_cache_tokens")
    assert kv["verdict"] == "changed" and "kv_cache_memory_bytes" in kv["why"]
    assert verdict.exit_code(r) == 0
    # cause before effect: the config row comes first
    assert r["findings"][0]["key"] == "kv_cache_memory_bytes"


def test_version_change_is_said_first_and_explains_capacity():
    a = shape_d(9, version="0.22.70")
    a["metrics"][2]["value"] = 401408
    r = compare.diff(a, shape_d(8))
    assert r["findings"][0]["key"] == "vllm_version"
    assert r["findings"][0]["old"] == "0.22.69" and r["findings"][0]["new"] == "0.22.70"
    assert by_key(r, "kv_cache_tokens")[0]["verdict"] == "changed"
    assert verdict.exit_code(r) == 0


def test_graph_capture_per_rank_when_ranks_differ():
    # shape E captured 0.31 GiB (TP0) / 0.17 GiB (TP1); shape F captured -0.06 GiB on both
    cfg_f = {**CFG_E, "max_num_batched_tokens": 2048}
    f = shape_d(9, config=cfg_f)
    f["metrics"][5]["value"] = -0.06
    f["metrics"][6]["value"] = -0.06
    r = compare.diff(f, shape_d(8, config=CFG_E))
    rows = by_key(r, "graph_capture_gib")
    assert [(x["rank"], x["old"], x["new"], x["verdict"]) for x in rows] == [
        (0, 0.31, -0.06, "changed"),
        (1, 0.17, -0.06, "changed"),
    ]
    assert rows[0]["delta"] == -0.37
    # identical per-rank values collapse to one row
    assert [x["rank"] for x in by_key(r, "model_load_gib")] == [None]


def test_timings_need_three_boots_of_history():
    a, b = shape_d(9), shape_d(8)
    a["metrics"][7]["value"] = 44.0
    r = compare.diff(a, b, history=[b])
    (init,) = by_key(r, "init_engine_s")
    assert init["verdict"] == "insufficient_history" and "need 3" in init["why"]
    assert verdict.exit_code(r) == 0


def _with_init(id, secs):
    s = shape_d(id)
    s["metrics"][7]["value"] = secs
    return s


def test_timings_against_history_median_and_mad():
    hist = [_with_init(i, v) for i, v in enumerate([41.13, 40.2, 42.5, 41.9], 1)]
    near = compare.diff(_with_init(9, 45.0), hist[-1], history=hist)
    assert by_key(near, "init_engine_s")[0]["verdict"] == "changed"  # moved, within ±20%
    slow = compare.diff(_with_init(9, 60.0), hist[-1], history=hist)
    (row,) = by_key(slow, "init_engine_s")
    assert row["verdict"] == "drift" and "slower" in row["why"]
    assert verdict.exit_code(slow) == 3
    fast = compare.diff(_with_init(9, 20.0), hist[-1], history=hist)
    assert by_key(fast, "init_engine_s")[0]["verdict"] == "changed"  # faster is not a regression
    assert verdict.exit_code(fast) == 0


def test_judge_timing_tolerance_never_under_20_percent():
    assert compare.judge_timing(119.0, [100.0] * 5)[0] == "same"
    assert compare.judge_timing(121.0, [100.0] * 5)[0] == "drift"
    # a noisy history widens the band beyond 20%
    assert compare.judge_timing(150.0, [60.0, 100.0, 140.0, 100.0, 100.0, 70.0, 130.0])[0] == "same"


def _compile(id, *, cold: bool):
    # PROVEN LIVE 2026-10-02: cold 179.24 s compile / 188.26 s torch.compile,
    # warm 2.143 s cache load / 3.97 s torch.compile
    rows = [("kv_cache_tokens", 398658, None)]
    rows += (
        [("compile_graph_s", 179.24, 0), ("torch_compile_s", 188.26, 0)]
        if cold
        else [("compile_cache_load_s", 2.143, 0), ("torch_compile_s", 3.97, 0)]
    )
    return show(id, CFG_E, rows)


def test_cold_after_warm_is_compile_cache_missed_drift():
    r = compare.diff(_compile(9, cold=True), _compile(8, cold=False))
    (row,) = by_key(r, "compile_cache")
    assert (row["old"], row["new"], row["verdict"]) == (2.143, 179.24, "drift")
    assert "compile cache missed" in row["why"] and "177.097" in row["why"]
    assert verdict.exit_code(r) == 3


def test_warm_after_cold_is_a_hit_and_cold_after_config_change_is_expected():
    r = compare.diff(_compile(9, cold=False), _compile(8, cold=True))
    assert by_key(r, "compile_cache")[0]["verdict"] == "changed"
    assert verdict.exit_code(r) == 0
    a = _compile(9, cold=True)
    a["config"]["max_num_batched_tokens"] = 2048  # the compile range is part of the cache key
    r = compare.diff(a, _compile(8, cold=False))
    row = by_key(r, "compile_cache")[0]
    assert row["verdict"] == "changed" and "max_num_batched_tokens" in row["why"]


def test_runtime_oom_on_rank_1_is_event_drift():
    # 5 x 262144: passed every boot gate, then a real request killed Worker_TP1
    cfg = {**CFG_D, "max_model_len": 262144, "max_num_seqs": 5, "kv_cache_memory_bytes": 10388766720}
    base = show(8, cfg, [("kv_cache_tokens", 1350182, None), ("max_concurrency", 5.15, None)])
    died = show(
        9,
        cfg,
        [("kv_cache_tokens", 1350182, None), ("max_concurrency", 5.15, None)],
        events=[("oom", 1, {"requested_mib": 50.0, "free_mib": 0.0})],
    )
    r = compare.diff(died, base)
    (oom,) = by_key(r, "oom")
    assert (oom["old"], oom["new"], oom["verdict"]) == (0, 1, "drift") and "rank 1" in oom["why"]


def test_failed_boot_is_a_violation():
    failed = show(
        9,
        {**CFG_G_BASE, "gpu_memory_utilization": 1.0},
        [],
        status="failed",
        failure="value_error",
        failure_message="ValueError: Free memory on device cuda:0 (31.29/31.86 GiB) on startup "
        "is less than desired GPU memory utilization (1.0, 31.86 GiB).",
        events=[
            ("value_error", 0, {"free_gib": 31.29, "total_gib": 31.86}),
            ("value_error", 1, {"free_gib": 31.29, "total_gib": 31.86}),
        ],
    )
    r = compare.diff(failed, shape_d(8, config=CFG_G_BASE))
    (status,) = by_key(r, "status")
    assert status["verdict"] == "violation" and "value_error" in status["why"]
    (ve,) = by_key(r, "value_error")
    assert ve["new"] == 2 and "ranks 0, 1" in ve["why"]
    assert by_key(r, "kv_cache_tokens")[0]["verdict"] == "gone"
    assert verdict.exit_code(r) == 4


CFG_G_BASE = {
    **CFG_E,
    "max_num_batched_tokens": 2048,
    "gpu_memory_utilization": 0.982,
    "kv_cache_memory_bytes": 3166500000,
}


def test_same_boot_twice_is_all_same():
    a = shape_d(8, events=[("warning", None, {"message": "generation config"})])
    r = compare.diff(a, shape_d(7, events=[("warning", None, {"message": "generation config"})]))
    assert {f["verdict"] for f in r["findings"]} == {"same"}
    assert verdict.exit_code(r) == 0


# ---------------------------------------------------------------------------- check


def frank_plan(**boot) -> Plan:
    return Plan(
        config={
            "max_model_len": 200704,
            "max_num_seqs": 3,
            "kv_cache_dtype": "fp8",
            "expert_precise_memory": 1,
        },  # env files say 1 where Python prints True
        metrics={
            "kv_cache_tokens": Expect("kv_cache_tokens", min=400700, hard=True),
            "graph_capture_gib": Expect("graph_capture_gib", max="cudagraph_estimate_gib"),
        },
        events={"gdn_hip_fault": Expect("gdn_hip_fault", max=0), "oom": Expect("oom", max=0, hard=True)},
        boot=boot or {"status": "ready"},
    )


def shape_g(id=12, kv=401408, capture=(-0.06, -0.06), events=(), config=None):
    return show(
        id,
        config or CFG_G_BASE,
        [
            ("kv_cache_tokens", kv, None),
            ("max_concurrency", 2.0, None),
            ("cudagraph_estimate_gib", 0.07, 0),
            ("cudagraph_estimate_gib", 0.07, 1),
            ("graph_capture_gib", capture[0], 0),
            ("graph_capture_gib", capture[1], 1),
        ],
        events=events,
    )


def test_check_shape_g_meets_the_plan():
    r = compare.check(shape_g(), frank_plan())
    assert r["b"] is None and r["a"] == 12
    assert verdict.exit_code(r) == 0, r
    (kv,) = by_key(r, "kv_cache_tokens")
    assert (kv["old"], kv["new"], kv["verdict"]) == (400700, 401408, "same")
    (gc,) = by_key(r, "graph_capture_gib")  # both ranks -0.06 <= 0.07: one row
    assert gc["verdict"] == "same" and gc["new"] == -0.06 and "cudagraph_estimate_gib" in gc["why"]


def test_check_kv_below_the_ask_is_a_hard_violation():
    r = compare.check(shape_g(kv=398658), frank_plan())
    (kv,) = by_key(r, "kv_cache_tokens")
    assert kv["verdict"] == "violation" and kv["delta"] == 398658 - 400700
    assert verdict.exit_code(r) == 4


def test_check_graph_capture_over_its_charge_on_one_rank_is_drift():
    r = compare.check(shape_g(capture=(0.31, -0.06)), frank_plan())
    rows = by_key(r, "graph_capture_gib")
    assert [(x["rank"], x["verdict"]) for x in rows] == [(0, "drift"), (1, "same")]
    assert verdict.exit_code(r) == 3


def test_check_silently_dropped_flag():
    # "silently dropped" is said only when the run line passed the flag (the deploy's command);
    # a run line without it did not ask for it, and without a run line neither is claimed
    cfg = {k: v for k, v in CFG_G_BASE.items() if k != "expert_precise_memory"}
    boot = shape_g(config=cfg)
    for command, says in (
        (["vllm", "serve", "/models/q", "--expert-precise-memory", "--max-num-seqs", "3"], "silently dropped"),
        (["/bin/sh", "-c", "exec vllm serve /models/q --expert-precise-memory"], "silently dropped"),
        (["vllm", "serve", "/models/q", "--expert-precise-memory-x", "--max-num-seqs", "3"], "not passed"),
        (["vllm", "serve", "/models/q", "--max-num-seqs", "3"], "not passed"),
        (None, "its run line is not known"),
    ):
        boot["deploy"] = {"command": command} if command else None
        r = compare.check(boot, frank_plan())
        (row,) = by_key(r, "expert_precise_memory")
        assert row["verdict"] == "violation" and row["why"].startswith(says) or says in row["why"], (
            command,
            row["why"],
        )
        assert ("silently dropped" in row["why"]) == (says == "silently dropped")
        assert verdict.exit_code(r) == 4


def test_check_gdn_burst_reports_the_faults_and_the_cap():
    faults = [
        ("gdn_hip_fault", 0 if i < 16 else 1, {"slot": 42, "head": 3 if i < 16 else 8, "fault_no": i + 1})
        for i in range(32)
    ]
    r = compare.check(shape_g(events=faults + [("gdn_hip_fault_cap", 1, {"limit": 32})]), frank_plan())
    (row,) = by_key(r, "gdn_hip_fault")
    assert (row["old"], row["new"], row["verdict"]) == (0, 32, "drift")
    assert "report limit (32) reached" in row["why"] and "ranks 0, 1" in row["why"]
    # a plan that bounds the faults softly cannot make them drift: the engine serves from
    # corrupted state, a failed deploy (verdict.py), whatever the plan says
    (status,) = by_key(r, "status")
    assert status["verdict"] == "violation" and "32 gdn_hip state fault(s)" in status["why"]
    assert verdict.exit_code(r) == 4


def test_check_failed_boot_and_missing_user_figure():
    plan = frank_plan()
    from bootlog.parse.userpatterns import UserPattern

    plan.patterns.append(UserPattern(name="expert_arena_gib", regex=None, source="", unit="GiB"))
    plan.metrics["expert_arena_gib"] = Expect("expert_arena_gib", min=17.0)
    r = compare.check(shape_g(), plan)
    (arena,) = by_key(r, "expert_arena_gib")
    assert arena["verdict"] == "insufficient_history"  # no raw lines stored: not a violation
    assert verdict.exit_code(r) == 0
    plan.metrics["expert_arena_gib"].hard = True
    assert verdict.exit_code(compare.check(shape_g(), plan)) == 4

    failed = show(
        13,
        CFG_G_BASE,
        [],
        status="failed",
        failure="value_error",
        failure_message="ValueError: Free memory on device cuda:1 (31.29/31.86 GiB)",
    )
    r = compare.check(failed, frank_plan())
    assert by_key(r, "status")[0]["verdict"] == "violation"
    assert verdict.exit_code(r) == 4


def test_check_compile_cache_expectation():
    plan = frank_plan(status="ready", compile_cache="warm")
    ok = compare.check(_compile(9, cold=False), plan)
    assert by_key(ok, "compile_cache")[0]["verdict"] == "same"
    cold = compare.check(_compile(9, cold=True), plan)
    row = by_key(cold, "compile_cache")[0]
    assert row["verdict"] == "drift" and "179.24" in row["why"]


def test_diff_with_plan_adds_the_plans_verdict_on_a():
    a = shape_g(13, kv=398658)
    r = compare.diff(a, shape_g(12), plan=frank_plan())
    verdicts = [(f["key"], f["verdict"]) for f in r["findings"] if f["key"] == "kv_cache_tokens"]
    assert ("kv_cache_tokens", "drift") in verdicts and ("kv_cache_tokens", "violation") in verdicts
    assert verdict.exit_code(r) == 4


def test_markdown_table():
    a = shape_d(9)
    a["metrics"][2]["value"] = 401408
    md = render.render_markdown(compare.diff(a, shape_d(8)))
    assert md.startswith("### bootlog diff 8 → 9")
    assert "| ! | metric | `kv_cache_tokens` |  | 398,658 | 401,408 | +2,750 | +0.69% |" in md
    # a move too small for two decimals keeps its sign
    a["metrics"][2]["value"] = 398657
    assert "| -1 | -<0.01% |" in render.render_markdown(compare.diff(a, shape_d(8)))
    # nothing moved: no empty table, the summary line alone
    same = render.render_markdown(compare.diff(shape_d(9), shape_d(8)))
    assert "|" not in same and same.splitlines()[0] == "### bootlog diff 8 → 9"
    assert same.splitlines()[-1].startswith("summary: 0 drift")


def test_object_addresses_are_not_config_changes():
    # corpus 053: every start prints dispatch_function with a fresh address
    a = shape_d(9, config={**CFG_D, "dispatch_function": "<function ServeSubcommand.cmd at 0x14840cdac400>"})
    b = shape_d(8, config={**CFG_D, "dispatch_function": "<function ServeSubcommand.cmd at 0x150b7a614400>"})
    r = compare.diff(a, b)
    assert [f for f in r["findings"] if f["section"] == "config"] == []


def test_a_port_change_does_not_explain_a_capacity_move():
    a = shape_d(9, config={**CFG_D, "port": 7773})
    a["metrics"][2]["value"] = 401408
    r = compare.diff(a, shape_d(8, config={**CFG_D, "port": 7770}))
    assert [(f["key"], f["verdict"]) for f in r["findings"] if f["section"] == "config"] == [("port", "changed")]
    (kv,) = by_key(r, "kv_cache_tokens")
    assert kv["verdict"] == "drift" and "port" in kv["why"]
    assert verdict.exit_code(r) == 3


def test_check_eq_approx_and_single_rank_bounds():
    plan = Plan(
        metrics={
            "max_concurrency_request_tokens": Expect("max_concurrency_request_tokens", eq="max_model_len"),
            "max_concurrency": Expect("max_concurrency", approx=2.0, tol=0.001),
            "graph_capture_gib": Expect("graph_capture_gib", max=0.0, rank=1, hard=True),
        }
    )
    g = shape_g()
    g["metrics"].append(
        {"name": "max_concurrency_request_tokens", "value": 200704, "unit": "tokens", "rank": None, "line": 99}
    )
    r = compare.check(g, plan)
    (mcrt,) = by_key(r, "max_concurrency_request_tokens")
    assert mcrt["verdict"] == "same" and "max_model_len 200,704" in mcrt["why"]
    assert by_key(r, "max_concurrency")[0]["verdict"] == "same"
    (gc,) = by_key(r, "graph_capture_gib")
    assert gc["rank"] == 1 and gc["verdict"] == "same"
    # 1.99x is not within 0.1% of 2.0; rank 1 capturing +0.17 GiB breaks a hard max of 0
    r = compare.check(shape_d(7), plan)
    assert by_key(r, "max_concurrency")[0]["verdict"] == "drift"
    (gc,) = by_key(r, "graph_capture_gib")
    assert (gc["rank"], gc["new"], gc["verdict"]) == (1, 0.17, "violation")
    assert verdict.exit_code(r) == 4


def test_legend_mentions_history_only_when_needed():
    a, b = shape_d(9), shape_d(8)
    a["metrics"][7]["value"] = 44.0
    head = render.render_text(compare.diff(a, b)).splitlines()[0]
    assert head.endswith("- gone  ? too little history)")


def test_another_host_explains_a_capacity_move_and_absent_off_flag_is_off():
    a, b = shape_d(9), shape_d(8)
    a["boot"]["host"], b["boot"]["host"] = "dankserver", "frankserver"
    a["metrics"][2]["value"] = 401408
    r = compare.diff(a, b)
    assert r["findings"][0]["key"] == "host"
    assert by_key(r, "kv_cache_tokens")[0]["verdict"] == "changed"
    r = compare.check(shape_g(), Plan(config={"enforce_eager": False, "expert_prefetch": False}))
    assert verdict.exit_code(r) == 0  # neither key printed: both off, nothing dropped


def test_reprinted_exceptions_count_once():
    msg = "torch.OutOfMemoryError: HIP out of memory. Tried to allocate 50.00 MiB. GPU 1 has a total capacity of 31.86 GiB of which 0 bytes is free."
    boot = shape_d(9)
    boot["events"] = [
        {"kind": "oom", "rank": 1, "line": 319, "message": msg, "detail": {"requested_mib": 50.0}},
        {"kind": "oom", "rank": 1, "line": 330, "message": msg, "detail": {"requested_mib": 50.0}},
        {
            "kind": "oom",
            "rank": None,
            "line": 345,
            "detail": {"requested_mib": 50.0},
            "message": "RuntimeError: Worker failed with error 'HIP out of memory. Tried to allocate 50.00 MiB.'",
        },
        {
            "kind": "value_error",
            "rank": None,
            "line": 37,
            "detail": {},
            "message": "ValueError: Free memory on device cuda:0 (31.29/31.86 GiB)",
        },
        {
            "kind": "value_error",
            "rank": None,
            "line": 55,
            "detail": {},
            "message": "ValueError: Free memory on device cuda:1 (31.29/31.86 GiB)",
        },
    ]
    counts = verdict.event_counts(boot)
    assert len(counts["oom"]) == 1 and len(counts["value_error"]) == 2


# ---------------------------------------------------------------------------- properties

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from bootlog.judge.compare import CAPACITY_METRICS, TIMING_METRICS  # noqa: E402
from bootlog.records import EVENT_KINDS  # noqa: E402

_metric = st.tuples(
    st.sampled_from(CAPACITY_METRICS + TIMING_METRICS),
    st.floats(-1e7, 1e7, allow_nan=False, allow_infinity=False),
    st.sampled_from([None, 0, 1, 2]),
)
_event = st.tuples(st.sampled_from(EVENT_KINDS), st.sampled_from([None, 0, 1]), st.fixed_dictionaries({}))
_config = st.dictionaries(
    st.sampled_from(["max_model_len", "max_num_seqs", "kv_cache_dtype", "port", "enable_prefix_caching"]),
    st.one_of(st.integers(0, 10**6), st.booleans(), st.sampled_from(["fp8", "auto"])),
)


@settings(max_examples=150, deadline=None)
@given(
    st.lists(_metric, max_size=25),
    st.lists(_event, max_size=8),
    _config,
    st.sampled_from(["ready", "failed", "incomplete"]),
)
def test_a_boot_against_itself_never_drifts(metrics, events, config, status):
    a = show(2, config, metrics, events=events, status=status)
    b = show(1, config, metrics, events=events, status=status)
    r = compare.diff(a, b)
    # nothing moved: only what the boot says of itself (verdict.boot_problem: a failed start,
    # faults while serving) is a finding, on its status row
    from bootlog.judge.verdict import boot_problem

    own = boot_problem(a)
    assert [f["key"] for f in r["findings"] if f["verdict"] != "same"] == (["status"] if own else [])
    assert verdict.exit_code(r) == (own[0] if own else 0)
    assert (status == "failed") <= (own is not None and own[0] == 4)
    for f in r["findings"]:
        assert set(f) == CONTRACT_KEYS
    render.render_text(r)
    render.render_markdown(r)


@settings(max_examples=150, deadline=None)
@given(st.lists(_metric, max_size=25), st.lists(_metric, max_size=25), _config, _config)
def test_exit_code_follows_the_summary(ma, mb, ca, cb):
    r = compare.diff(show(2, ca, ma), show(1, cb, mb))
    s = r["summary"]
    assert s["drift"] == sum(f["verdict"] == "drift" for f in r["findings"])
    assert verdict.exit_code(r) == (4 if s["violations"] else 3 if s["drift"] else 0)
    # a capacity figure only drifts when nothing that can size it changed (a key bootlog does
    # not know may size anything)
    moved = {k for k in set(ca) | set(cb) if k != "port" and not compare.values_equal(ca.get(k), cb.get(k))}
    for f in r["findings"]:
        if f["verdict"] == "drift" and f["key"] in CAPACITY_METRICS:
            can = compare.SIZED_BY.get(f["key"])
            assert not [k for k in moved if can is None or k in can or k not in compare._SIZING]


def test_tp1_against_tp2_compares_every_rank_and_names_sizing_keys_first():
    b = show(1, {**CFG_D, "tensor_parallel_size": 1, "port": 8000, "dtype": "bfloat16"}, [("model_load_s", 5.04, None)])
    a = show(
        2,
        {**CFG_D, "tensor_parallel_size": 2, "port": 8001, "dtype": "float16"},
        [("model_load_s", 98.94, 0), ("model_load_s", 99.0, 1)],
    )
    r = compare.diff(a, b)
    assert [(f["rank"], f["old"], f["new"]) for f in by_key(r, "model_load_s")] == [(0, 5.04, 98.94), (1, 5.04, 99.0)]
    assert [f["key"] for f in r["findings"] if f["section"] == "config"] == ["tensor_parallel_size", "dtype", "port"]


def test_machine_and_bind_address_are_not_confused():
    a = shape_d(9, config={**CFG_D, "host": "0.0.0.0"})
    b = shape_d(8, config={**CFG_D, "host": "0.0.0.0"})
    a["boot"]["host"], b["boot"]["host"] = "dankserver", "frankserver"
    a["metrics"][2]["value"] = 401408
    r = compare.diff(a, b)
    assert [(f["key"], f["old"], f["new"]) for f in r["findings"] if f["section"] == "config"] == [
        ("boot.host", "frankserver", "dankserver")
    ]
    assert "boot.host" in by_key(r, "kv_cache_tokens")[0]["why"]


def test_a_fault_run_on_one_line_counts_every_fault():
    # the seed notes write the burst as "fault #1-23" / "fault #24-46": 46 faults, not 2
    from bootlog.parse import patterns

    lines = [
        "[gdn_hip] ERROR gdn_decode_r: state out of ssm-cache range: max|S|=0 with non-finite values "
        "(slot=42 head=3 limit=3.40282e+38) fault #1-23",
        "[gdn_hip] ERROR gdn_decode_r: state out of ssm-cache range: max|S|=0 with non-finite values "
        "(slot=42 head=8 limit=3.40282e+38) fault #24-46",
    ]
    events = [
        {"kind": "gdn_hip_fault", "rank": None, "line": i, "message": l, "detail": patterns.match(l)[0].detail}
        for i, l in enumerate(lines, 1)
    ]
    assert verdict.count_of(verdict.event_counts({"events": events})["gdn_hip_fault"]) == 46
    quiet = {"boot": {"id": 1, "status": "ready"}, "metrics": [], "config": {}, "events": []}
    noisy = dict(quiet, boot={"id": 2, "status": "ready"}, events=events)
    row = next(f for f in compare.diff(noisy, quiet)["findings"] if f["key"] == "gdn_hip_fault")
    assert (row["old"], row["new"], row["verdict"]) == (0, 46, "drift")


def test_a_nan_config_value_is_no_change_and_hides_no_drift():
    # a non-default arg printed as nan ('cpu_offload_gb': nan) on both boots: nothing changed,
    # so a capacity move is still drift (it was "explained by a change of cpu_offload_gb")
    a = show(1, {**CFG_D, "cpu_offload_gb": "nan"}, [("kv_cache_tokens", 398658, None)])
    b = show(2, {**CFG_D, "cpu_offload_gb": float("nan")}, [("kv_cache_tokens", 390000, None)])
    r = compare.diff(a, b)
    assert not [f for f in r["findings"] if f["section"] == "config"]
    assert [f["verdict"] for f in r["findings"] if f["key"] == "kv_cache_tokens"] == ["drift"]
    assert verdict.exit_code(r) == 3


def test_json_output_has_no_nan_or_infinity():
    import json

    from bootlog.cli.cli_common import to_json

    b = show(2, {**CFG_D, "cpu_offload_gb": "inf"}, [("kv_cache_tokens", 390000, None)])
    a = show(1, {**CFG_D, "cpu_offload_gb": "1"}, [("kv_cache_tokens", 398658, None)])
    text = to_json(compare.diff(a, b))
    assert "NaN" not in text and "Infinity" not in text
    got = json.loads(text)  # (strict parsers reject NaN; Python's accepts it, so check the text too)
    f = next(f for f in got["findings"] if f["key"] == "cpu_offload_gb")
    assert f["delta"] is None and f["pct"] is None
    assert to_json({"v": float("nan"), "w": [float("-inf"), 1.5]}) == to_json({"v": None, "w": [None, 1.5]})


def test_a_figure_printed_twice_with_one_value_pairs_with_a_single_print():
    # v0.8-v0.10 TP2: the engine core prints "GPU KV cache size" once per worker, same value
    # (fixture 070); a TP1 boot prints it once: one unchanged figure, not "same" plus "new"
    a = show(2, CFG_D, [("kv_cache_tokens", 450192, None), ("kv_cache_tokens", 450192, None)])
    b = show(1, CFG_D, [("kv_cache_tokens", 450192, None)])
    r = compare.diff(a, b)
    assert [(f["verdict"], f["old"], f["new"]) for f in r["findings"] if f["key"] == "kv_cache_tokens"] == [
        ("same", 450192, 450192)
    ]
    # two different values (two KV groups) still pair in order
    a = show(2, CFG_D, [("kv_cache_tokens", 69904, None), ("kv_cache_tokens", 69920, None)])
    r = compare.diff(a, b)
    assert [f["verdict"] for f in r["findings"] if f["key"] == "kv_cache_tokens"] == ["drift", "new"]


def test_explained_by_names_only_keys_that_size_the_figure_on_the_seeds(tmp_path):
    import json

    # shape D (seed 01) -> shape G (seed 04): KV pool bytes, MNBT, compile settings, prefix
    # caching and the fork's expert_precise_memory all changed
    from click.testing import CliRunner

    from bootlog.cli import cli
    from paths import FIXTURES

    db = str(tmp_path / "s.db")
    for name in ("01-shape-d-fp8-200704x3", "04-shape-g-kv-400700-no-prefix-cache"):
        CliRunner().invoke(cli, ["--db", db, "ingest", str(FIXTURES / "seed" / f"{name}.log")])
    r = json.loads(CliRunner().invoke(cli, ["--db", db, "diff", "last", "prev", "--json"]).stdout)
    why = {(f["key"], f["rank"]): f["why"] for f in r["findings"] if f["section"] == "metric"}
    assert why[("kv_cache_tokens", None)].startswith("explained by a change of kv_cache_memory_bytes, ")
    assert "expert_precise_memory" not in why[("kv_bytes_per_token", None)]  # not known to size it
    # graph capture is sized by the batch and compile settings, not by the KV pool's bytes
    assert why[("graph_capture_gib", 0)] == "explained by a change of max_num_batched_tokens, compilation_config"


def test_a_move_only_an_unknown_key_could_explain_says_so():
    cfg = {**CFG_D, "frank_expert_arena_mb": 512}
    a = shape_d(9, config={**CFG_D, "frank_expert_arena_mb": 256})
    a["metrics"][2]["value"] = 401408
    (kv,) = by_key(compare.diff(a, shape_d(8, config=cfg)), "kv_cache_tokens")
    assert kv["verdict"] == "changed"
    assert kv["why"] == "possibly explained by a change of frank_expert_arena_mb (not known to size kv_cache_tokens)"
    a = shape_d(9, config={**CFG_D, "port": 8001})
    a["metrics"][2]["value"] = 401408
    (kv,) = by_key(compare.diff(a, shape_d(8)), "kv_cache_tokens")
    assert kv["verdict"] == "drift" and kv["why"].startswith("not explained by anything the log shows")


def test_a_capacity_move_by_its_last_printed_digit_is_not_drift():
    """Shape F -> G: graph capture -0.06 -> -0.05 / -0.07 GiB on the two ranks (printed %.2f) at
    an unchanged config was "not explained" drift: one unit of the last printed digit is the
    same capture rounded the other way.  Two units, or 0.30 -> 0.40 (stored 0.3, 0.4), still are."""

    def boot(id, r0, r1):
        return show(
            id, CFG_E, [("graph_capture_gib", r0, 0), ("graph_capture_gib", r1, 1), ("kv_cache_tokens", 398658, None)]
        )

    r = compare.diff(boot(2, -0.05, -0.07), boot(1, -0.06, -0.06))
    rows = by_key(r, "graph_capture_gib")
    assert [f["verdict"] for f in rows] == ["changed", "changed"]
    assert all("within its print resolution" in f["why"] and "0.01 GiB" in f["why"] for f in rows)
    assert verdict.exit_code(r) == 0 and r["summary"]["drift"] == 0
    for old, new in ((0.31, 0.33), (0.3, 0.4), (14.9595, 14.9611)):
        r = compare.diff(boot(2, new, new), boot(1, old, old))
        assert [f["verdict"] for f in by_key(r, "graph_capture_gib")] == ["drift"], (old, new)
    # 4 printed decimals: one unit is 0.0001
    r = compare.diff(boot(2, 14.9596, 14.9596), boot(1, 14.9595, 14.9595))
    assert [f["verdict"] for f in by_key(r, "graph_capture_gib")] == ["changed"]
    # a token count is exact: one token is a move
    r = compare.diff(
        show(2, CFG_E, [("kv_cache_tokens", 398659, None)]), show(1, CFG_E, [("kv_cache_tokens", 398658, None)])
    )
    assert by_key(r, "kv_cache_tokens")[0]["verdict"] == "drift"
