"""A verdict does not depend on where it runs: the seeds' history ingested from the clone as the
operator types it (relative paths) gives the same check, diff and report answers from any
working directory (a cron job or a systemd unit runs from /)."""

from __future__ import annotations

import json
import re
import shutil
import sqlite3

import pytest
from click.testing import CliRunner

from bootlog.cli import cli
from paths import ROOT

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
    con.execute('UPDATE sources SET name = ?, "key" = replace("key", ?, ?)', (log, str(clone / log), log))
    con.commit()
    plan = str(clone / "fixtures/plans/frank-primary.toml")
    answers = set()
    for where in (clone, "/", clone / "fixtures"):
        monkeypatch.chdir(where)
        got = run(db, "check", "last", "--plan", plan)
        answers.add((got.exit_code, got.output))
    ((code, text),) = answers  # the same from every directory, the clone included
    assert code == 4 and f"stored as the relative path {log} by an older bootlog" in text
    # ingesting the file again (from anywhere) stores where it is: the full answer comes back
    monkeypatch.chdir("/")
    assert run(db, "ingest", "--container", "frank-primary-qwen", str(clone / log)).exit_code == 0
    assert [r[0] for r in con.execute("SELECT name FROM sources")] == [str(clone / log)]
    assert run(db, "check", "last", "--plan", plan).exit_code == 0
    assert len(con.execute("SELECT id FROM boots").fetchall()) == 1


def test_the_seeds_history_gets_one_verdict_from_the_clone_from_root_and_from_a_systemd_unit(clone, tmp_path, replayer):
    """The operator's history (the seed logs as one container's, the real plan and env file)
    and a deploy of shape G in a replay container: `check`, `diff`, `report` and `hook` run from
    the clone as typed there, from /, and as a systemd unit runs them (cwd /, no TTY, another
    HOME, only the unit's environment) give the same answers."""
    import os
    import subprocess
    import sys
    import uuid
    from pathlib import Path

    from podman_util import all_at_once, podman_env, unstamped

    name = f"frank-{uuid.uuid4().hex[:8]}"
    db = tmp_path / "bootlog.db"
    bootlog = str(Path(sys.executable).with_name("bootlog"))
    base = {**os.environ, "BOOTLOG_DB": str(db)}
    unit = {
        "PATH": os.environ["PATH"],
        "BOOTLOG_DB": str(db),
        "HOME": str(tmp_path / "unit-home"),
        **podman_env(),
    }  # (Environment= lines of the drop-in; no TTY, no LANG, no XDG_*)
    seeds = sorted(str(p.relative_to(clone)) for p in (clone / "fixtures/logs/seed").glob("*.log"))
    got = subprocess.run(
        [bootlog, "ingest", "--container", name, *seeds],
        cwd=clone,
        env=base,
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
    )
    assert got.returncode == 0, got.stderr
    g = (clone / "fixtures/logs/seed/04-shape-g-kv-400700-no-prefix-cache.log").read_bytes()
    replayer.start([all_at_once(unstamped(g))], name=name)

    def answers(cwd, env, plan: str) -> dict:
        def run(*args):
            p = subprocess.run(
                [bootlog, *args],
                cwd=cwd,
                env=env,
                capture_output=True,
                text=True,
                stdin=subprocess.DEVNULL,
                timeout=120,
            )
            return p.returncode, p.stdout, p.stderr

        code, out, err = run(
            "hook", "--container", name, "--plan", plan, "--poll", "0.2", "--timeout", "60", "--format", "json"
        )
        hook = json.loads(out)
        report = run("report", "--plan", plan, "--container", name, "--last", "3")
        page = re.sub(r"generated [0-9: -]+ UTC", "", report[1])
        return {
            "hook": (
                code,
                hook["verdict"],
                hook.get("why"),
                hook["boot"]["id"],
                hook["prev"],
                hook["check"],
                hook["diff"],
                err,
            ),
            "check": run("check", "last", "--plan", plan, "--container", name),
            "diff": run("diff", "last", "prev", "--plan", plan, "--container", name),
            "report": (report[0], page, report[2]),
        }

    plan = "fixtures/plans/frank-primary.toml"
    here = answers(clone, base, plan)
    there = answers("/", base, str(clone / plan))
    systemd = answers("/", unit, str(clone / plan))
    assert here["hook"][:2] == (0, "OK"), here["hook"][:3]
    assert here["check"][0] == 0 and "source no longer readable" not in here["check"][1]
    assert '<span class="verdict">OK</span>' in here["report"][1] and "times in UTC" in here["report"][1]
    for key in ("hook", "check", "diff", "report"):
        assert there[key] == here[key], key
        assert systemd[key] == here[key], key
