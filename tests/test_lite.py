"""store/lite.py: `ingest` through sqlite3 alone writes exactly the tables the SQLAlchemy store writes."""
from __future__ import annotations

import os
import sqlite3
import subprocess
import sys

import pytest

from bootlog import ingest as ingest_mod
from bootlog.errors import StoreError
from bootlog.ingest import ingest
from bootlog.store import lite
from bootlog.store import queries, samplerows
from bootlog.store.db import open_db
from bootlog.store.models import Base
from bootlog.store.where import PAGE_SIZE
from conftest import FIXTURES

ALL_LOGS = sorted(str(p.relative_to(FIXTURES)) for p in FIXTURES.rglob("*.log"))
GROWING = ["014-v0.10.2-nohup-multiboot.log", "020-v0.11.2-metrics-heavy.log", "042-v0.22.0-llm.log",
           "053-dev-build-nohup-8-boots.log", "seed/07-5x262144-runtime-oom.log",
           "seed/08-gdn-hip-burst-prefix-caching.log", "seed/09-night-ladder-4-boots.log"]
VOLATILE = {"ingested_at", "updated", "created"}  # wall-clock stamps of the write itself


def dump(path, *, strip: str = "") -> dict[str, list[tuple]]:
    """Every table's rows (ids included), minus the write-time stamps; `strip` is removed from
    text (the directory of the logs, which differs between the two runs compared)."""
    conn = sqlite3.connect(path)
    out = {}
    for table in ("sources", "boots", "metrics", "config", "events", "samples", "positions"):
        cur = conn.execute(f"SELECT * FROM {table} ORDER BY 1, 2")
        keep = [i for i, d in enumerate(cur.description) if d[0] not in VOLATILE]
        out[table] = [tuple(r[i].replace(strip, "D") if strip and isinstance(r[i], str) else r[i] for i in keep)
                      for r in cur.fetchall()]
    conn.close()
    return out


@pytest.fixture
def no_sqlalchemy_writes(monkeypatch):
    """Fail if a write meant for the lite store reaches the SQLAlchemy store."""
    def refuse(*a, **k):
        raise AssertionError("the SQLAlchemy store was used")
    monkeypatch.setattr(queries, "save_boots", refuse)


def lite_store(db_path) -> lite.Lite:
    store = lite.open_lite(str(db_path))
    assert store is not None
    return store


def run(tmp_path, sub: str, steps, use_lite: bool):
    """Ingest each (file name, bytes to append) step in turn into a new database."""
    d = tmp_path / sub
    d.mkdir()
    db = d / "t.db"
    for name, data in steps:
        log = d / name
        with open(log, "ab") as f:
            f.write(data)
        if use_lite:
            store = lite_store(db)
            ingest(store, str(log))
            store.close()
        else:
            eng = open_db(str(db))
            ingest(eng, str(log))
            eng.dispose()
    return dump(db, strip=str(d))


def both(tmp_path, steps, monkeypatch) -> tuple[dict, dict]:
    want = run(tmp_path, "full", steps, use_lite=False)

    def refuse(*a, **k):
        raise AssertionError("the SQLAlchemy store was used")
    with monkeypatch.context() as m:
        m.setattr(queries, "save_boots", refuse)
        got = run(tmp_path, "lite", steps, use_lite=True)
    return got, want


def test_schema_is_what_create_all_makes(tmp_path):
    open_db(str(tmp_path / "a.db")).dispose()
    lite_store(tmp_path / "b.db").close()
    master = lambda p: sqlite3.connect(p).execute(
        "SELECT type, name, tbl_name, sql FROM sqlite_master ORDER BY name").fetchall()
    assert master(tmp_path / "b.db") == master(tmp_path / "a.db")
    conn = sqlite3.connect(tmp_path / "b.db")
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert conn.execute("PRAGMA page_size").fetchone()[0] == PAGE_SIZE == 65536
    assert oct(os.stat(tmp_path / "b.db").st_mode & 0o777) == "0o600"


def test_insert_columns_are_the_models_columns():
    for table, cols in (("boots", lite._BOOT_COLS), ("metrics", lite._METRIC_COLS), ("events", lite._EVENT_COLS),
                        ("config", lite._CONFIG_COLS), ("samples", ("boot_id", *samplerows.SAMPLE_COLS))):
        model_cols = {c.name for c in Base.metadata.tables[table].columns} - {"id"}
        assert set(cols) == model_cols, table


@pytest.mark.parametrize("name", ALL_LOGS)
def test_every_fixture_same_tables_either_store(tmp_path, monkeypatch, name):
    data = (FIXTURES / name).read_bytes()
    # read twice: the second read stores nothing new, by either store
    got, want = both(tmp_path, [("x.log", data), ("x.log", b"")], monkeypatch)
    assert got == want
    assert got["boots"] or b"vllm" not in data.lower()


