"""`--db` after the subcommand (`bootlog diff --db X last prev`) means what it means before it."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys

from click.testing import CliRunner

from bootlog.cli import cli
from paths import ROOT

SEED = ROOT / "fixtures" / "logs" / "seed"
SHAPE_D, SHAPE_G = SEED / "01-shape-d-fp8-200704x3.log", SEED / "04-shape-g-kv-400700-no-prefix-cache.log"


def invoke(*args, env=None):
    return CliRunner().invoke(cli, list(args), env=env, catch_exceptions=False)


def boots_in(db) -> int:
    with sqlite3.connect(db) as con:
        return con.execute("SELECT count(*) FROM boots").fetchone()[0]


def test_db_after_the_subcommand_is_the_same_database_as_before_it(tmp_path):
    after, before = str(tmp_path / "after.db"), str(tmp_path / "before.db")
    assert invoke("ingest", str(SHAPE_D), str(SHAPE_G), "--db", after).exit_code == 0
    assert invoke("--db", before, "ingest", str(SHAPE_D), str(SHAPE_G)).exit_code == 0
    assert boots_in(after) == boots_in(before) == 2
    # the seed notes' shape G moved KV from 398,658 to 401,408 tokens: a diff exits 3 either way
    a = invoke("diff", "--db", after, "last", "prev", "--json")
    b = invoke("--db", before, "diff", "last", "prev", "--json")
    assert a.exit_code == b.exit_code
    assert json.loads(a.stdout) == json.loads(b.stdout)
    kv = [f for f in json.loads(a.stdout)["findings"] if f["key"] == "kv_cache_tokens"]
    assert [(f["old"], f["new"]) for f in kv] == [(398658, 401408)]
    # a nested group's commands take it too, and so does the `db` group itself
    assert invoke("db", "path", "--db", after).stdout.strip() == after
    assert invoke("db", "--db", after, "path").stdout.strip() == after
    assert invoke("list", "--json", "--db", after).stdout == invoke("--db", after, "list", "--json").stdout


def test_db_after_the_subcommand_wins_over_the_environment_and_must_agree_with_the_root(tmp_path):
    mine, other = str(tmp_path / "mine.db"), str(tmp_path / "other.db")
    assert invoke("ingest", str(SHAPE_G), "--db", mine).exit_code == 0
    assert invoke("ingest", str(SHAPE_G), str(SHAPE_D), "--db", other).exit_code == 0
    shown = invoke("list", "--json", "--db", mine, env={"BOOTLOG_DB": other})
    assert len(json.loads(shown.stdout)) == 1
    # the same database at both places is fine; two different ones is a usage error, not a guess
    assert invoke("--db", mine, "list", "--db", mine).exit_code == 0
    res = invoke("--db", other, "list", "--db", mine)
    assert res.exit_code == 2 and "--db given twice with different databases" in res.stderr
    # (a URL's password is never echoed)
    res = invoke("--db", "postgresql+psycopg://u:s3cret@127.0.0.1/x", "list", "--db", mine)
    assert res.exit_code == 2 and "s3cret" not in res.output + res.stderr
    empty = invoke("show", "--db", "", "last")
    assert empty.exit_code == 2 and "--db is empty" in empty.stderr
    assert boots_in(mine) == 1 and boots_in(other) == 2


def test_the_console_script_takes_db_after_the_subcommand(tmp_path):
    db = str(tmp_path / "b.db")
    run = [sys.executable, "-m", "bootlog.cli"]
    assert subprocess.run([*run, "ingest", str(SHAPE_G), "--db", db], capture_output=True).returncode == 0
    res = subprocess.run([*run, "show", "last", "--json", "--db", db], capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout)["boot"]["source"] == str(SHAPE_G)
