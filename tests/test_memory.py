"""Bounded memory: `bootlog ingest` must not hold a whole log (issue 5).

Peak RSS is a behaviour, not a timing: a log four times as long may not need more memory. Each
ingest runs in a fresh process started by a small wrapper, whose RUSAGE_CHILDREN.ru_maxrss is the
ingest's own peak (pytest's own, large RSS would otherwise be the floor inherited across exec).
"""
from __future__ import annotations

import json
import subprocess
import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

import genlog  # noqa: E402

from bootlog import ingest as ingest_mod  # noqa: E402
from bootlog.ingest import SpilledSamples, ingest, parse_source  # noqa: E402
from bootlog.sources import open_source  # noqa: E402
from bootlog.store.db import open_db  # noqa: E402
from bootlog.store.queries import boot_samples, show_boot  # noqa: E402
from conftest import v1_start, v1_stats  # noqa: E402

_WRAPPER = (
    "import json, resource, subprocess, sys\n"
    "p = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)\n"
    "print(json.dumps({'rc': p.returncode, 'err': p.stderr.decode(errors='replace')[-500:],\n"
    "                  'kib': resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss}))\n"
)


def _peak_ingest_mib(log: Path, db: Path) -> float:
    cmd = [sys.executable, "-c", _WRAPPER, sys.executable, "-m", "bootlog.cli", "--db", str(db), "ingest", str(log)]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True, cwd=ROOT)
    res = json.loads(out.stdout.strip().splitlines()[-1])
    assert res["rc"] == 0, res["err"]
    return res["kib"] / 1024


@pytest.fixture(scope="module")
def logs(tmp_path_factory):
    d = tmp_path_factory.mktemp("memlogs")
    small, big = d / "small.log", d / "big.log"
    # below ~40 MiB the scanner's 8 MiB read-ahead blocks have not reached their steady state,
    # so the pair starts there; 4x the length is ~35,000 more stats samples
    genlog.generate(40, str(small))
    genlog.generate(160, str(big))
    return small, big


def test_ingest_peak_memory_does_not_grow_with_log_size(logs, tmp_path):
    small, big = logs
    peak_small = _peak_ingest_mib(small, tmp_path / "small.db")
    peak_big = _peak_ingest_mib(big, tmp_path / "big.db")
    # before the fix: 105 MiB at 40 MiB, 149 MiB at 160 MiB (every stats sample held, twice);
    # after: 105 and 114 MiB (the rest is the scanner's bounded blocks and the imports)
    assert peak_big - peak_small < 25, (peak_small, peak_big)
    assert peak_big < 150, (peak_small, peak_big)


def test_big_ingest_stores_every_sample(logs, tmp_path):
    _, big = logs
    expected = sum(len(b.samples) for b in parse_source(open_source(str(big))))
    engine = open_db(str(tmp_path / "count.db"))
    try:
        got = ingest(engine, str(big))
        assert sum(len(b.boot.samples) for b in got) == expected
        stored = sum(len(boot_samples(engine, b.id)) for b in got)
        assert stored == expected > 100_000 // 8
    finally:
        engine.dispose()


def _small_log(tmp_path) -> Path:
    log = tmp_path / "g.log"
    genlog.generate(2, str(log))
    return log


def test_spilled_samples_equal_in_memory_samples(tmp_path, monkeypatch):
    log = _small_log(tmp_path)
    monkeypatch.setattr(ingest_mod, "_SPILL_KEEP", 10**9)
    kept = parse_source(open_source(str(log)))
    assert not any(isinstance(b.samples, SpilledSamples) for b in kept)
    monkeypatch.setattr(ingest_mod, "_SPILL_KEEP", 3)
    monkeypatch.setattr(ingest_mod, "_SPILL_EVERY", 1)
    spilled = parse_source(open_source(str(log)))
    assert any(isinstance(b.samples, SpilledSamples) and b.samples.spilled for b in spilled)
    assert spilled == kept
    for a, b in zip(spilled, kept):
        assert len(a.samples) == len(b.samples)
        assert list(a.samples) == list(a.samples) == b.samples  # re-iterable (a store retry)
        if b.samples:
            assert a.samples[-1] == b.samples[-1] and a.samples[0] == b.samples[0]


