"""Alembic migrations: the migrated schema is the models' schema, downgrades work, the fast-path
head constant is the real head, and the packaged migrations work from a non-editable install."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from alembic.script import ScriptDirectory
from sqlalchemy import inspect, text

from bootlog.errors import StoreError

from bootlog.store import db as dbmod
from bootlog.store.housekeeping import schema_diffs
from bootlog.store.models import Base
from bootlog.store.queries import SourceInfo, save_boots, show_boot
from bootlog.store.testing import pg_base_url, pg_schema, seed_boot

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
    return ScriptDirectory.from_config(dbmod.alembic_config())


def test_head_constant_is_the_script_head():
    heads = _script().get_heads()
    assert heads == [dbmod.HEAD_REVISION], "bump HEAD_REVISION in bootlog/store/where.py with each migration"


def test_revisions_form_one_line_with_downgrades():
    revs = list(_script().walk_revisions())
    assert revs[-1].down_revision is None  # one base
    for rev in revs:
        assert not rev.is_merge_point and not rev.is_branch_point
        src = Path(rev.path).read_text()
        assert "def downgrade" in src and "\n    pass\n" not in src.split("def downgrade")[1]


def test_migrated_schema_equals_models(url):
    eng = dbmod.open_db(url)
    try:
        assert dbmod.current_revision(eng) == dbmod.HEAD_REVISION
        assert schema_diffs(eng) == []  # what `alembic check` would say
        names = set(inspect(eng).get_table_names())
        assert set(Base.metadata.tables) <= names and "alembic_version" in names
        # the naming convention reached the database (batch migrations on SQLite depend on it)
        uqs = {u["name"] for u in inspect(eng).get_unique_constraints("boots")}
        assert "uq_boots_fingerprint" in uqs
    finally:
        eng.dispose()


def test_downgrade_newest_then_upgrade_again(url):
    eng = dbmod.open_db(url)
    try:
        save_boots(eng, SourceInfo("a.log", "file"), [seed_boot(0)])
        newest = _script().get_revision(dbmod.HEAD_REVISION)
        target = newest.down_revision or "base"
        dbmod.downgrade(eng, target)
        assert dbmod.current_revision(eng) == (None if target == "base" else target)
        if target == "base":
            assert not set(Base.metadata.tables) & set(inspect(eng).get_table_names())
        dbmod.upgrade(eng)
        assert dbmod.current_revision(eng) == dbmod.HEAD_REVISION
        assert schema_diffs(eng) == []
    finally:
        eng.dispose()


def test_open_db_upgrades_an_old_database(url):
    eng = dbmod.make_engine(dbmod.resolve_url(url))
    newest = _script().get_revision(dbmod.HEAD_REVISION)
    dbmod.upgrade(eng, newest.down_revision or "base")
    eng.dispose()
    eng = dbmod.open_db(url)  # the user just runs a command; the schema follows
    try:
        assert dbmod.current_revision(eng) == dbmod.HEAD_REVISION
        [(bid, _)] = save_boots(eng, SourceInfo("a.log", "file"), [seed_boot(0)])
        assert show_boot(eng, bid)["boot"]["status"] == "ready"
    finally:
        eng.dispose()


def test_offline_sql_renders_for_postgresql(tmp_path, capsys):
    from alembic import command

    cfg = dbmod.alembic_config()
    cfg.set_main_option("sqlalchemy.url", "postgresql+psycopg://u@h/db")
    command.upgrade(cfg, "head", sql=True)
    out = capsys.readouterr().out
    assert "CREATE TABLE boots" in out and "uq_boots_fingerprint" in out


def test_migrations_work_from_a_non_editable_install(tmp_path):
    target = tmp_path / "site"
    build = subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(target), str(ROOT)],
        capture_output=True, text=True, cwd=tmp_path,
    )
    if build.returncode != 0:
        pytest.skip("cannot build a wheel here (offline?): " + build.stderr.strip()[-200:])
    code = (
        "import sys, bootlog.store.db as d;"
        "assert d.__file__.startswith(sys.argv[2]), d.__file__;"
        "e = d.open_db(sys.argv[1]); print(d.current_revision(e))"
    )
    env = dict(os.environ, PYTHONPATH=str(target))
    out = subprocess.run([sys.executable, "-c", code, str(tmp_path / "x.db"), str(target)],
                         capture_output=True, text=True, cwd=tmp_path, env=env)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == dbmod.HEAD_REVISION


def test_schema_from_a_newer_bootlog_is_refused_clearly(url):
    eng = dbmod.open_db(url)
    with eng.begin() as conn:
        conn.execute(text("UPDATE alembic_version SET version_num = '0099_future'"))
    eng.dispose()
    with pytest.raises(StoreError, match="0099_future is newer than this bootlog"):
        dbmod.open_db(url)
