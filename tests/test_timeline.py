"""bootlog.judge.timeline: a boot's phases from its figures' times, on the real fixture logs and on
small hand-made boots for each rule."""

from __future__ import annotations

import math
import re
from datetime import datetime, timedelta
from functools import lru_cache
from pathlib import Path

import pytest

from bootlog.judge.timeline import LETTERS, PHASES, BootTimes, Figure, moved, phase_totals, phases, render_bar

LOGS = Path(__file__).resolve().parent.parent / "fixtures" / "logs"
ALL_LOGS = sorted(LOGS.glob("*.log")) + sorted((LOGS / "seed").glob("*.log"))


@lru_cache(maxsize=None)
def parsed(path: Path) -> tuple:
    from bootlog.run.ingest import parse_source
    from bootlog.read.sources import open_source

    return tuple(parse_source(open_source(str(path))))


def iso(t: datetime | None) -> str | None:
    return t.isoformat() if t is not None else None


def boot_times(boot) -> BootTimes:
    """A parsed Boot as the plain data phases() takes (what the lead feeds from the store)."""
    figures = [
        {"name": m.name, "value": m.value, "rank": m.rank, "line": m.line, "ts": iso(m.ts)} for m in boot.metrics
    ]
    return BootTimes.from_dict(
        {
            "started_at": iso(boot.started_at),
            "ready_at": iso(boot.ready_at),
            "ended_at": iso(boot.ended_at),
            "status": boot.status,
        },
        figures,
    )


def timeline(name: str, index: int = 0) -> tuple[list[dict], object]:
    boot = parsed(LOGS / name)[index]
    return phases(boot_times(boot)), boot


def metric(boot, name: str) -> float:
    (v,) = [m.value for m in boot.metrics if m.name == name]
    return v


def secs(tl: list[dict], phase: str) -> float:
    return sum(p["s"] for p in tl if p["phase"] == phase)


def first(tl: list[dict], phase: str) -> int:
    return next(i for i, p in enumerate(tl) if p["phase"] == phase)


def dt(s: str) -> datetime:
    return datetime.fromisoformat(s)


# --- every real log: the invariants -------------------------------------------------------


@pytest.mark.parametrize("log", ALL_LOGS, ids=[p.stem for p in ALL_LOGS])
def test_every_fixture_boot_adds_up(log):
    """On every boot of every fixture: consecutive pieces from the first line to ready (or, for
    a boot that never got ready, to its last line), never negative, known names, summing to
    boot_to_ready_s exactly."""
    for boot in parsed(log):
        tl = phases(boot_times(boot))
        end = boot.ready_at or boot.ended_at
        if boot.started_at is None or end is None or end == boot.started_at:
            assert tl == []
            continue
        assert tl, boot
        assert dt(tl[0]["start"]) == boot.started_at and dt(tl[-1]["end"]) == end
        for a, b in zip(tl, tl[1:]):
            assert a["end"] == b["start"] and a["phase"] != b["phase"]
        for p in tl:
            assert p["phase"] in PHASES and p["s"] >= 0
            assert math.isclose(p["s"], (dt(p["end"]) - dt(p["start"])).total_seconds(), abs_tol=1e-6)
        total = sum(p["s"] for p in tl)
        if boot.status == "ready":
            assert math.isclose(total, metric(boot, "boot_to_ready_s"), abs_tol=1e-6)
            assert tl[-1]["phase"] not in ("failed", "incomplete", "process_start") or len(tl) == 1
        else:
            assert math.isclose(total, (end - boot.started_at).total_seconds(), abs_tol=1e-6)
            # (the tail is "failed"/"incomplete" unless the last phase ran up to the last line)
            assert "api_server_start" not in {p["phase"] for p in tl}


# --- the operator's deploys (seed logs) ----------------------------------------------------


