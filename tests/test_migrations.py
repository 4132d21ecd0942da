"""Alembic migrations: they are the one schema (a new database is made by running them), the
samples move to chunks and back, downgrades work, the head constant is the real head, and the
packaged migrations work from a non-editable install."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from alembic.config import Config
from alembic.script import ScriptDirectory

from bootlog.errors import StoreError
from bootlog.store import db as dbmod
from bootlog.store.housekeeping import check, expected_columns
from bootlog.store.reads import samples, show_boot
from bootlog.store.write import SourceInfo, save_boots
from pgutil import pg_base_url, pg_schema, seed_boot

BACKENDS = ["sqlite"] + (["postgresql"] if pg_base_url() else [])
ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(params=BACKENDS)
def url(request, tmp_path):
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path}/mig.db"
    else:
        with pg_schema(pg_base_url()) as u:
            yield u


def _script() -> ScriptDirectory:
    cfg = Config()
    cfg.set_main_option("script_location", dbmod.script_location())
    return ScriptDirectory.from_config(cfg)


def test_head_constant_is_the_script_head():
    assert _script().get_heads() == [dbmod.HEAD_REVISION], "bump HEAD_REVISION in bootlog/store/db.py"


def test_revisions_form_one_line_with_downgrades():
    revs = list(_script().walk_revisions())
    assert revs[-1].down_revision is None  # one base
    for rev in revs:
        assert not rev.is_merge_point and not rev.is_branch_point
        src = Path(rev.path).read_text()
        assert "def downgrade" in src and "\n    pass\n" not in src.split("def downgrade")[1]


def test_a_new_database_has_what_the_migrations_build(url):
    store = dbmod.open_store(url)
    try:
        assert dbmod.current_revision(store) == dbmod.HEAD_REVISION
        assert check(store) == []
        assert {"boots", "metrics", "config", "events", "sample_chunks", "positions", "sources"} <= set(
            expected_columns()
        )
    finally:
        store.close()


def test_samples_move_to_chunks_and_back(url):
    """0002 turns a database of sample rows (0001) into chunks, and its downgrade back: the
    operator's database of the last weeks is not lost to the upgrade."""
    store = dbmod.connect(url)
    dbmod.migrate(store, "0001_initial")
    boot = seed_boot(0)
    store.execute('INSERT INTO sources ("key", name, kind, created) VALUES (?, ?, ?, ?)', ("k", "a.log", "file", "x"))
    bid = store.insert_id(
        "INSERT INTO boots (source_id, status, first_line, last_line, fingerprint, config_hash, "
        "ingested_at) VALUES (1, 'ready', 1, 9, 'fp', 'h', 'x')",
        (),
    )
    old = [(s.line, s.ts, s.values) for s in boot.samples]
    store.executemany(
        'INSERT INTO samples (boot_id, line, ts, "values") VALUES (?, ?, ?, ?)',
        [(bid, line, ts, json.dumps(v)) for line, ts, v in old],
    )
    dbmod.migrate(store, "head")
    assert [(s.line, s.ts, s.values) for _, s in samples(store, [bid])] == old
    assert show_boot(store, bid)["runtime"]["stats_lines"] == 3
    dbmod.migrate(store, "0001_initial", down=True)
    back = store.rows('SELECT line, ts, "values" FROM samples ORDER BY line')
    assert [(line, ts, v if isinstance(v, dict) else json.loads(v)) for line, ts, v in back] == old
    store.close()


def test_downgrade_to_base_then_upgrade_again(url):
    store = dbmod.open_store(url)
    try:
        save_boots(store, SourceInfo("a.log", "file"), [seed_boot(0)])
        dbmod.migrate(store, "base", down=True)
        assert dbmod.current_revision(store) is None
        dbmod.migrate(store)
        assert dbmod.current_revision(store) == dbmod.HEAD_REVISION
        assert check(store) == []
    finally:
        store.close()


def test_open_store_upgrades_an_old_database(url):
    store = dbmod.connect(url)
    dbmod.migrate(store, "0001_initial")
    store.close()
    store = dbmod.open_store(url)  # the user just runs a command; the schema follows
    try:
        assert dbmod.current_revision(store) == dbmod.HEAD_REVISION
        [(bid, _)] = save_boots(store, SourceInfo("a.log", "file"), [seed_boot(0)])
        assert show_boot(store, bid)["boot"]["status"] == "ready"
    finally:
        store.close()


def test_offline_sql_renders_for_postgresql(capsys):
    from alembic import command

    cfg = Config()
    cfg.set_main_option("script_location", dbmod.script_location())
    cfg.set_main_option("sqlalchemy.url", "postgresql+psycopg://u@h/db")
    command.upgrade(cfg, "head", sql=True)
    out = capsys.readouterr().out
    assert "CREATE TABLE boots" in out and "uq_boots_fingerprint" in out and "CREATE TABLE sample_chunks" in out


def test_migrations_work_from_a_non_editable_install(tmp_path):
    target = tmp_path / "site"
    build = subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(target), str(ROOT)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    if build.returncode != 0:
        pytest.skip("cannot build a wheel here (offline?): " + build.stderr.strip()[-200:])
    code = (
        "import sys, bootlog.store.db as d;"
        "assert d.__file__.startswith(sys.argv[2]), d.__file__;"
        "e = d.open_store(sys.argv[1]); print(d.current_revision(e))"
    )
    env = dict(os.environ, PYTHONPATH=str(target))
    out = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path / "x.db"), str(target)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == dbmod.HEAD_REVISION


def test_schema_from_a_newer_bootlog_is_refused_clearly(url):
    store = dbmod.open_store(url)
    store.execute("UPDATE alembic_version SET version_num = '0099_future'")
    store.close()
    with pytest.raises(StoreError, match="0099_future is newer than this bootlog"):
        dbmod.open_store(url)


def test_0004_orders_starts_at_the_edge_of_the_date_range(url):
    """A 0003 database holding a start stamped at the edge of the range (a log said
    9999-12-31T23:59:59-23:59, past year 9999 in UTC): 0004's start_key failed with OverflowError,
    the database could not be upgraded and every command failed."""
    store = dbmod.connect(url)
    dbmod.migrate(store, "0003_deploys")
    store.execute('INSERT INTO sources ("key", name, kind, created) VALUES (?, ?, ?, ?)', ("k", "a.log", "file", "x"))
    starts = ["9999-12-31T23:59:59.999999-23:59", "2026-10-02T09:53:01-07:00", "0001-01-01T00:00:00+23:59"]
    for i, started in enumerate(starts):
        store.execute(
            "INSERT INTO boots (source_id, status, started_at, first_line, last_line, fingerprint, "
            "config_hash, ingested_at) VALUES (1, 'ready', ?, ?, ?, ?, 'h', 'x')",
            (started, i, i, f"fp{i}"),
        )
    dbmod.migrate(store, "head")
    keys = dict(store.rows("SELECT started_at, start_key FROM boots"))
    assert keys == {
        starts[0]: "9999-12-31T23:59:59.999999",
        starts[1]: "2026-10-02T16:53:01.000000",
        starts[2]: "0001-01-01T00:00:00.000000",
    }
    from bootlog.store.reads import list_boots

    assert [b["started_at"] for b in list_boots(store)] == starts[::-1]  # (start order)
    store.close()
