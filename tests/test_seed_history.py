"""The operator's deploy history (fixtures/logs/seed, composed from the notes in the seeds) goes
through the real pipeline into a temp SQLite DB; diff and check must reach every conclusion the
notes drew by hand."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from bootlog.judge import compare, verdict
from bootlog.render import render
from bootlog.cli import cli
from bootlog.judge.plan import load_plan

ROOT = Path(__file__).resolve().parent.parent
SEED = ROOT / "fixtures" / "logs" / "seed"
PLAN = ROOT / "fixtures" / "plans" / "frank-primary.toml"
GOLDEN = ROOT / "fixtures" / "logs"

pytestmark = pytest.mark.skipif(not SEED.is_dir() or not PLAN.exists(), reason="seed logs / plan not composed")


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    """Every seed log ingested with the plan (so its user patterns are stored); name -> shows."""
    from bootlog.run.ingest import ingest
    from bootlog.store.db import open_store
    from bootlog.store.reads import boots_like, show_boot

    engine = open_store(str(tmp_path_factory.mktemp("seed") / "seed.db"))
    plan = load_plan(PLAN)
    boots: dict[str, list[dict]] = {}
    for log in sorted(SEED.glob("*.log")):
        got = ingest(engine, str(log), plan=plan, host="dankserver")
        boots[log.stem[:2]] = [show_boot(engine, b.id) for b in got]

    def history(show: dict) -> list[dict]:
        return [show_boot(engine, i) for i in boots_like(engine, show["boot"]["id"])]

    return {"boots": boots, "plan": plan, "history": history, "engine": engine}


def rows(result: dict, key: str) -> list[dict]:
    return [f for f in result["findings"] if f["key"] == key]


def test_d_to_e_only_precise_memory_changed_and_kv_held(store):
    (d,), (e,) = store["boots"]["01"], store["boots"]["02"]
    r = compare.diff(e, d)
    config = [(f["key"], f["old"], f["new"]) for f in r["findings"] if f["section"] == "config"]
    assert config == [("expert_precise_memory", None, True)]
    (kv,) = rows(r, "kv_cache_tokens")
    assert (kv["old"], kv["new"], kv["verdict"]) == (398658, 398658, "same")
    # the arena grew by the 2.35 GiB the precise plan freed: explained, not drift
    arena = rows(r, "expert_arena_gib")
    assert arena and {(f["old"], f["new"], f["verdict"]) for f in arena} == {(14.87, 17.22, "changed")}
    assert all("expert_precise_memory" in f["why"] for f in arena)
    assert r["summary"]["drift"] == 0 and verdict.exit_code(r) == 0
    assert render.render_text(r).splitlines()[1:3] == ["config", "  ~ expert_precise_memory: None → True"]


def test_f_graph_capture_negative_within_its_charge(store):
    (f,) = store["boots"]["03"]
    r = compare.check(f, store["plan"])
    (gc,) = rows(r, "graph_capture_gib")
    assert (gc["old"], gc["new"], gc["verdict"]) == (0.32, -0.06, "same")
    assert "cudagraph_estimate_gib" in gc["why"]
    # shape F still ran the 0.32 GiB analytic charge the plan has since cut to 0.07
    (est,) = rows(r, "cudagraph_estimate_gib")
    assert est["new"] == 0.32 and est["verdict"] == "drift"


def test_g_kv_meets_the_400700_ask_and_the_whole_plan(store):
    (g,) = store["boots"]["04"]
    r = compare.check(g, store["plan"])
    (kv,) = rows(r, "kv_cache_tokens")
    assert (kv["old"], kv["new"], kv["verdict"]) == (400700, 401408, "same")
    bad = [f for f in r["findings"] if f["verdict"] not in ("same",)]
    assert bad == [] and verdict.exit_code(r) == 0
    # and against shape F: KV moved because kv_cache_memory_bytes moved (named as the cause)
    (f,) = store["boots"]["03"]
    d = compare.diff(g, f)
    (kv,) = rows(d, "kv_cache_tokens")
    assert kv["verdict"] == "changed" and kv["delta"] == 2750 and "kv_cache_memory_bytes" in kv["why"]


def test_util_1_00_two_failed_boots_value_error_on_both_ranks(store):
    first, second = store["boots"]["05"]
    for boot in (first, second):
        assert boot["boot"]["status"] == "failed" and boot["boot"]["failure"] == "value_error"
        r = compare.check(boot, store["plan"])
        assert verdict.exit_code(r) == 4
        (util,) = rows(r, "gpu_memory_utilization")
        assert (util["old"], util["new"], util["verdict"]) == (0.982, 1, "violation")
        (ve,) = rows(r, "value_error")
        assert ve["verdict"] == "violation" and ve["new"] == 2
        # the workers print no TP tag here; the device each one refused is still named
        assert "ranks 0, 1" in ve["why"] or "devices cuda:0, cuda:1" in ve["why"]
        assert rows(r, "status")[0]["verdict"] == "violation"
    r = compare.diff(second, first)
    assert rows(r, "status")[0]["verdict"] == "violation" and verdict.exit_code(r) == 4


def test_5x262144_margin_then_runtime_oom_on_rank_1(store):
    (boot,) = store["boots"]["07"]
    fig = compare.figures(boot)
    assert fig["kv_cache_tokens"] == {None: [1350182]}
    assert fig["kv_margin_tokens"] == {None: [39462]}  # "39,462 tokens of margin"
    r = compare.check(boot, store["plan"])
    (oom,) = rows(r, "oom")
    # one fault: the engine's re-raise of the worker's OOM is not counted again
    assert (oom["new"], oom["verdict"]) == (1, "violation") and "rank 1" in oom["why"]
    assert verdict.exit_code(r) == 4
    # against the night ladder's deployed 241664 boot: a new fault, capacity explained by config
    ladder = store["boots"]["09"][-1]
    d = compare.diff(boot, ladder)
    assert rows(d, "oom")[0]["verdict"] == "drift"
    assert rows(d, "kv_cache_tokens")[0]["verdict"] == "changed"


def test_night_ladder_two_graph_capture_ooms_then_241664(store):
    ladder = store["boots"]["09"]
    assert [b["boot"]["status"] for b in ladder] == ["failed", "failed", "ready", "ready"]
    assert [b["boot"]["failure"] for b in ladder[:2]] == ["oom", "oom"]
    r = compare.diff(ladder[3], ladder[2])
    (mml,) = rows(r, "max_model_len")
    assert (mml["old"], mml["new"]) == (237568, 241664)
    (kv,) = rows(r, "kv_cache_tokens")
    assert (kv["old"], kv["new"], kv["verdict"]) == (718606, 732359, "changed")


def test_gdn_burst_32_reported_faults_plus_the_cap(store):
    (burst,) = store["boots"]["08"]
    r = compare.check(burst, store["plan"])
    (gdn,) = rows(r, "gdn_hip_fault")
    assert (gdn["new"], gdn["verdict"]) == (32, "violation")
    assert "report limit (32) reached" in gdn["why"]
    (cap,) = rows(r, "gdn_hip_fault_cap")
    assert cap["new"] == 1
    (pc,) = rows(r, "enable_prefix_caching")
    assert (pc["old"], pc["new"], pc["verdict"]) == (False, True, "violation")
    # G is the mitigation: prefix caching off, the faults gone
    (g,) = store["boots"]["04"]
    d = compare.diff(g, burst)
    assert [(f["key"], f["old"], f["new"]) for f in d["findings"] if f["section"] == "config"] == [
        ("enable_prefix_caching", True, False)
    ]
    assert rows(d, "gdn_hip_fault")[0]["verdict"] == "gone"


def test_cold_vs_warm_compile(store):
    cold, warm = store["boots"]["10"]
    hit = compare.diff(warm, cold)
    (row,) = rows(hit, "compile_cache")
    assert (row["old"], row["new"], row["verdict"]) == (179.24, 2.143, "changed")
    assert verdict.exit_code(hit) == 0
    # cold following warm at the same config: the cache was lost
    miss = compare.diff(cold, warm)
    (row,) = rows(miss, "compile_cache")
    assert (row["old"], row["new"], row["verdict"]) == (2.143, 179.24, "drift")
    assert "compile cache missed" in row["why"] and "177.097" in row["why"]
    assert verdict.exit_code(miss) == 3
    # and in real order: shape E booted warm (2.188 s), the next boot of that shape compiled cold
    (e,) = store["boots"]["02"]
    d = compare.diff(cold, e)
    assert [f["key"] for f in d["findings"] if f["section"] == "config"] == []
    assert rows(d, "compile_cache")[0]["verdict"] == "drift"
    plan_check = compare.check(warm, store["plan"])
    assert rows(plan_check, "compile_cache") == []  # the plan accepts any cache state


def test_timings_judged_against_same_config_history(store):
    cold, warm = store["boots"]["10"]
    hist = store["history"](warm)
    assert [h["boot"]["id"] for h in hist][-1] == cold["boot"]["id"]
    r = compare.diff(warm, cold, history=hist)
    assert {f["verdict"] for f in rows(r, "torch_compile_s")} <= {"insufficient_history", "changed"}


def test_cli_diff_and_check_exit_codes(store, tmp_path):
    runner = CliRunner()
    db = str(tmp_path / "cli.db")
    logs = [SEED / "04-shape-g-kv-400700-no-prefix-cache.log", SEED / "08-gdn-hip-burst-prefix-caching.log"]
    for log in logs:
        res = runner.invoke(cli, ["--db", db, "ingest", "--plan", str(PLAN), str(log)], catch_exceptions=False)
        assert res.exit_code == 0, res.output
    res = runner.invoke(cli, ["--db", db, "check", "1", "--plan", str(PLAN)], catch_exceptions=False)
    assert res.exit_code == 0, res.output
    # a check says each expectation met or missed, never a bound as an old value with a delta
    out = res.output.splitlines()
    assert out[-1] == "summary: 31 expectations met, 0 violations, 0 drift"
    assert "  = kv_cache_tokens                ≥ 400,700: 401,408 met" in out
    assert "  = boot_to_ready_s                ≤ 900: 375.17 met" in out
    assert "  = oom                            ≤ 0: 0 met" in out
    assert "  = max_model_len: 200,704 met" in out
    assert not [ln for ln in out if "→" in ln.split("   (legend")[0] or "%)" in ln]
    res = runner.invoke(cli, ["--db", db, "check", "2", "--plan", str(PLAN), "--json"], catch_exceptions=False)
    assert res.exit_code == 4
    data = json.loads(res.output)
    assert data["a"] == 2 and data["b"] is None and data["summary"]["violations"] >= 2
    res = runner.invoke(cli, ["--db", db, "diff", "2", "1", "--json"], catch_exceptions=False)
    # 32 gdn_hip state faults: a failed deploy (verdict.py), no longer drift
    assert res.exit_code == 4
    assert json.loads(res.output)["a"] == 2
    res = runner.invoke(cli, ["--db", db, "diff", "2", "1", "--plan", str(PLAN)], catch_exceptions=False)
    assert res.exit_code == 4
    res = runner.invoke(cli, ["--db", db, "check", "1", "--plan", str(tmp_path / "missing.toml")])
    assert res.exit_code == 1 and res.output.startswith("bootlog: ")


@pytest.mark.parametrize(
    "name", ["010-v0.10.0-v1-tp8-judge.log", "014-v0.10.2-nohup-multiboot.log", "018-v0.11.0rc2-tp2-qwen3vl.log"]
)
def test_same_real_log_ingested_twice_says_nothing_changed(name, tmp_path):
    src = GOLDEN / name
    if not src.exists():
        pytest.skip(f"{name} not in fixtures")
    one, two = tmp_path / "node-a.log", tmp_path / "node-b.log"
    shutil.copy(src, one)
    shutil.copy(src, two)
    runner = CliRunner()
    shows = []
    for i, copy in enumerate((one, two)):
        db = str(tmp_path / f"{i}.db")
        res = runner.invoke(cli, ["--db", db, "ingest", str(copy)], catch_exceptions=False)
        assert res.exit_code == 0, res.output
        ids = [b["id"] for b in json.loads(runner.invoke(cli, ["--db", db, "list", "--json"]).output)]
        shows.append([json.loads(runner.invoke(cli, ["--db", db, "show", str(i), "--json"]).output) for i in ids])
    assert len(shows[0]) == len(shows[1]) >= 1
    for a, b in zip(shows[1], shows[0]):  # every boot of the log, pairwise
        r = compare.diff(a, b)
        failed = a["boot"]["status"] == "failed"
        # a failed boot stays a failure (exit 4) even when the one before failed the same way
        moved = [f for f in r["findings"] if f["verdict"] != "same"]
        assert moved == ([rows(r, "status")[0]] if failed else []), render.render_text(r)
        assert r["summary"]["drift"] == 0
        assert verdict.exit_code(r) == (4 if failed else 0)


def test_kv_margin_says_what_it_means(store):
    # the shipped shape G: -200,704 tokens of "margin" is two full-length requests of three
    # slots, not the worst deploy
    (g,) = store["boots"]["04"]
    assert compare.margin_meaning(g) == "full-length requests resident: 2.00 of 3 slots"
    (f,) = store["boots"]["03"]
    (row,) = rows(compare.diff(g, f), "kv_margin_tokens")
    # shape F held 398,658 tokens (1.99 of 200,704), G 401,408 (2.00): what it means leads
    assert (
        row["why"] == "full-length requests resident: 1.99 → 2.00 of 3 slots; explained by a change of "
        "kv_cache_memory_bytes, enable_prefix_caching"
    )
    from bootlog.render import render

    assert render.finding_line(row) == (
        "~ kv_margin_tokens         full-length requests resident: 1.99 → 2.00 of 3 "
        "slots  (-203,454 → -200,704 tokens, +2,750, +1.35%)  explained by a change "
        "of kv_cache_memory_bytes, enable_prefix_caching"
    )
    from bootlog.render.render_boot import render_show

    text = render_show(g)
    assert (
        "  kv_margin_tokens                full-length requests resident: 2.00 of 3 slots  (-200,704 tokens: "
        "KV tokens − max_num_seqs × max_model_len)" in text
    )
    assert "  kv_bytes_per_token              7,888 B/token  (asked bytes: " in text  # not 7,888.4825