def test_seed_cold_compile_vs_warm_cache():
    """10-cold-vs-warm-compile: the same shape twice; cold builds the graph (179.24 s + the AOT
    save), warm loads it from the cache (2.143 s); both load 172.8 GiB of weights for ~300 s."""
    cold, cboot = timeline("seed/10-cold-vs-warm-compile.log", 0)
    warm, wboot = timeline("seed/10-cold-vs-warm-compile.log", 1)
    assert 179 < secs(cold, "compile") < 185 and secs(cold, "compile_cache_load") == 0
    assert math.isclose(secs(warm, "compile_cache_load"), 2.143, abs_tol=0.01)
    assert secs(warm, "compile") < 1
    for tl, boot in ((cold, cboot), (warm, wboot)):
        assert 298 < secs(tl, "weights_load") < 302
        assert math.isclose(sum(p["s"] for p in tl), metric(boot, "boot_to_ready_s"), abs_tol=1e-6)
        order = [
            first(tl, p)
            for p in (
                "process_start",
                "weights_load",
                "dynamo_transform",
                "profiling_run",
                "kv_cache_init",
                "graph_capture",
                "api_server_start",
            )
        ]
        assert order == sorted(order)
        assert tl[0]["phase"] == "process_start" and tl[-1]["phase"] == "api_server_start"
        # the envelope's offset is kept
        assert tl[0]["start"].endswith("+00:00")
    # the compile is what moved: ~180 s of the ~184 s the boots differ by
    assert secs(cold, "compile") - secs(warm, "compile") - secs(warm, "compile_cache_load") > 175


def test_seed_graph_capture_uses_the_slowest_rank():
    """Both ranks print "Graph capturing finished in 6 secs"; TP1's line comes 0.3 s after TP0's,
    and the boot waited for TP1."""
    tl, boot = timeline("seed/10-cold-vs-warm-compile.log", 0)
    (gc,) = [p for p in tl if p["phase"] == "graph_capture"]
    tp1 = [m for m in boot.metrics if m.name == "graph_capture_s" and m.rank == 1][0]
    assert dt(gc["end"]) == tp1.ts and gc["s"] == 6.0


def test_seed_failed_boot_ends_with_its_failure():
    """09: the night ladder's first rung OOMs at graph capture after the KV lines: phases up to
    kv_cache_init, then the time until its last line is "failed"."""
    tl, boot = timeline("seed/09-night-ladder-4-boots.log", 0)
    assert boot.status == "failed"
    assert [p["phase"] for p in tl][-2:] == ["kv_cache_init", "failed"]
    assert 175 < secs(tl, "compile") < 185
    assert math.isclose(sum(p["s"] for p in tl), (boot.ended_at - boot.started_at).total_seconds(), abs_tol=1e-6)


def test_seed_crash_loop_boot_has_no_phase():
    """05: UTIL 1.00 dies in worker init before loading a byte: one "failed" piece."""
    tl, boot = timeline("seed/05-util-1.00-crash-loop.log", 0)
    assert [p["phase"] for p in tl] == ["failed"]
    assert math.isclose(tl[0]["s"], (boot.ended_at - boot.started_at).total_seconds(), abs_tol=1e-6)


# --- corpus logs of other versions ---------------------------------------------------------


@pytest.mark.parametrize(
    "name, expect",
    [
        # V0 0.5.5: no load seconds, no init engine line: only graph capture is placed
        ("001-v0.5.5-v0-mistral7b-requests.log", ["process_start", "graph_capture", "api_server_start"]),
        # V0 0.7.2: memory profiling and graph capture inside init engine
        (
            "004-v0.7.2-v0-tp2-cudablocks.log",
            ["process_start", "init_engine", "memory_profiling", "init_engine", "graph_capture"],
        ),
        # V1 0.8.4: "torch.compile takes 14.30 s in total" is printed after the profiling run; the
        # total is the dynamo transform, the 19 s to the KV lines are kv_cache_init
        (
            "005-v0.8.4-v1-tp2.log",
            [
                "process_start",
                "model_load",
                "weights_load",
                "model_load",
                "init_engine",
                "dynamo_transform",
                "kv_cache_init",
                "graph_capture",
                "api_server_start",
            ],
        ),
        # V1 0.18: the profiling run has its own line
        ("036-v0.18.0-v1.log", None),
        # v0.27.1 TP2: cold compile, 96 s profiling run, 34 s of multimodal warmup before ready
        ("051-v0.27.1-tp2-compilation-split.log", None),
    ],
)
def test_corpus_versions(name, expect):
    tl, boot = timeline(name)
    assert math.isclose(sum(p["s"] for p in tl), metric(boot, "boot_to_ready_s"), abs_tol=1e-6)
    if expect is not None:
        assert [p["phase"] for p in tl] == expect