def test_spilled_ingest_stores_the_same_rows(tmp_path, monkeypatch):
    log = _small_log(tmp_path)
    shown = []
    for keep, every in ((10**9, 4096), (3, 1)):
        monkeypatch.setattr(ingest_mod, "_SPILL_KEEP", keep)
        monkeypatch.setattr(ingest_mod, "_SPILL_EVERY", every)
        engine = open_db(str(tmp_path / f"k{keep}.db"))
        try:
            got = ingest(engine, str(log))
            shown.append([(show_boot(engine, b.id), boot_samples(engine, b.id)) for b in got])
        finally:
            engine.dispose()
    assert shown[0] == shown[1]
    assert sum(len(s) for _, s in shown[1]) > 10


def test_store_inserts_in_bounded_batches(tmp_path, monkeypatch):
    """More sample rows than one batch still land in one transaction, all of them."""
    from bootlog.store import queries

    monkeypatch.setattr(queries, "_BATCH", 7)
    log = _small_log(tmp_path)
    expected = sum(len(b.samples) for b in parse_source(open_source(str(log))))
    engine = open_db(str(tmp_path / "b.db"))
    try:
        got = ingest(engine, str(log))
        assert sum(len(boot_samples(engine, b.id)) for b in got) == expected > 7
    finally:
        engine.dispose()


# ---------------------------------------------------------------- progress bar (issue 5)

_PROGRESS_RUN = (
    "import sys, bootlog.ingest as i\n"
    "i._PROGRESS_DELAY = float(sys.argv.pop(1))\n"
    "from bootlog.cli import main\n"
    "sys.argv[0] = 'bootlog'\n"
    "main()\n"
)


def _ingest_stderr(log: Path, db: Path, *, tty: bool, delay: float) -> tuple[int, bytes, bytes]:
    """Run an ingest with stderr on a pseudo-terminal (tty=True) or a pipe; (rc, stdout, stderr)."""
    import os
    import pty

    cmd = [sys.executable, "-c", _PROGRESS_RUN, str(delay), "--db", str(db), "ingest", str(log)]
    if not tty:
        p = subprocess.run(cmd, capture_output=True, cwd=ROOT)
        return p.returncode, p.stdout, p.stderr
    master, slave = pty.openpty()
    try:
        p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=slave, stdin=subprocess.DEVNULL, cwd=ROOT)
        os.close(slave)
        err = b""
        while True:
            try:
                got = os.read(master, 65536)
            except OSError:  # EIO: the child closed its end
                break
            if not got:
                break
            err += got
        out = p.stdout.read()
        p.stdout.close()
        return p.wait(), out, err
    finally:
        os.close(master)


def test_progress_bar_on_a_terminal_only(logs, tmp_path):
    small, _ = logs
    rc, out, err = _ingest_stderr(small, tmp_path / "tty.db", tty=True, delay=0.0)
    assert rc == 0, err
    assert b"bootlog: read " in err and b"%" in err
    assert err.rstrip(b"\r\n").endswith(b"\r\x1b[K")  # the bar is erased when reading ends
    assert b"bootlog: read" not in out and b"\x1b" not in out  # stdout stays clean
    assert b"ready" in out

    rc, out, err = _ingest_stderr(small, tmp_path / "pipe.db", tty=False, delay=0.0)
    assert rc == 0, err
    assert err == b""  # stderr is not a terminal: no bar, no escape codes


def test_no_progress_bar_for_a_quick_ingest_on_a_terminal(tmp_path):
    log = _small_log(tmp_path)
    rc, out, err = _ingest_stderr(log, tmp_path / "q.db", tty=True, delay=30.0)
    assert rc == 0, err
    assert b"bootlog: read" not in err and b"\x1b" not in err


CORPUS = ROOT / "fixtures" / "logs"  # the corpus logs, kept in the repository


