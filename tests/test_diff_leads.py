"""`bootlog diff` leads with what changed (issue 32): changes, drift, new/gone and config rows;
the unchanged rows and those without enough history only with --all, counted in the summary
either way; --json keeps every row (the contract's shape)."""

from __future__ import annotations

import json
import re

import pytest
from click.testing import CliRunner

from bootlog.cli import cli
from bootlog.parse.reprs import CONFIG_ALIASES
from paths import FIXTURES

SEED = FIXTURES / "seed"
ROW = re.compile(r"^  ([=~!✗+\-?]) (\S+)")


def run(db, *args):
    return CliRunner().invoke(cli, ["--db", str(db), *args], catch_exceptions=False)


@pytest.fixture(scope="module")
def db(tmp_path_factory):
    db = tmp_path_factory.mktemp("seed") / "s.db"
    res = run(db, "ingest", "--container", "frank-primary-qwen", *map(str, sorted(SEED.glob("*.log"))))
    assert res.exit_code == 0, res.output
    return db


def rows(text: str) -> list[tuple[str, str]]:
    return [m.groups() for m in map(ROW.match, text.splitlines()) if m]


# 9 -> 4: shape G without prefix caching after the gdn_hip boot (the README's deploy); 13 -> 12:
# the night ladder's +4,096 step; 2 -> 1: the warm compile cache
@pytest.mark.parametrize("a, b", [("4", "9"), ("13", "12"), ("2", "1"), ("8", "13")])
def test_diff_shows_what_moved_and_counts_the_rest(db, a, b):
    full = json.loads(run(db, "diff", a, b, "--json").output)["findings"]
    res = run(db, "diff", a, b)
    shown = rows(res.output)
    # (a setting under the engine's second name, with the same values, is read once: --json only)
    config = {(f["key"], repr(f["old"]), repr(f["new"])) for f in full if f["section"] == "config"}
    twins = [
        f
        for f in full
        if f["section"] == "config"
        and f["key"] in CONFIG_ALIASES
        and (CONFIG_ALIASES[f["key"]], repr(f["old"]), repr(f["new"])) in config
    ]
    moved = [f for f in full if f["verdict"] not in ("same", "insufficient_history") and f not in twins]
    assert len(shown) == len(moved) and moved, res.output
    assert "=" not in {s for s, _ in shown} and "?" not in {s for s, _ in shown}
    hidden = len(full) - len(moved) - len(twins)
    summary = next(ln for ln in res.output.splitlines() if ln.startswith("summary:"))
    same = sum(f["verdict"] == "same" for f in full)
    unknown = sum(f["verdict"] == "insufficient_history" for f in full)
    assert f"{same} unchanged" in summary
    assert (f"{unknown} without enough history" in summary) == bool(unknown)
    assert summary.endswith(f"({hidden} not shown: --all lists them)")
    # --all lists every row of the JSON, in its order; the exit code does not depend on it
    every = run(db, "diff", a, b, "--all")
    order = {"deploy": 0, "config": 1, "metric": 2, "event": 3}
    want = [f["key"] for f in sorted(full, key=lambda f: order[f["section"]]) if f not in twins]
    assert [k.rstrip(":").split("[rank")[0] for _, k in rows(every.output)] == want
    assert every.exit_code == res.exit_code
    assert "not shown" not in every.output


def test_the_three_that_matter_lead(db):
    # the seeds' shape G against the boot before it: 24 unchanged and 1 unjudged row used to bury them
    out = run(db, "diff", "4", "9").output
    assert rows(out) == [("~", "enable_prefix_caching:"), ("-", "gdn_hip_fault"), ("-", "gdn_hip_fault_cap")]
    assert out.splitlines()[1] == "config"


def test_json_and_markdown_keep_their_rows(db):
    as_json = run(db, "diff", "4", "9", "--json").output
    assert as_json == run(db, "diff", "4", "9", "--json", "--all").output  # every row, either way
    md = run(db, "diff", "4", "9", "--markdown").output
    assert "| = |" not in md and "(25 not shown: --all lists them)" in md
    md_all = run(db, "diff", "4", "9", "--markdown", "--all").output
    assert md_all.count("\n| ") - 1 == len(json.loads(as_json)["findings"])  # (less the header row)


def test_one_setting_under_two_names_is_one_row(db):
    # boot 8 (seed 07, 5 x 262,144, died serving) prints max_seq_len=262144 in its engine line
    # beside the run line's max_model_len; 13 is the night ladder's 241,664 step: one change, read once
    log = (SEED / "07-5x262144-runtime-oom.log").read_text()
    assert "max_seq_len=262144" in log
    full = json.loads(run(db, "diff", "8", "13", "--json").output)["findings"]
    config = {f["key"]: (f["old"], f["new"]) for f in full if f["section"] == "config"}
    assert config["max_model_len"] == config["max_seq_len"] == (241664, 262144)  # --json: both rows
    for args in (("diff", "8", "13"), ("diff", "8", "13", "--all")):
        shown = [key for _, key in rows(run(db, *args).output)]
        assert "max_model_len:" in shown and "max_seq_len:" not in shown
    md = run(db, "diff", "8", "13", "--markdown").output
    assert "| config | `max_model_len` |" in md and "| config | `max_seq_len` |" not in md