def test_v0_8_4_compile_total_is_placed_at_the_transform():
    tl, _ = timeline("005-v0.8.4-v1-tp2.log")
    assert secs(tl, "compile") == 0 and secs(tl, "dynamo_transform") == 14.3
    assert secs(tl, "kv_cache_init") == 19.0


def test_v0_27_profiling_and_api_server():
    tl, _ = timeline("051-v0.27.1-tp2-compilation-split.log")
    assert secs(tl, "profiling_run") == 96.24
    assert 97 < secs(tl, "compile") < 99  # 88.38 s graph compile + the artifact save
    assert secs(tl, "api_server_start") == 34.0  # init engine 11:39:44 -> ready 11:40:18
    assert secs(tl, "process_start") > 130  # NCCL init took a minute on that cluster


def test_v0_9_2_late_num_gpu_blocks_is_not_kv_init():
    """0.9 prints `num_gpu_blocks` again at the very end of init: kv_cache_init still ends at the
    KV lines before graph capture."""
    tl, _ = timeline("008-v0.9.2-v1-tp4.log")
    (kv,) = [p for p in tl if p["phase"] == "kv_cache_init"]
    assert kv["start"].endswith("19:37:26") and kv["end"].endswith("19:37:30")  # cache load -> KV lines
    assert tl[-1]["phase"] == "api_server_start"


@pytest.mark.parametrize(
    "name, tail",
    [
        # offline LLM() on gfx1201: no API server, the log ends with init engine (after a 36 min capture)
        ("027-rocm-gfx1201-v0.14.0rc1-ok.log", "init_engine"),
        ("028-rocm-gfx1201-v0.14.0rc1-oom.log", "failed"),  # HIP OOM inside torch.compile
        ("057-rocm-rdna4-gfx12-tp2-v0.22.69-fork-boot.log", "incomplete"),  # the log ends after graph capture
    ],
)
def test_rocm_boots(name, tail):
    """ROCm builds print the same wordings: the phases are found, and boots that never got
    ready end with their status (unless their last phase ran up to their last line)."""
    tl, boot = timeline(name)
    assert boot.status != "ready" and tl[-1]["phase"] == tail
    assert secs(tl, "weights_load") > 0 and secs(tl, "dynamo_transform") > 0


def test_057_rocm_fork_cache_hit():
    tl, _ = timeline("057-rocm-rdna4-gfx12-tp2-v0.22.69-fork-boot.log")
    assert math.isclose(secs(tl, "compile_cache_load"), 2.256, abs_tol=0.01)
    order = [
        first(tl, p)
        for p in (
            "weights_load",
            "dynamo_transform",
            "compile_cache_load",
            "profiling_run",
            "kv_cache_init",
            "graph_capture",
        )
    ]
    assert order == sorted(order)


# --- unlogged: where the log is silent -----------------------------------------------------

STAMP = re.compile(r"\b(\d\d)-(\d\d) (\d\d):(\d\d):(\d\d)\b")


def stamps(path: Path, boot) -> list[datetime]:
    """vLLM's own MM-DD HH:MM:SS times of the boot's lines."""
    lines = path.read_text(errors="replace").splitlines()[boot.first_line - 1 : boot.last_line]
    year = boot.started_at.year
    return [datetime(year, *map(int, m.groups())) for m in map(STAMP.search, lines) if m]


@pytest.mark.parametrize(
    "name, at_least",
    [
        # TPU v0.23.1rc1, ready: 18 s of quantization after "Loading weights took" with no line
        ("056-tpu-v7x-v0.23.1rc1-gemma4-ready.log", 17.0),
        # v0.23.1rc1 TP4 EP: rank 0 finished loading at 19:59:51, the next line is at 20:02:39
        ("045-v0.23.1rc1-tp4-ep-glm52-compile-reload.log", 160.0),
    ],
)
def test_unlogged_gap_is_where_the_log_is_silent(name, at_least):
    tl, boot = timeline(name)
    (gap,) = [p for p in tl if p["phase"] == "unlogged" and p["s"] >= at_least]
    a, b = dt(gap["start"]), dt(gap["end"])
    # vLLM's stamps are whole seconds: no line is stamped strictly inside the gap
    assert not [t for t in stamps(LOGS / name, boot) if a < t and t.replace(microsecond=0) < b.replace(microsecond=0)]


# --- the rules, on small hand-made boots --------------------------------------------------

T0 = "2026-10-02T10:00:00-07:00"


