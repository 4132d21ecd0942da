"""`bootlog db …` and `bootlog prune` on a database built from a real log."""

from __future__ import annotations

import json
import os
import sqlite3
import stat

from click.testing import CliRunner

from bootlog.cli import cli
from paths import FIXTURES

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
    assert any(m["name"] == "kv_cache_tokens" for m in shown["metrics"])  # figures are kept


def test_check_reports_a_stale_schema(tmp_path):
    db = tmp_path / "b.db"
    run(db, "ingest", str(LOG))
    with sqlite3.connect(db) as con:
        con.execute("update alembic_version set version_num='0000_old'")
    res = run(db, "db", "check")
    assert res.exit_code == 1 and "not the newest" in res.stdout


def test_status_and_check_of_a_missing_or_damaged_file_are_one_line(tmp_path):
    missing = tmp_path / "none.db"
    for cmd in (("db", "status"), ("db", "check")):
        res = run(missing, *cmd)
        assert (
            res.exit_code == 1 and res.stderr == f"bootlog: no database at {missing} (bootlog ingest LOG creates it)\n"
        )
    assert not missing.exists()  # not created empty by looking at it
    # a real database cut short mid-file: its pages are gone
    good = tmp_path / "good.db"
    assert run(good, "ingest", str(FIXTURES / "020-v0.11.2-metrics-heavy.log")).exit_code == 0
    cut = tmp_path / "cut.db"
    cut.write_bytes(good.read_bytes()[: good.stat().st_size // 2])
    res = run(cut, "db", "check")
    assert res.exit_code == 1 and "internal error" not in res.output and "Traceback" not in res.output
    assert res.stdout.strip() and all(len(line) < 300 for line in res.output.splitlines())
    # random bytes where a database should be
    junk = tmp_path / "junk.db"
    junk.write_bytes(os.urandom(20000))
    res = run(junk, "db", "check")
    assert res.exit_code == 1 and res.stdout == "cannot read the database: file is not a database\n"


def test_a_reingest_does_not_undo_prune(tmp_path):
    # prune deletes a boot's runtime samples; reading the same lines again (stdin, a copy) must
    # add nothing, not rewrite the boot with its samples back
    db = tmp_path / "p.db"
    log = FIXTURES / "020-v0.11.2-metrics-heavy.log"
    assert run(db, "ingest", str(log)).exit_code == 0
    assert run(db, "prune", "--keep-last", "0").stdout.startswith("deleted 279 runtime samples")
    with sqlite3.connect(db) as con:
        before = con.execute("select id, ingested_at from boots").fetchall()
    copy = tmp_path / "copy.log"
    copy.write_bytes(log.read_bytes())
    res = CliRunner().invoke(cli, ["--db", str(db), "ingest", "-"], input=log.read_bytes())
    assert res.exit_code == 0 and "[already stored]" in res.stdout
    assert "[already stored]" in run(db, "ingest", str(copy)).stdout
    with sqlite3.connect(db) as con:
        assert con.execute("select count(*) from sample_chunks").fetchone() == (0,)
        assert con.execute("select id, ingested_at from boots").fetchall() == before
        assert con.execute("select count(*) from metrics").fetchone()[0] > 0  # figures stay


def test_a_sqlite_file_of_another_application_is_refused_untouched(tmp_path):
    import sqlite3

    from click.testing import CliRunner

    from bootlog.cli import cli
    from paths import FIXTURES

    other = tmp_path / "app.db"
    with sqlite3.connect(other) as con:
        con.execute("create table customers (id integer)")
    for args in (["list"], ["ingest", str(FIXTURES / "012-v0.10.2-v1-small.log")], ["db", "status"], ["db", "upgrade"]):
        res = CliRunner().invoke(cli, ["--db", str(other), *args])
        assert res.exit_code == 1 and "not a bootlog database" in res.stderr, (args, res.output)
    with sqlite3.connect(other) as con:
        assert [r[0] for r in con.execute("select name from sqlite_master where type = 'table'")] == ["customers"]
        assert con.execute("pragma journal_mode").fetchone()[0] != "wal"


READS = (
    ["list"],
    ["show", "last"],
    ["diff"],
    ["history"],
    ["export", "--format", "json"],
    ["report"],
    ["check", "last", "--plan", str(FIXTURES.parent / "plans" / "frank-primary.toml")],
)


def _tables(url: str) -> list[str]:
    if url.startswith("postgresql"):
        import psycopg

        schema = url.rsplit("search_path%3D", 1)[1]
        with psycopg.connect("postgresql://" + url.split("://", 1)[1].split("?", 1)[0]) as con:
            return [
                r[0]
                for r in con.execute(
                    "SELECT table_name FROM information_schema.tables WHERE table_schema = %s", (schema,)
                )
            ]
    with sqlite3.connect(url.removeprefix("sqlite:///")) as con:
        return [r[0] for r in con.execute("select name from sqlite_master where type = 'table'")]


def test_read_commands_never_create_the_schema(tmp_path):
    """`bootlog --db postgresql://…/test list` on an empty database made bootlog's tables there
    (and an empty SQLite file got them too): a read command says there is no bootlog database."""
    from pgutil import pg_base_url, pg_schema

    empty = tmp_path / "empty.db"
    empty.touch()
    urls = [f"sqlite:///{empty}"]
    schemas = pg_schema(pg_base_url()) if pg_base_url() else None
    if schemas is not None:
        urls.append(schemas.__enter__())
    try:
        for url in urls:
            for args in READS:
                res = run(url, *args)
                assert res.exit_code == 1, (url, args, res.output)
                assert res.stderr.startswith("bootlog: no bootlog database in "), res.stderr
                assert "bootlog ingest" in res.stderr and res.stderr.count("\n") == 1
            assert _tables(url) == [], url
            # the first write creates it, as the contract says
            assert run(url, "ingest", str(LOG)).exit_code == 0
            assert run(url, "list").exit_code == 0
    finally:
        if schemas is not None:
            schemas.__exit__(None, None, None)