@pytest.mark.skipif(not CORPUS.is_dir(), reason="fixtures/logs not present")
def test_spilling_changes_no_corpus_boot(monkeypatch):
    """Spilling after every record (1 sample kept) gives the same boots on every real log,
    interleaved servers and resumed boots included."""
    logs = sorted(CORPUS.glob("*.log"))
    assert logs
    monkeypatch.setattr(ingest_mod, "_SPILL_KEEP", 10**9)
    kept = {p.name: parse_source(open_source(str(p))) for p in logs}
    monkeypatch.setattr(ingest_mod, "_SPILL_KEEP", 1)
    monkeypatch.setattr(ingest_mod, "_SPILL_EVERY", 1)
    spilled_any = False
    for p in logs:
        got = parse_source(open_source(str(p)))
        spilled_any |= any(isinstance(b.samples, SpilledSamples) for b in got)
        assert got == kept[p.name], p.name
    assert spilled_any


def test_no_temp_space_keeps_samples_in_memory(tmp_path, monkeypatch):
    import tempfile

    def no_space(*a, **k):
        raise OSError(28, "No space left on device")

    log = _small_log(tmp_path)
    monkeypatch.setattr(ingest_mod, "_SPILL_KEEP", 10**9)
    kept = parse_source(open_source(str(log)))
    monkeypatch.setattr(ingest_mod, "_SPILL_KEEP", 3)
    monkeypatch.setattr(ingest_mod, "_SPILL_EVERY", 1)
    monkeypatch.setattr(tempfile, "mkstemp", no_space)
    got = parse_source(open_source(str(log)))
    assert not any(isinstance(b.samples, SpilledSamples) for b in got)
    assert got == kept


# ---------------------------------------------------------------- many boots (a crash loop)
#
# A server restarted every few seconds writes thousands of short boots.  BootSplitter retires a
# boot that got no line while boots.RETIRE_AFTER newer ones started, and ingest moves it to the
# spill file (ingest.Boots reads it back when the store or the CLI asks for it).


def _crash_loop(tmp_path, boots: int, name: str = "loop.log") -> Path:
    log = tmp_path / name
    genlog.generate(0, str(log), boots=boots, noise_mb=0)
    return log


def _tables(db: Path) -> dict[str, list[tuple]]:
    """Every stored row but the ingest's wall-clock stamps."""
    import sqlite3

    con = sqlite3.connect(db)
    try:
        boots_cols = ("id, source_id, status, failure, failure_message, vllm_version, engine, model, started_at, "
                      "ready_at, ended_at, first_line, last_line, fingerprint, config_hash")
        return {t: con.execute(f"SELECT {cols} FROM {t} ORDER BY rowid").fetchall()
                for t, cols in (("boots", boots_cols), ("metrics", "*"), ("config", "*"), ("events", "*"),
                                ("samples", "*"), ("positions", "source_key, byte_offset, head_fingerprint"))}
    finally:
        con.close()


def test_crash_loop_retires_boots_and_stores_the_same_rows(tmp_path, monkeypatch):
    from bootlog import boots as boots_mod
    from bootlog.store.lite import open_lite

    log = _crash_loop(tmp_path, 150)
    monkeypatch.setattr(boots_mod, "RETIRE_AFTER", 10**9)
    kept, _ = ingest_mod._parse(open_source(str(log)))
    assert kept.retired() == 0
    monkeypatch.setattr(boots_mod, "RETIRE_AFTER", 2)
    got, _ = ingest_mod._parse(open_source(str(log)))
    assert len(got) == 150 and got.retired() >= 140
    assert len(got.in_memory()) <= 4  # never more than RETIRE_AFTER + the current one, + 1 at the end
    assert got == kept

    stored = {}
    for retire in (10**9, 2):
        monkeypatch.setattr(boots_mod, "RETIRE_AFTER", retire)
        for writer in ("lite", "sqlalchemy"):
            db = tmp_path / f"{writer}-{retire}.db"
            engine = open_lite(str(db)) if writer == "lite" else open_db(str(db))
            try:
                res = ingest(engine, str(log))
                assert [r.boot for r in res] == list(kept)
            finally:
                engine.close() if writer == "lite" else engine.dispose()
            stored[(writer, retire)] = _tables(db)
    first = stored[("lite", 10**9)]
    assert len(first["boots"]) == 150 and len(first["metrics"]) > 150 * 10
    assert all(t == first for t in stored.values())