@pytest.mark.parametrize("aligned", [True, False], ids=["at-line-ends", "mid-line"])
@pytest.mark.parametrize("name", GROWING)
def test_growing_log_same_tables_either_store(tmp_path, monkeypatch, name, aligned):
    """Resumed reads (whole lines) and re-reads that replace a boot stored half-read (mid-line)."""
    data = (FIXTURES / name).read_bytes()
    n = len(data)
    cuts = sorted({n // 7, n // 3 + 17, n // 2, (2 * n) // 3 + 5, n - 200})
    if aligned:  # a writer that flushes whole lines (the usual case): every re-read resumes
        cuts = sorted({data.index(b"\n", c) + 1 for c in cuts})
    steps, done = [], 0
    for cut in cuts + [n]:
        steps.append(("g.log", data[done:cut]))
        done = cut
    got, want = both(tmp_path, steps, monkeypatch)
    assert got == want
    assert got["samples"] or got["events"]


def test_two_files_and_a_copy_same_tables_either_store(tmp_path, monkeypatch):
    a = (FIXTURES / "seed/09-night-ladder-4-boots.log").read_bytes()
    b = (FIXTURES / "014-v0.10.2-nohup-multiboot.log").read_bytes()
    got, want = both(tmp_path, [("a.log", a), ("b.log", b), ("copy-of-a.log", a)], monkeypatch)
    assert got == want
    assert len(got["sources"]) == 3


def test_runtime_tail_is_appended_to_the_stored_boot(tmp_path, no_sqlalchemy_writes):
    data = (FIXTURES / "seed/07-5x262144-runtime-oom.log").read_bytes()
    cut = data.index(b"\n", data.index(b"Application startup complete")) + 1
    log, db = tmp_path / "g.log", tmp_path / "g.db"
    log.write_bytes(data[:cut])
    [first] = ingest(lite_store(db), str(log))
    with open(log, "ab") as f:
        f.write(data[cut:])
    res = ingest(lite_store(db), str(log))
    assert res.resumed_at_line == data[:cut].count(b"\n") and [r.id for r in res] == [first.id]
    rows = dump(db)
    assert len(rows["boots"]) == 1 and rows["boots"][0][5] == "oom"  # the failure column
    assert [e for e in rows["events"] if e[3] == "oom"]


def _cli(db, log) -> str:
    code = ("import sys; from bootlog.cli import cli; "
            "cli.main(sys.argv[1:], prog_name='bootlog', standalone_mode=False); "
            "print('SQLALCHEMY' if 'sqlalchemy' in sys.modules else 'LEAN')")
    return subprocess.run([sys.executable, "-c", code, "--db", str(db), "ingest", str(log)],
                          capture_output=True, text=True, check=True).stdout


def test_cli_ingest_does_not_import_sqlalchemy(tmp_path):
    data = (FIXTURES / "seed/07-5x262144-runtime-oom.log").read_bytes()
    cut = data.index(b"\n", data.index(b"Application startup complete")) + 1
    log, db = tmp_path / "g.log", tmp_path / "g.db"
    log.write_bytes(data[:cut])
    out = _cli(db, log)  # a new database, a new boot
    assert "#1" in out and "[new]" in out and out.rstrip().endswith("LEAN")
    with open(log, "ab") as f:
        f.write(data[cut:])
    out = _cli(db, log)  # the grown file: read on
    assert "extended with lines" in out and "runtime failure: oom" in out and out.rstrip().endswith("LEAN")
    assert "nothing new" in _cli(db, log)
    shown = subprocess.run([sys.executable, "-c", "from bootlog.cli import main; main()", "--db", str(db), "list"],
                           capture_output=True, text=True)
    assert shown.returncode == 0 and "ready" in shown.stdout  # the SQLAlchemy reader reads it


@pytest.mark.parametrize("which", ["lite", "sqlalchemy"])
def test_another_ingest_first_means_read_again(tmp_path, monkeypatch, which):
    """Two re-ingests of the same grown file at once: the second to write finds the position
    moved and reads again, so the new lines are stored once (either store)."""
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
    res = ingest(lite_store(db) if which == "lite" else open_db(str(db)), str(log))
    assert res.up_to_date
    once = tmp_path / "once.db"
    ingest(open_db(str(once)), str(log))
    got, want = dump(db), dump(once)
    assert len(got["samples"]) == len(want["samples"]) and len(got["events"]) == len(want["events"])


def test_no_lite_store_when_it_cannot_apply(tmp_path, monkeypatch):
    assert lite.open_lite("postgresql+psycopg://u@h/db") is None
    junk = tmp_path / "junk.db"
    junk.write_bytes(b"not a database at all" * 100)
    assert lite.open_lite(str(junk)) is None  # the full store reports what is wrong
    old = tmp_path / "old.db"
    open_db(str(old)).dispose()
    conn = sqlite3.connect(old)
    conn.execute("UPDATE alembic_version SET version_num = '0000_older'")
    conn.commit()
    conn.close()
    assert lite.open_lite(str(old)) is None  # to be migrated by the full store
    ok = tmp_path / "ok.db"
    open_db(str(ok)).dispose()
    assert lite.open_lite(str(ok)) is not None
    with pytest.raises(StoreError, match="does not exist"):
        lite.open_lite(str(tmp_path / "no" / "such" / "dir.db"))
    monkeypatch.setenv("BOOTLOG_NO_LITE", "1")
    assert lite.open_lite(str(ok)) is None


def _boot(**kw):
    from datetime import datetime

    from bootlog.records import Boot, Event, Metric, Sample

    b = Boot(first_line=1, last_line=kw.pop("last", 50), fingerprint=kw.pop("fp", "fp-1"),
             started_at=datetime(2026, 9, 30, 9, 0, 0), vllm_version="0.22.0", model="m",
             config={"max_model_len": "200704"})
    b.metrics = [Metric("kv_cache_tokens", 398658.0, "tokens", 0, 10), Metric("bad", float("nan"), "x", None, 11)]
    b.samples = [Sample(30, None, {"running_reqs": 1.0})]
    for k, v in kw.items():
        setattr(b, k, v)
    if kw.get("events") == "one":
        b.events = [Event("oom", 40, 1, None, "HIP out of memory", {"requested_mib": 50.0})]
    return b


@pytest.mark.parametrize("second, replaced", [
    ({"status": "ready"}, True),  # same span: the stored copy was still starting
    ({"status": "incomplete", "events": "one"}, True),  # same span, a line more was whole
    ({"status": "incomplete", "last": 40}, False),  # a shorter read never replaces
    ({"status": "incomplete", "last": 60}, True),  # a longer one does
    ({"status": "incomplete", "fp": "fp-2"}, False),  # fingerprint moved, same start: the same boot, kept
])
def test_replace_rules_same_either_store(tmp_path, monkeypatch, second, replaced):
    src = queries.SourceInfo(name="x.log", kind="file", host="h")
    out = {}
    for which in ("full", "lite"):
        db = tmp_path / f"{which}.db"
        if which == "full":
            eng = open_db(str(db))
            save = lambda boots: queries.save_boots(eng, src, boots)
        else:
            store = lite_store(db)
            save = lambda boots: store.save_boots(src, boots)
        [(bid, created)] = save([_boot(status="incomplete")])
        [(bid2, created2)] = save([_boot(**second)])
        assert (bid2, created2) == (bid, False)
        out[which] = dump(db)
    assert out["lite"] == out["full"]
    stored = out["lite"]["boots"][0]
    kept = second if replaced else {}
    assert (stored[4], stored[14], stored[15], len(out["lite"]["events"])) == (
        kept.get("status", "incomplete"), kept.get("last", 50), kept.get("fp", "fp-1"),
        1 if kept.get("events") else 0)


def test_a_lock_held_past_the_busy_timeout_is_waited_out(tmp_path, monkeypatch):
    # another writer keeps the write lock longer than the busy timeout (here 0.2 s instead of
    # 30 s): the lite store tries the whole transaction again, as the SQLAlchemy store does
    import threading
    import time

    db = tmp_path / "lk.db"
    assert lite.open_lite(str(db)) is not None
    monkeypatch.setattr(lite, "BUSY_TIMEOUT_MS", 200)
    holder = sqlite3.connect(db, isolation_level=None, check_same_thread=False)
    holder.execute("BEGIN IMMEDIATE")
    threading.Timer(0.6, lambda: holder.execute("COMMIT")).start()
    t0 = time.monotonic()
    store = lite.open_lite(str(db))
    out = ingest(store, str(FIXTURES / "012-v0.10.2-v1-small.log"))
    assert time.monotonic() - t0 >= 0.5 and len(out) == 1 and out[0].created
    holder.close()


def test_a_database_made_with_4096_byte_pages_keeps_them_and_stores_the_same(tmp_path):
    # bootlog made its files with SQLite's default page size before where.PAGE_SIZE; such a file
    # is never rebuilt: both stores write to it as they are, and it holds what a new file holds
    data = (FIXTURES / "seed/07-5x262144-runtime-oom.log").read_bytes()
    cut = data.index(b"\n", data.index(b"Application startup complete")) + 1
    got = {}
    for name in ("old-lite", "old-full", "new"):
        d = tmp_path / name
        d.mkdir()
        db, log = d / "t.db", d / "g.log"
        if name.startswith("old"):
            conn = sqlite3.connect(db, isolation_level=None)
            conn.execute("PRAGMA page_size=4096")
            conn.execute("PRAGMA journal_mode=WAL")  # (the file's header: its page size is set)
            lite._create(conn)
            conn.close()
        log.write_bytes(data[:cut])
        for step in (0, 1):
            if name == "old-full":
                eng = open_db(str(db))
                ingest(eng, str(log))
                eng.dispose()
            else:
                store = lite_store(db)
                ingest(store, str(log))
                store.close()
            with open(log, "ab") as f:
                f.write(data[cut:] if step == 0 else b"")
        want = 4096 if name.startswith("old") else PAGE_SIZE
        assert sqlite3.connect(db).execute("PRAGMA page_size").fetchone()[0] == want
        got[name] = dump(db, strip=str(d))
    assert got["old-lite"] == got["new"] == got["old-full"]
    assert len(got["new"]["samples"]) > 0 and got["new"]["positions"]