def at(s: float) -> str:
    """T0 + s seconds, ISO."""
    return (datetime.fromisoformat(T0) + timedelta(seconds=s)).isoformat()


def fig(name: str, value, end: float | None, rank=None, line=None) -> dict:
    return {"name": name, "value": value, "rank": rank, "line": line, "ts": at(end) if end is not None else None}


def run(figs: list[dict], ready: float | None = 100, ended: float | None = None, status=None) -> list[tuple]:
    tl = phases(
        {
            "started_at": T0,
            "ready_at": at(ready) if ready is not None else None,
            "ended_at": at(ended) if ended is not None else None,
            "status": status,
            "figures": figs,
        }
    )
    return [(p["phase"], p["s"]) for p in tl]


def test_nesting_container_remainders_and_gaps():
    got = run(
        [
            fig("weights_load_s", 30, 40),
            fig("model_load_s", 35, 42),
            fig("dynamo_transform_s", 5, 50),
            fig("compile_graph_s", 20, 70),
            fig("torch_compile_s", 27, 72),
            fig("graph_capture_s", 10, 90),
            fig("init_engine_s", 48, 93),
        ]
    )
    # weights inside model load, graph compile + torch.compile's tail inside the compile total
    # (placed from the transform's start), the rest of init engine between its inner phases,
    # and the 3 s between model load's end and init engine's start that no line explains
    assert got == [
        ("process_start", 7),
        ("model_load", 3),
        ("weights_load", 30),
        ("model_load", 2),
        ("unlogged", 3),
        ("dynamo_transform", 5),
        ("compile", 22),
        ("init_engine", 8),
        ("graph_capture", 10),
        ("init_engine", 3),
        ("api_server_start", 7),
    ]


def test_same_depth_overlap_goes_to_the_phase_that_ended_first():
    got = run([fig("dynamo_transform_s", 10, 20), fig("compile_cache_load_s", 5, 23)])
    assert got == [("process_start", 10), ("dynamo_transform", 10), ("compile_cache_load", 3), ("api_server_start", 77)]


def test_slowest_rank_is_used_for_every_line_of_a_figure():
    figs = [
        fig("graph_capture_s", 9, 50, rank=0),
        fig("graph_capture_s", 4, 52, rank=1),
        fig("compile_graph_s", 3, 20, rank=1),
        fig("compile_graph_s", 3, 30, rank=1),
        fig("compile_graph_s", 10, 29, rank=0),
    ]
    got = run(figs)
    # rank 1's compile lines (last at 30 s) win over rank 0's single one, both of them placed
    assert got == [
        ("process_start", 17),
        ("compile", 3),
        ("unlogged", 7),
        ("compile", 3),
        ("unlogged", 18),
        ("graph_capture", 4),
        ("api_server_start", 48),
    ]


def test_kv_cache_init_runs_from_the_previous_phase_to_the_kv_lines():
    got = run(
        [
            fig("profiling_run_s", 10, 40),
            fig("kv_cache_available_gib", 2.9, 43),
            fig("kv_cache_tokens", 398658, 44),
            fig("graph_capture_s", 6, 51),
            fig("num_gpu_blocks", 5, 60),
            fig("init_engine_s", 35, 61),
        ]
    )
    assert got == [
        ("process_start", 26),
        ("init_engine", 4),
        ("profiling_run", 10),
        ("kv_cache_init", 4),
        ("init_engine", 1),
        ("graph_capture", 6),
        ("init_engine", 10),
        ("api_server_start", 39),
    ]


def test_not_ready_boots_end_with_their_status():
    figs = [fig("weights_load_s", 20, 30)]
    assert run(figs, ready=None, ended=50, status="failed") == [
        ("process_start", 10),
        ("weights_load", 20),
        ("failed", 20),
    ]
    assert run(figs, ready=None, ended=50) == [("process_start", 10), ("weights_load", 20), ("incomplete", 20)]
    assert run([], ready=None, ended=5, status="failed") == [("failed", 5)]
    assert run([], ready=None, ended=None, status="failed") == []


def test_no_times_no_timeline():
    assert phases(BootTimes(started_at=None, ready_at=at(5))) == []
    assert phases(BootTimes(started_at=T0, ready_at=None)) == []
    assert run([fig("weights_load_s", 5, None)]) == [("unlogged", 100)]  # figures without ts: nothing placed


