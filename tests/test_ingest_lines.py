"""What `bootlog ingest` prints per boot: the file it came from (several inputs) and, with
--plan, what the plan's patterns read and the plan's verdict (not a bare "[already stored]")."""

from __future__ import annotations

import json
import os
import re

from click.testing import CliRunner

from bootlog.cli import cli
from paths import ROOT

SEED = ROOT / "fixtures" / "logs" / "seed"
PLAN = ROOT / "fixtures" / "plans" / "frank-primary.toml"
SHAPE_D, SHAPE_G = SEED / "01-shape-d-fp8-200704x3.log", SEED / "04-shape-g-kv-400700-no-prefix-cache.log"
LADDER = SEED / "09-night-ladder-4-boots.log"


def run(db, *args):
    return CliRunner().invoke(cli, ["--db", str(db), *args], catch_exceptions=False)


def boot_lines(out: str) -> dict[int, str]:
    return {int(m[1]): m[0] for m in re.finditer(r"(?m)^#(\d+) .*$", out)}


def test_several_inputs_name_their_file_on_each_boot_line(tmp_path):
    db = tmp_path / "b.db"
    res = run(db, "ingest", str(LADDER), str(SHAPE_G))
    assert res.exit_code == 0
    lines = boot_lines(res.stdout)
    # the seed notes' night ladder is four starts in one file (262144 and 245760 OOM, 237568 and
    # 241664 ready), shape G one: five lines, each naming the file the database says it came from
    assert len(lines) == 5
    source = {b["id"]: b["source"] for b in json.loads(run(db, "list", "--json").stdout)}
    for bid, line in lines.items():
        named = line.split()[1]  # (a long path is cut at its start: "…/seed/04-shape-g-….log")
        assert source[bid].endswith(named.lstrip("…")) and len(named) <= 60, line
    assert [os.path.basename(line.split()[1]) for line in lines.values()] == [LADDER.name] * 4 + [SHAPE_G.name]
    # the columns after the name line up across files
    assert len({line.index(" v0.22.1rc2") for line in lines.values()}) == 1
    # one input: the line is as before, no name
    one = run(tmp_path / "one.db", "ingest", str(SHAPE_G)).stdout
    assert re.match(r"#1     ready +v0\.22", one)


def test_reingest_with_plan_says_what_the_plan_read_and_its_verdict(tmp_path):
    db = tmp_path / "b.db"
    first = run(db, "ingest", str(SHAPE_G), str(SHAPE_D)).stdout
    assert all(line.endswith("[new]") for line in boot_lines(first).values())
    again = run(db, "ingest", "--plan", str(PLAN), str(SHAPE_G), str(SHAPE_D))
    assert again.exit_code == 0
    g, d = boot_lines(again.stdout)[1], boot_lines(again.stdout)[2]
    assert "[already stored]" not in again.stdout
    # the plan's three [[pattern]]s read the fork's expert-plan line; shape G meets the plan,
    # shape D (3,150,000,000 B asked, precise memory off) misses it
    assert g.endswith(
        "[stored before, now with 3 plan figures (expert_arena_gib, expert_arena_slots, "
        "planner_overhead_gib); plan: OK]"
    ), g
    assert "[stored before, now with 3 plan figures" in d and "plan: VIOLATION (" in d and "kv_cache_memory_bytes" in d
    # what the line says is what check says, exit code and all
    assert run(db, "check", "1", "--plan", str(PLAN)).exit_code == 0
    assert run(db, "check", "2", "--plan", str(PLAN)).exit_code == 4
    # and the figure it added is the log's own: "expert cache 17.77 GiB / 7,762 slots"
    line = next(t for t in SHAPE_G.read_text().splitlines() if "expert cache " in t)
    arena = float(re.search(r"expert cache ([\d.]+) GiB", line)[1])
    shown = json.loads(run(db, "show", "1", "--json").stdout)
    assert {m["value"] for m in shown["metrics"] if m["name"] == "expert_arena_gib"} == {arena} == {17.77}
