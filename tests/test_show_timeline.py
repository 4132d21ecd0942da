"""The boot timeline where an operator reads it: `show --json` ("timeline"), the bar in `show`,
and the phases that moved in `diff` text, on the seed deploy history (fixtures/logs/seed)."""

from __future__ import annotations

import json
import math
from datetime import datetime
from pathlib import Path

import pytest
from click.testing import CliRunner

from bootlog.cli import cli
from bootlog.judge.timeline import LETTERS, PHASES
from paths import FIXTURES

SEED = FIXTURES / "seed"
CONTAINER = "frank-primary-qwen"


def run(db, *args):
    return CliRunner().invoke(cli, ["--db", str(db), *args], catch_exceptions=False)


@pytest.fixture(scope="module")
def db(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("timeline") / "seed.db"
    res = run(path, "ingest", "--container", CONTAINER, *map(str, sorted(SEED.glob("*.log"))))
    assert res.exit_code == 0, res.output
    return path


@pytest.fixture(scope="module")
def shows(db) -> dict[int, dict]:
    listed = json.loads(run(db, "list", "--json").stdout)
    return {b["id"]: json.loads(run(db, "show", str(b["id"]), "--json").stdout) for b in listed}


def ids_of(shows: dict, stem: str) -> list[int]:
    """The boots of one seed log, in log order."""
    return sorted(
        (i for i, d in shows.items() if Path(d["boot"]["source"]).stem == stem),
        key=lambda i: shows[i]["boot"]["first_line"],
    )


def figure(doc: dict, name: str) -> float | None:
    return next((m["value"] for m in doc["metrics"] if m["name"] == name), None)


def test_every_seed_boot_has_a_timeline_adding_up_to_its_boot_to_ready(shows):
    assert len(shows) == 15
    for bid, d in shows.items():
        tl, boot = d["timeline"], d["boot"]
        assert tl, bid
        assert set(tl[0]) == {"phase", "start", "end", "s"}
        for a, b in zip(tl, tl[1:]):
            assert a["end"] == b["start"]
        assert all(p["phase"] in PHASES and p["s"] >= 0 for p in tl)
        total = sum(p["s"] for p in tl)
        end = boot["ready_at"] or boot["ended_at"]
        assert tl[0]["start"] == boot["started_at"] and tl[-1]["end"] == end
        if boot["ready_at"]:
            assert math.isclose(total, figure(d, "boot_to_ready_s"), abs_tol=1e-5), bid
            assert tl[-1]["phase"] == "api_server_start"
        else:
            span = (
                datetime.fromisoformat(boot["ended_at"]) - datetime.fromisoformat(boot["started_at"])
            ).total_seconds()
            assert math.isclose(total, span, abs_tol=1e-5) and tl[-1]["phase"] == "failed", bid


def test_cold_and_warm_boot_timelines_differ_where_the_compile_went(shows):
    cold, warm = (shows[i] for i in ids_of(shows, "10-cold-vs-warm-compile"))
    secs = lambda d, phase: sum(p["s"] for p in d["timeline"] if p["phase"] == phase)  # noqa: E731
    # the cold boot compiled (compile_graph_s 179.24 s of its torch.compile), the warm one loaded
    assert secs(cold, "compile") >= figure(cold, "compile_graph_s") - 1
    assert secs(warm, "compile") < 1 and math.isclose(
        secs(warm, "compile_cache_load"), figure(warm, "compile_cache_load_s"), abs_tol=0.01
    )
    assert secs(cold, "compile_cache_load") == 0


def test_show_text_draws_the_bar(db, shows):
    bid = ids_of(shows, "10-cold-vs-warm-compile")[0]
    text = run(db, "show", str(bid)).output
    lines = text.splitlines()
    i = lines.index("timeline  first line to ready; phases in show --json")
    bar = lines[i + 1].strip()
    assert bar.startswith("|") and bar.count("|") == 2
    drawn = bar[1 : bar.rindex("|")]
    assert len(drawn) == 60 and LETTERS["compile"] * 15 in drawn  # 180 s of 561 s: ~19 columns
    assert f"{LETTERS['weights_load']} weights_load " in text
    failed = ids_of(shows, "05-util-1.00-crash-loop")[0]
    assert "timeline  first line to its last line (failed)" in run(db, "show", str(failed)).output


def test_diff_text_names_the_phase_that_moved_and_json_keeps_its_shape(db, shows):
    cold, warm = ids_of(shows, "10-cold-vs-warm-compile")
    res = run(db, "diff", str(warm), str(cold))
    lines = res.output.splitlines()
    head = lines.index(f"phases (seconds, {cold} → {warm}, biggest move first)")
    assert lines[head - 1].startswith("summary: ")  # after the findings
    top = lines[head + 1].split()
    assert top[0] == "compile" and float(top[-1].strip("()")) < -170
    assert any(ln.split()[0] == "compile_cache_load" for ln in lines[head + 1 :])
    got = json.loads(run(db, "diff", str(warm), str(cold), "--json").stdout)
    assert set(got) == {"a", "b", "findings", "summary"}
    md = run(db, "diff", str(warm), str(cold), "--markdown").output
    assert "phases (" not in md
