"""store/lite.py: a re-ingest through sqlite3 alone writes exactly the rows the SQLAlchemy store writes."""
from __future__ import annotations

import sqlite3
import subprocess
import sys

import pytest

from bootlog import ingest as ingest_mod
from bootlog.ingest import ingest
from bootlog.store import lite
from bootlog.store.db import open_db
from bootlog.store.models import Base
from conftest import FIXTURES

LOGS = ["014-v0.10.2-nohup-multiboot.log", "020-v0.11.2-metrics-heavy.log", "042-v0.22.0-llm.log",
        "053-dev-build-nohup-8-boots.log", "seed/07-5x262144-runtime-oom.log",
        "seed/08-gdn-hip-burst-prefix-caching.log", "seed/09-night-ladder-4-boots.log"]
VOLATILE = {"ingested_at", "updated", "created"}  # wall-clock stamps of the write itself


def dump(path) -> dict[str, list[tuple]]:
    """Every table's rows (ids included), minus the write-time stamps."""
    conn = sqlite3.connect(path)
    out = {}
    for table in ("sources", "boots", "metrics", "config", "events", "samples", "positions"):
        cur = conn.execute(f"SELECT * FROM {table} ORDER BY 1, 2")
        keep = [i for i, d in enumerate(cur.description) if d[0] not in VOLATILE]
        out[table] = [tuple(r[i] for i in keep) for r in cur.fetchall()]
    conn.close()
    return out


def lite_store(db_path):
    store = lite.open_lite(str(db_path), lambda: open_db(str(db_path)))
    assert store is not None
    return store


def grow(tmp_path, name: str, data: bytes, cuts: list[int], use_lite: bool):
    log = tmp_path / f"{name}.log"
    db = tmp_path / f"{name}.db"
    open_db(str(db)).dispose()
    done, used = 0, []
    for cut in cuts + [len(data)]:
        with open(log, "ab") as f:
            f.write(data[done:cut])
        done = cut
        store = lite_store(db) if use_lite else open_db(str(db))
        ingest(store, str(log))
        if use_lite:
            used.append(store._engine is None)  # the write needed no SQLAlchemy
            store.close()
            if store._engine is not None:
                store._engine.dispose()
        else:
            store.dispose()
    return db, log, used


def test_insert_columns_are_the_models_columns():
    for table, cols in (("metrics", lite._METRIC_COLS), ("events", lite._EVENT_COLS),
                        ("samples", lite._SAMPLE_COLS)):
        model_cols = {c.name for c in Base.metadata.tables[table].columns} - {"id"}
        assert set(cols) == model_cols, table