def test_an_older_server_that_keeps_printing_is_not_retired(tmp_path, monkeypatch):
    """Two servers in one file: one serves while the other restarts 100 times (new pids each
    time).  The serving one's stats lines go back to its own boot however many boots start
    after it, exactly as without retiring."""
    from bootlog import boots as boots_mod

    lines = [*v1_start(10, 110, 0)]
    for i in range(100):
        lines += v1_start(1000 + i, 5000 + i, i)
        lines.append(f"(EngineCore_DP0 pid={5000 + i}) ERROR 11-20 10:{i % 60:02d}:20 [core.py:9] "
                     "EngineCore failed to start.")
        lines.append(v1_stats(10, i))
    log = tmp_path / "two.log"
    log.write_text("\n".join(lines) + "\n")
    monkeypatch.setattr(boots_mod, "RETIRE_AFTER", 10**9)
    kept, _ = ingest_mod._parse(open_source(str(log)))
    monkeypatch.setattr(boots_mod, "RETIRE_AFTER", 3)
    got, _ = ingest_mod._parse(open_source(str(log)))
    assert got.retired() >= 90
    assert got == kept
    first = got[0]
    assert len(first.samples) == 100 and first.last_line == len(lines)


def _main_peak_mib(log: Path, db: Path) -> float:
    """The ingest process's own peak (its reader process, forked for every size here, reports
    apart: BOOTLOG_BENCH_RSS), so that both logs are read the same way."""
    import os
    import re

    env = dict(os.environ, BOOTLOG_BENCH_RSS="1", BOOTLOG_BACKGROUND_MIN="0")
    out = subprocess.run([sys.executable, "-m", "bootlog.cli", "--db", str(db), "ingest", str(log)],
                         capture_output=True, text=True, cwd=ROOT, env=env)
    assert out.returncode == 0, out.stderr[-500:]
    return int(re.search(r"main_peak_rss_kib=(\d+)", out.stderr).group(1)) / 1024


def test_crash_loop_peak_memory_does_not_grow_with_its_boots(tmp_path):
    """Before retiring, every boot (its figures, config, events) was held until the store: the
    ingest of 3,000 boots peaked 15.5 MiB above that of 500; now 1.5 MiB (what stays is its row
    for the dedup decision, its id, where it lies in the spill file)."""
    small, big = _crash_loop(tmp_path, 500, "s.log"), _crash_loop(tmp_path, 3000, "b.log")
    peak_small = _main_peak_mib(small, tmp_path / "s.db")
    peak_big = _main_peak_mib(big, tmp_path / "b.db")
    assert peak_big - peak_small < 8, (peak_small, peak_big)


def test_the_spill_file_is_removed_after_the_ingest(tmp_path, monkeypatch):
    import gc
    import tempfile

    from click.testing import CliRunner

    from bootlog.cli import cli

    spill_dir = tmp_path / "tmp"
    spill_dir.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(spill_dir))
    monkeypatch.setattr(ingest_mod, "_SPILL_KEEP", 3)
    monkeypatch.setattr(ingest_mod, "_SPILL_EVERY", 1)
    made = []
    real = tempfile.mkstemp

    def mkstemp(*a, **k):
        got = real(*a, **k)
        made.append(got[1])
        return got
    monkeypatch.setattr(tempfile, "mkstemp", mkstemp)
    log = _small_log(tmp_path)
    res = CliRunner().invoke(cli, ["--db", str(tmp_path / "s.db"), "ingest", str(log)], catch_exceptions=False)
    assert res.exit_code == 0 and made  # (it did spill)
    gc.collect()
    assert list(spill_dir.iterdir()) == []


def _kept_then_spilling(tmp_path, monkeypatch, boots: int) -> tuple[Path, list]:
    """A log of stats and a crash loop, its boots parsed with nothing spilled; every later parse
    of the test spills at every record."""
    log = tmp_path / "both.log"
    log.write_bytes(_small_log(tmp_path).read_bytes() + _crash_loop(tmp_path, boots).read_bytes())
    monkeypatch.setattr(ingest_mod, "_SPILL_KEEP", 10**9)
    want = parse_source(open_source(str(log)))
    monkeypatch.setattr(ingest_mod, "_SPILL_KEEP", 5)
    monkeypatch.setattr(ingest_mod, "_SPILL_EVERY", 1)
    return log, want


