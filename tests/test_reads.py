"""store/reads.py: one implementation of the deploy-check reads, two executors.

`diff` and `check` on a SQLite file read through a bare sqlite3 connection (store/lite.py
open_reader, no SQLAlchemy import); everything else reads through SQLAlchemy (queries.py).  Both
must answer every ref, show and history question identically, errors included.
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from bootlog.errors import BootlogError
from bootlog.ingest import ingest, parse_source
from bootlog.sources import open_source
from bootlog.store import reads
from bootlog.store.db import open_db
from bootlog.store.lite import open_reader, reader_fetch
from bootlog.store.queries import boots_like, resolve_ref, save_boots, show_boots
from bootlog.store.rows import SourceInfo
from conftest import FIXTURES

SEEDS = sorted((FIXTURES / "seed").glob("*.log"))
PLAN = Path(__file__).resolve().parents[1] / "fixtures" / "plans" / "frank-primary.toml"


@pytest.fixture(scope="module")
def db(tmp_path_factory) -> Path:
    """Seed logs as files (two hosts), the same boots again as two containers' sources, and a
    few corpus fixtures: every grouping rule of resolve_ref and boots_like has boots to find."""
    path = tmp_path_factory.mktemp("reads") / "r.db"
    engine = open_db(str(path))
    try:
        for i, log in enumerate(SEEDS):
            ingest(engine, str(log), host="alpha" if i % 2 else "beta")
        for i, log in enumerate(SEEDS[:6]):
            boots = parse_source(open_source(str(log)))
            for b in boots:
                b.fingerprint = f"{b.fingerprint}-c{i % 2}"  # stored again: other boots
            save_boots(engine, SourceInfo(f"podman:c{i % 2}", "container", container=f"c{i % 2}", host="alpha"),
                       boots)
        for log in sorted(FIXTURES.glob("0[0-2]*.log"))[:6]:
            ingest(engine, str(log))
    finally:
        engine.dispose()
    return path


def _answer(fn):
    try:
        return ("ok", fn())
    except BootlogError as err:
        return (type(err).__name__, str(err))


def test_both_executors_answer_alike(db):
    engine = open_db(str(db))
    conn = open_reader(str(db))
    assert conn is not None
    fetch = reader_fetch(conn)
    try:
        ids = [r[0] for r in conn.execute("SELECT id FROM boots ORDER BY id")]
        assert len(ids) > 25
        refs = ["last", "prev", "last~1", "prev~2", "last~7", "last~999", "nonsense", "", str(ids[0]),
                str(ids[-1]), "999999"]
        filters = [(None, None), ("c0", None), ("c1", "alpha"), (None, "alpha"), (None, "beta"), ("nope", None),
                   (None, "nope")]
        n = 0
        for ref in refs:
            for container, host in filters:
                lean = _answer(lambda: reads.resolve_ref(fetch, ref, container, host))
                full = _answer(lambda: resolve_ref(engine, ref, container=container, host=host))
                assert lean == full, (ref, container, host)
                n += lean[0] == "ok"
        assert n > 20
        for bid in ids:
            assert reads.boots_like(fetch, bid) == boots_like(engine, bid), bid
        assert any(len(boots_like(engine, bid)) >= 2 for bid in ids)
        for runtime in (True, False):
            assert reads.show_boots(fetch, ids, runtime=runtime) == show_boots(engine, ids, runtime=runtime)
        assert _answer(lambda: reads.show_boots(fetch, [ids[0], 999999])) == \
            _answer(lambda: show_boots(engine, [ids[0], 999999]))
    finally:
        conn.close()
        engine.dispose()


def _cli(db: Path, *args: str, lean: bool = True) -> tuple[int, str, str]:
    code = ("import sys; from bootlog.cli import cli\n"
            "try:\n    cli.main(sys.argv[1:], prog_name='bootlog')\n"
            "except SystemExit as e:\n    code = e.code\n"
            "print('SQLALCHEMY' if 'sqlalchemy' in sys.modules else 'LEAN')\nsys.exit(code)")
    env = dict(os.environ)
    env.pop("BOOTLOG_NO_LITE", None)
    if not lean:
        env["BOOTLOG_NO_LITE"] = "1"
    p = subprocess.run([sys.executable, "-c", code, "--db", str(db), *args], capture_output=True, text=True, env=env)
    return p.returncode, p.stdout, p.stderr


@pytest.mark.parametrize("args", [
    ("diff",), ("diff", "last", "prev", "--json"), ("diff", "last~1", "last~4", "--markdown"),
    ("diff", "last", "prev", "--container", "c0"), ("diff", "last", "nope"),
    ("check", "last", "--plan", str(PLAN), "--json"), ("check", "prev", "--plan", str(PLAN), "--host", "alpha"),
])
def test_diff_and_check_read_without_sqlalchemy_and_say_the_same(db, args):
    rc, out, err = _cli(db, *args)
    rc_full, out_full, err_full = _cli(db, *args, lean=False)
    assert out.rstrip().endswith("LEAN") and out_full.rstrip().endswith("SQLALCHEMY")
    assert (rc, out.rstrip()[:-4], err) == (rc_full, out_full.rstrip()[:-10], err_full)
    assert rc in (0, 1, 3, 4) and "Traceback" not in err  # (1: a ref that names no boot)


def test_a_database_needing_the_full_store_is_not_read_lean(tmp_path):
    assert open_reader(str(tmp_path / "missing.db")) is None  # created (and migrated) by the full store
    (tmp_path / "junk.db").write_bytes(b"not a database at all" * 100)
    assert open_reader(str(tmp_path / "junk.db")) is None  # the full store says what is wrong
    rc, _, err = _cli(tmp_path / "junk.db", "diff")
    assert rc != 0 and err.startswith("bootlog: ") and "Traceback" not in err


def test_show_lists_metrics_in_log_order(db):
    # the contract: "metrics lists every extracted value in log order"; derived figures
    # (boot_to_ready_s at the ready line, kv_* at the KV line) are stored after the rest
    from bootlog.store.queries import list_boots, show_boot

    engine = open_db(str(db))
    try:
        ids = [b["id"] for b in list_boots(engine)]
        derived = 0
        for bid in ids:
            rows = show_boot(engine, bid)["metrics"]
            lines = [m["line"] for m in rows if m["line"] is not None]
            assert lines == sorted(lines), bid
            assert all(m["line"] is None for m in rows[len(lines):])
            derived += sum(m["name"] in ("boot_to_ready_s", "kv_bytes_per_token", "kv_margin_tokens") for m in rows)
        assert derived > 10
    finally:
        engine.dispose()