@pytest.mark.parametrize("aligned", [True, False], ids=["at-line-ends", "mid-line"])
@pytest.mark.parametrize("name", LOGS)
def test_growing_log_same_rows_either_store(tmp_path, name, aligned):
    data = (FIXTURES / name).read_bytes()
    n = len(data)
    cuts = sorted({n // 7, n // 3 + 17, n // 2, (2 * n) // 3 + 5, n - 200})
    if aligned:  # a writer that flushes whole lines (the usual case): every re-read resumes
        cuts = sorted({data.index(b"\n", c) + 1 for c in cuts})
    a = tmp_path / "a"
    b = tmp_path / "b"
    a.mkdir()
    b.mkdir()
    db_lite, log, used = grow(a, "g", data, cuts, use_lite=True)
    db_full, _, _ = grow(b, "g", data, cuts, use_lite=False)
    got, want = dump(db_lite), dump(db_full)
    # the source name is the log's path, which differs between the two directories
    for rows in (got["sources"], want["sources"]):
        rows[:] = [tuple(str(x).replace(str(a), "D").replace(str(b), "D") for x in r) for r in rows]
    for rows in (got["positions"], want["positions"]):
        rows[:] = [tuple(str(x).replace(str(a), "D").replace(str(b), "D") for x in r) for r in rows]
    assert got == want
    assert got["samples"] or got["events"]
    if aligned and name != "053-dev-build-nohup-8-boots.log":  # (053's last boot is still starting)
        assert any(used), "no read of this growing log took the sqlite3-only path"


def test_runtime_tail_is_written_without_sqlalchemy(tmp_path):
    data = (FIXTURES / "seed/07-5x262144-runtime-oom.log").read_bytes()
    cut = data.index(b"\n", data.index(b"Application startup complete")) + 1
    db, log, used = grow(tmp_path, "g", data, [cut], use_lite=True)
    assert used == [False, True]  # the first read creates boots (full store), the tail only extends
    rows = dump(db)
    oom = [e for e in rows["events"] if e[3] == "oom"]
    assert oom and len(rows["boots"]) == 1 and rows["boots"][0][5] == "oom"  # failure column


def test_cli_reingest_does_not_import_sqlalchemy(tmp_path):
    data = (FIXTURES / "seed/07-5x262144-runtime-oom.log").read_bytes()
    cut = data.index(b"\n", data.index(b"Application startup complete")) + 1
    log, db = tmp_path / "g.log", tmp_path / "g.db"
    log.write_bytes(data[:cut])
    code = ("import sys; from bootlog.cli import cli; "
            "cli.main(sys.argv[1:], prog_name='bootlog', standalone_mode=False); "
            "print('SQLALCHEMY' if 'sqlalchemy' in sys.modules else 'LEAN')")
    run = lambda: subprocess.run([sys.executable, "-c", code, "--db", str(db), "ingest", str(log)],
                                 capture_output=True, text=True, check=True).stdout
    assert "SQLALCHEMY" in run()  # first read: new boot, full store
    with open(log, "ab") as f:
        f.write(data[cut:])
    out = run()
    assert "extended with lines" in out and "runtime failure: oom" in out and out.rstrip().endswith("LEAN")
    assert "nothing new" in run()


def test_another_ingest_first_means_read_again(tmp_path, monkeypatch):
    """Two re-ingests of the same grown file at once: the second to write finds the position
    moved and reads again, so the new lines are stored once."""
    data = (FIXTURES / "seed/07-5x262144-runtime-oom.log").read_bytes()
    cut = data.index(b"\n", data.index(b"Application startup complete")) + 1
    log, db = tmp_path / "g.log", tmp_path / "g.db"
    log.write_bytes(data[:cut])
    engine = open_db(str(db))
    ingest(engine, str(log))
    with open(log, "ab") as f:
        f.write(data[cut:])
    real = ingest_mod._parse
    calls = []

    def racing(*a, **k):
        out = real(*a, **k)
        if not calls:
            calls.append(1)
            ingest(engine, str(log))  # the other process stores the tail meanwhile
        return out

    monkeypatch.setattr(ingest_mod, "_parse", racing)
    store = lite_store(db)
    res = ingest(store, str(log))
    assert res.up_to_date
    once = tmp_path / "once.db"
    ingest(open_db(str(once)), str(log))
    got, want = dump(db), dump(once)
    assert len(got["samples"]) == len(want["samples"]) and len(got["events"]) == len(want["events"])


def test_no_lite_store_when_it_cannot_apply(tmp_path, monkeypatch):
    full = lambda: None
    assert lite.open_lite(str(tmp_path / "missing.db"), full) is None  # created by the full store
    assert lite.open_lite("postgresql+psycopg://u@h/db", full) is None
    junk = tmp_path / "junk.db"
    junk.write_bytes(b"not a database at all" * 100)
    assert lite.open_lite(str(junk), full) is None  # the full store reports what is wrong
    old = tmp_path / "old.db"
    open_db(str(old)).dispose()
    conn = sqlite3.connect(old)
    conn.execute("UPDATE alembic_version SET version_num = '0000_older'")
    conn.commit()
    conn.close()
    assert lite.open_lite(str(old), full) is None  # to be migrated by the full store
    ok = tmp_path / "ok.db"
    open_db(str(ok)).dispose()
    assert lite.open_lite(str(ok), full) is not None
    monkeypatch.setenv("BOOTLOG_NO_LITE", "1")
    assert lite.open_lite(str(ok), full) is None
