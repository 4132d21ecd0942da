"""`bootlog db …` and `bootlog prune` on a database built from a real log."""
from __future__ import annotations

import json
import os
import sqlite3
import stat

from click.testing import CliRunner

from bootlog.cli import cli
from conftest import FIXTURES

LOG = FIXTURES / "005-v0.8.4-v1-tp2.log"


def run(db, *args):
    return CliRunner().invoke(cli, ["--db", str(db), *args], catch_exceptions=False)


def test_status_check_backup_prune(tmp_path):
    db = tmp_path / "b.db"
    assert run(db, "ingest", str(LOG)).exit_code == 0
    st = json.loads(run(db, "db", "status", "--json").stdout)
    assert st["up_to_date"] and st["rows"]["boots"] == 1 and st["rows"]["samples"] == 62
    assert run(db, "db", "path").stdout.strip() == str(db)
    res = run(db, "db", "check")
    assert res.exit_code == 0 and res.stdout.strip() == "ok"

    bak = tmp_path / "copy.db"
    assert run(db, "db", "backup", str(bak)).exit_code == 0
    assert stat.S_IMODE(os.stat(bak).st_mode) == 0o600
    with sqlite3.connect(bak) as con:
        assert con.execute("select count(*) from metrics").fetchone()[0] > 0
    again = run(db, "db", "backup", str(bak))
    assert again.exit_code == 1 and "exists" in again.stderr

    res = run(db, "prune", "--keep-last", "0")
    assert res.exit_code == 0 and "62 runtime samples" in res.stdout
    shown = json.loads(run(db, "show", "last", "--json").stdout)
    assert shown["runtime"]["stats_lines"] == 0
    assert any(m["name"] == "kv_cache_tokens" for m in shown["metrics"])   # figures are kept


def test_check_reports_a_stale_schema(tmp_path):
    db = tmp_path / "b.db"
    run(db, "ingest", str(LOG))
    with sqlite3.connect(db) as con:
        con.execute("update alembic_version set version_num='0000_old'")
    res = run(db, "db", "check")
    assert res.exit_code == 1 and "not the newest" in res.stdout
