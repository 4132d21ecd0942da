"""A verdict does not depend on where it runs: the seeds' history ingested from the clone as the
operator types it (relative paths) gives the same check, diff and report answers from any
working directory (a cron job or a systemd unit runs from /)."""
from __future__ import annotations

import re
import shutil
import sqlite3

import pytest
from click.testing import CliRunner

from bootlog.cli import cli
from conftest import ROOT

SEED = ROOT / "fixtures" / "logs" / "seed"
PLANS = ROOT / "fixtures" / "plans"


@pytest.fixture
def clone(tmp_path):
    """The parts of a clone the operator's commands name: the seed logs and the plan + env."""
    root = tmp_path / "clone"
    shutil.copytree(SEED, root / "fixtures" / "logs" / "seed")
    shutil.copytree(PLANS, root / "fixtures" / "plans")
    return root


def run(db, *args):
    return CliRunner().invoke(cli, ["--db", str(db), *args], catch_exceptions=False)


def test_check_and_report_give_one_verdict_from_the_clone_and_from_root(clone, tmp_path, monkeypatch):
    db = tmp_path / "b.db"
    monkeypatch.chdir(clone)
    logs = sorted(str(p.relative_to(clone)) for p in (clone / "fixtures/logs/seed").glob("0[1-4]-*.log"))
    assert run(db, "ingest", "--container", "frank-primary-qwen", *logs).exit_code == 0
    here = run(db, "check", "last", "--plan", "fixtures/plans/frank-primary.toml")
    monkeypatch.chdir("/")
    there = run(db, "check", "last", "--plan", str(clone / "fixtures/plans/frank-primary.toml"))
    assert (there.exit_code, there.output) == (here.exit_code, here.output)
    assert here.exit_code == 0, here.output  # shape G meets the whole plan, its own patterns read again
    assert "expert_arena_gib" in here.output and "source no longer readable" not in here.output
    # the sources are stored where they are, not as typed
    names = [r[0] for r in sqlite3.connect(db).execute("SELECT name FROM sources")]
    assert names and all(n.startswith(str(clone) + "/") for n in names), names
    pages = []
    for where in (clone, "/"):
        monkeypatch.chdir(where)
        page = run(db, "report", "--plan", str(clone / "fixtures/plans/frank-primary.toml"), "--last", "2").output
        pages.append(re.sub(r"generated [0-9: -]+ UTC", "", page))
    assert pages[0] == pages[1]
    assert "times in -07:00" in pages[0] and "every expectation it could judge met" in pages[0]


def test_a_relative_path_an_older_bootlog_stored_gives_one_answer_everywhere(clone, tmp_path, monkeypatch):
    db = tmp_path / "b.db"
    log = "fixtures/logs/seed/04-shape-g-kv-400700-no-prefix-cache.log"
    assert run(db, "ingest", "--container", "frank-primary-qwen", str(clone / log)).exit_code == 0
    con = sqlite3.connect(db)  # as an older bootlog stored it: the path as typed in the clone
    con.execute("UPDATE sources SET name = ?, \"key\" = replace(\"key\", ?, ?)", (log, str(clone / log), log))
    con.commit()
    plan = str(clone / "fixtures/plans/frank-primary.toml")
    answers = set()
    for where in (clone, "/", clone / "fixtures"):
        monkeypatch.chdir(where)
        got = run(db, "check", "last", "--plan", plan)
        answers.add((got.exit_code, got.output))
    (code, text), = answers  # the same from every directory, the clone included
    assert code == 4 and f"stored as the relative path {log} by an older bootlog" in text
    # ingesting the file again (from anywhere) stores where it is: the full answer comes back
    monkeypatch.chdir("/")
    assert run(db, "ingest", "--container", "frank-primary-qwen", str(clone / log)).exit_code == 0
    assert [r[0] for r in con.execute("SELECT name FROM sources")] == [str(clone / log)]
    assert run(db, "check", "last", "--plan", plan).exit_code == 0
    assert len(con.execute("SELECT id FROM boots").fetchall()) == 1