def test_bad_values_are_ignored_and_figures_are_clipped_to_the_boot():
    got = run(
        [
            fig("weights_load_s", float("nan"), 30),
            fig("model_load_s", None, 30),
            fig("dynamo_transform_s", -3, 30),
            fig("graph_capture_s", True, 30),
            fig("init_engine_s", 500, 60),
            fig("compile_graph_s", 10, 130),
        ]
    )
    # init engine's 500 s start before the boot: clipped to its first line; compile after ready: dropped
    assert got == [("init_engine", 60), ("api_server_start", 40)]


def test_slivers_of_rounding_join_their_neighbour():
    got = run([fig("model_load_s", 10.0, 20.0), fig("init_engine_s", 9.995, 30.0)])
    assert got == [("process_start", 10), ("model_load", 10.005), ("init_engine", 9.995), ("api_server_start", 70)]


def test_time_zones_naive_aware_and_z():
    figs = [{"name": "weights_load_s", "value": 10, "ts": "2026-10-02T17:00:20Z"}]
    tl = phases({"started_at": T0, "ready_at": "2026-10-02T10:00:30", "figures": figs})  # naive ready: T0's zone
    assert [(p["phase"], p["s"]) for p in tl] == [("process_start", 10), ("weights_load", 10), ("api_server_start", 10)]
    assert all(p["start"].endswith("-07:00") for p in tl)
    naive = phases({"started_at": "2026-10-02T10:00:00", "ready_at": "2026-10-02T10:00:30", "figures": figs[:0]})
    assert naive == [{"phase": "unlogged", "start": "2026-10-02T10:00:00", "end": "2026-10-02T10:00:30", "s": 30.0}]


def test_figure_dataclass_and_datetimes_are_accepted():
    t0 = datetime.fromisoformat(T0)
    b = BootTimes(started_at=t0, ready_at=dt(at(30)), figures=(Figure("graph_capture_s", 5, 0, 9, dt(at(20))),))
    assert [(p["phase"], p["s"]) for p in phases(b)] == [
        ("process_start", 15),
        ("graph_capture", 5),
        ("api_server_start", 10),
    ]


# --- diff: which phase moved -------------------------------------------------------------


def test_moved_names_the_cold_compile():
    cold, _ = timeline("seed/10-cold-vs-warm-compile.log", 0)
    warm, _ = timeline("seed/10-cold-vs-warm-compile.log", 1)
    rows = moved(warm, cold)  # diff A=warm (new) B=cold (old)
    assert rows[0]["phase"] == "compile" and rows[0]["delta"] < -175
    by = {r["phase"]: r for r in rows}
    assert by["compile_cache_load"]["old"] == 0.0 and math.isclose(by["compile_cache_load"]["new"], 2.143, abs_tol=0.01)
    assert math.isclose(
        sum(r["delta"] for r in rows), sum(p["s"] for p in warm) - sum(p["s"] for p in cold), abs_tol=1e-5
    )
    assert phase_totals(cold)["init_engine"] == round(sum(p["s"] for p in cold if p["phase"] == "init_engine"), 6)


# --- render_bar ----------------------------------------------------------------------------


def test_render_bar_on_the_cold_boot():
    tl, _ = timeline("seed/10-cold-vs-warm-compile.log", 0)
    text = render_bar(tl, width=60)
    bar, *legend = text.splitlines()
    assert bar.startswith("|") and bar.count("|") == 2
    inner = bar[1 : bar.rindex("|")]
    assert len(inner) == 60 and bar.endswith("561s")
    assert inner.count("W") == 32 and inner.count("C") == 19  # 300.9 / 561 and 180.9 / 561 of 60
    assert text.isascii()
    legend_text = " ".join(legend)
    for phase in {p["phase"] for p in tl}:
        assert f"{LETTERS[phase]} {phase} " in legend_text
    assert "C compile 181s" in legend_text and all(len(line) <= 70 for line in legend)


@pytest.mark.parametrize("width", [1, 7, 60, 120])
def test_render_bar_width_is_exact(width):
    tl, _ = timeline("051-v0.27.1-tp2-compilation-split.log")
    bar = render_bar(tl, width=width).splitlines()[0]
    assert len(bar[1 : bar.rindex("|")]) == width


def test_render_bar_empty():
    assert render_bar([]) == ""
    assert render_bar([{"phase": "unlogged", "start": T0, "end": T0, "s": 0.0}]) == ""