@pytest.mark.parametrize("pages", [12, 40, 200])
def test_a_full_spill_disk_keeps_the_rest_in_memory(tmp_path, monkeypatch, pages):
    # the spill file's disk fills up part-way (SQLite's max_page_count stands in for the disk):
    # what was spilled stays readable, the rest stays in memory, the boots are the same
    log, want = _kept_then_spilling(tmp_path, monkeypatch, 120)
    real_open = ingest_mod._Spill._open

    def capped(self):
        fresh = self.conn is None
        ok = real_open(self)
        if ok and fresh:
            self.conn.execute(f"PRAGMA max_page_count={pages}")
        return ok
    monkeypatch.setattr(ingest_mod._Spill, "_open", capped)
    got = parse_source(open_source(str(log)))
    assert got == want
    assert [len(b.samples) for b in got] == [len(b.samples) for b in want]


def test_a_spill_disk_that_fills_up_mid_write_loses_nothing(tmp_path, monkeypatch):
    # a real full disk (a 256 KiB tmpfs as TMPDIR): a part that fails half-written is rolled
    # back, the parts before it stay readable, the rest stays in memory
    import tempfile

    mnt = tmp_path / "small"
    mnt.mkdir()
    if os.geteuid() != 0 or subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", str(mnt)],
                                           capture_output=True).returncode:
        pytest.skip("needs root and mount to make a small disk")
    try:
        log, want = _kept_then_spilling(tmp_path, monkeypatch, 300)
        monkeypatch.setattr(tempfile, "tempdir", str(mnt))
        got = parse_source(open_source(str(log)))
        assert got == want
    finally:
        subprocess.run(["umount", "-l", str(mnt)], capture_output=True)


@pytest.mark.parametrize("signame", ["SIGTERM", "SIGHUP"])
def test_a_signal_mid_ingest_removes_the_spill_file_and_stores_nothing(tmp_path, signame):
    # systemd stopping a unit, `timeout`, a dropped ssh session: bootlog still dies by the signal,
    # but its spill file goes and its transaction is never half-written (the log arrives on stdin
    # and stays open)
    import signal
    import time

    sig = getattr(signal, signame)
    spill = tmp_path / "tmp"
    spill.mkdir()
    big = tmp_path / "big.log"
    genlog.generate(24, str(big), boots=1)  # (some 6,500 stats lines: spilled every 4,096 records)
    db = tmp_path / "t.db"
    proc = subprocess.Popen([sys.executable, "-m", "bootlog.cli", "--db", str(db), "ingest", "-"],
                            stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            env=dict(os.environ, TMPDIR=str(spill)))
    proc.stdin.write(big.read_bytes())
    proc.stdin.flush()
    deadline = time.monotonic() + 60
    while not list(spill.glob("bootlog-spill-*")) and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.05)
    assert list(spill.glob("bootlog-spill-*")), "the ingest never spilled"
    proc.send_signal(sig)
    assert proc.wait(timeout=30) == -sig
    proc.stdin.close()
    assert b"Traceback" not in proc.stderr.read()
    assert list(spill.iterdir()) == []
    if db.exists():
        import sqlite3

        with sqlite3.connect(db) as con:
            assert con.execute("select count(*) from boots").fetchone()[0] == 0


def test_a_spill_file_left_by_a_killed_bootlog_is_swept_by_the_next_spill(tmp_path, monkeypatch):
    # SIGKILL runs no finalizer: the next ingest that spills removes files of processes gone
    import tempfile

    spill_dir = tmp_path / "tmp"
    spill_dir.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(spill_dir))
    gone = subprocess.Popen(["true"])
    gone.wait()
    dead = spill_dir / f"bootlog-spill-{gone.pid}-abcd1234.db"
    alive = spill_dir / f"bootlog-spill-{os.getpid()}-efgh5678.db"
    other = spill_dir / "somebody-else.db"
    for p in (dead, alive, other):
        p.write_bytes(b"x" * 100)
    monkeypatch.setattr(ingest_mod, "_SPILL_KEEP", 3)
    monkeypatch.setattr(ingest_mod, "_SPILL_EVERY", 1)
    parse_source(open_source(str(_small_log(tmp_path))))
    assert not dead.exists() and alive.exists() and other.exists()
