"""Bounded memory: `bootlog ingest` must not hold a whole log.

Peak RSS is a behaviour, not a timing: a log four times as long may not need more memory. Each
ingest runs in a fresh process started by a small wrapper, whose RUSAGE_CHILDREN.ru_maxrss is the
ingest's own peak (pytest's own, large RSS would otherwise be the floor inherited across exec).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Iterator

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

import genlog  # noqa: E402

from bootlog.parse import boots as boots_mod  # noqa: E402
from bootlog.run import ingest as ingest_mod  # noqa: E402
from bootlog import records  # noqa: E402
from bootlog.run.ingest import ingest, parse_source  # noqa: E402
from bootlog.read.sources import open_source  # noqa: E402
from bootlog.store import spill as spill_mod  # noqa: E402
from bootlog.store.db import open_store  # noqa: E402
from bootlog.store.reads import samples, show_boot  # noqa: E402
from paths import FIXTURES  # noqa: E402

_WRAPPER = (
    "import json, resource, subprocess, sys\n"
    "p = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)\n"
    "print(json.dumps({'rc': p.returncode, 'err': p.stderr.decode(errors='replace')[-500:],\n"
    "                  'kib': resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss}))\n"
)


def _peak_mib(db: Path, *args: str) -> tuple[float, str]:
    """(peak RSS in MiB, stderr) of `bootlog --db DB ARGS` run to its end in a fresh process."""
    cmd = [sys.executable, "-c", _WRAPPER, sys.executable, "-m", "bootlog.cli", "--db", str(db), *args]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True, cwd=ROOT)
    res = json.loads(out.stdout.strip().splitlines()[-1])
    assert res["rc"] == 0, res["err"]
    return res["kib"] / 1024, res["err"]


def _peak_ingest_mib(log: Path, db: Path) -> float:
    return _peak_mib(db, "ingest", str(log))[0]


@pytest.fixture(scope="module")
def logs(tmp_path_factory):
    d = tmp_path_factory.mktemp("memlogs")
    small, big = d / "small.log", d / "big.log"
    # a stats line in every third line: 4x the length is ~70,000 more samples
    genlog.generate(20, str(small), stats_share=0.33)
    genlog.generate(80, str(big), stats_share=0.33)
    return small, big


def test_ingest_peak_memory_does_not_grow_with_log_size(logs, tmp_path):
    small, big = logs
    peak_small = _peak_ingest_mib(small, tmp_path / "small.db")
    peak_big = _peak_ingest_mib(big, tmp_path / "big.db")
    assert peak_big - peak_small < 25, (peak_small, peak_big)
    assert peak_big < 150, (peak_small, peak_big)


def _stored(store, got) -> list[tuple]:
    return [(show_boot(store, b.id), [s for _, s in samples(store, [b.id])]) for b in got]


def test_big_ingest_stores_every_sample(logs, tmp_path):
    _, big = logs
    expected = sum(len(b.samples) for b in parse_source(open_source(str(big))))
    store = open_store(str(tmp_path / "count.db"))
    try:
        got = ingest(store, str(big))
        assert sum(len(b.boot.samples) for b in got) == expected
        stored = sum(1 for _ in samples(store, [b.id for b in got]))
        assert stored == expected > 40_000
    finally:
        store.close()


def _small_log(tmp_path) -> Path:
    log = tmp_path / "g.log"
    genlog.generate(2, str(log))
    return log


def test_spilled_and_chunked_samples_store_the_same_rows(tmp_path, monkeypatch):
    """Chunks of 5 samples, each sent to the spill file at once, store what one big chunk kept
    in memory stores."""
    log = _small_log(tmp_path)
    shown = []
    for rows, budget in ((10**6, 10**12), (5, 0)):
        monkeypatch.setattr(records, "CHUNK_ROWS", rows)
        monkeypatch.setattr(spill_mod, "MEMORY_BUDGET", budget)
        store = open_store(str(tmp_path / f"k{rows}.db"))
        try:
            got = ingest(store, str(log))
            shown.append(_stored(store, got))
            n = store.one("SELECT count(*) FROM sample_chunks")[0]
        finally:
            store.close()
        assert (n > 20) == (rows == 5)
    assert shown[0] == shown[1]
    assert sum(len(s) for _, s in shown[1]) > 10


@pytest.mark.skipif(not (ROOT / "fixtures" / "logs").is_dir(), reason="fixtures/logs not present")
def test_spilling_changes_no_corpus_boot(monkeypatch):
    """Chunks of 2 samples, all in the spill file, give the same boots on every real log,
    interleaved servers and resumed boots included."""
    logs = sorted((ROOT / "fixtures" / "logs").glob("*.log"))
    kept = {p.name: parse_source(open_source(str(p))) for p in logs}
    monkeypatch.setattr(records, "CHUNK_ROWS", 2)
    monkeypatch.setattr(spill_mod, "MEMORY_BUDGET", 0)
    for p in logs:
        assert parse_source(open_source(str(p))) == kept[p.name], p.name


def test_no_temp_space_keeps_samples_in_memory(tmp_path, monkeypatch):
    import tempfile

    def no_space(*a, **k):
        raise OSError(28, "No space left on device")

    log = _small_log(tmp_path)
    kept = parse_source(open_source(str(log)))
    monkeypatch.setattr(records, "CHUNK_ROWS", 3)
    monkeypatch.setattr(spill_mod, "MEMORY_BUDGET", 0)
    monkeypatch.setattr(tempfile, "TemporaryFile", no_space)
    assert parse_source(open_source(str(log))) == kept


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
        boots_cols = (
            "id, source_id, status, failure, failure_message, vllm_version, engine, model, started_at, "
            "ready_at, ended_at, first_line, last_line, fingerprint, config_hash"
        )
        return {
            t: con.execute(f"SELECT {cols} FROM {t} ORDER BY rowid").fetchall()
            for t, cols in (
                ("boots", boots_cols),
                ("metrics", "*"),
                ("config", "*"),
                ("events", "*"),
                ("sample_chunks", "*"),
                ("positions", "source_key, byte_offset, head_fingerprint"),
            )
        }
    finally:
        con.close()


def test_crash_loop_retires_boots_and_stores_the_same_rows(tmp_path, monkeypatch):
    log = _crash_loop(tmp_path, 150)
    monkeypatch.setattr(boots_mod, "RETIRE_AFTER", 10**9)
    kept = ingest_mod.read_boots(open_source(str(log)))[0]
    assert not any(isinstance(x, tuple) for x in kept.items)
    monkeypatch.setattr(boots_mod, "RETIRE_AFTER", 2)
    got = ingest_mod.read_boots(open_source(str(log)))[0]
    assert len(got) == 150 and sum(isinstance(x, tuple) for x in got.items) >= 140
    assert list(got) == list(kept)

    stored = {}
    for retire in (10**9, 2):
        monkeypatch.setattr(boots_mod, "RETIRE_AFTER", retire)
        db = tmp_path / f"{retire}.db"
        store = open_store(str(db))
        try:
            assert [r.boot for r in ingest(store, str(log))] == list(kept)
        finally:
            store.close()
        stored[retire] = _tables(db)
    assert len(stored[2]["boots"]) == 150 and len(stored[2]["metrics"]) > 150 * 10
    assert stored[2] == stored[10**9]


def test_an_older_server_that_keeps_printing_is_not_retired(tmp_path, monkeypatch, v1_start, v1_stats):
    """Two servers in one file: one serves while the other restarts 100 times (new pids each
    time).  The serving one's stats lines go back to its own boot however many boots start
    after it, exactly as without retiring."""
    lines = [*v1_start(10, 110, 0)]
    for i in range(100):
        lines += v1_start(1000 + i, 5000 + i, i)
        lines.append(
            f"(EngineCore_DP0 pid={5000 + i}) ERROR 11-20 10:{i % 60:02d}:20 [core.py:9] EngineCore failed to start."
        )
        lines.append(v1_stats(10, i))
    log = tmp_path / "two.log"
    log.write_text("\n".join(lines) + "\n")
    monkeypatch.setattr(boots_mod, "RETIRE_AFTER", 10**9)
    kept = ingest_mod.read_boots(open_source(str(log)))[0]
    monkeypatch.setattr(boots_mod, "RETIRE_AFTER", 3)
    got = ingest_mod.read_boots(open_source(str(log)))[0]
    assert sum(isinstance(x, tuple) for x in got.items) >= 90
    assert list(got) == list(kept)
    assert len(got[0].samples) == 100 and got[0].last_line == len(lines)


def test_crash_loop_peak_memory_does_not_grow_with_its_boots(tmp_path):
    """Without retiring, every boot (its figures, config, events) is held until the store."""
    small, big = _crash_loop(tmp_path, 500, "s.log"), _crash_loop(tmp_path, 3000, "b.log")
    peak_small = _peak_ingest_mib(small, tmp_path / "s.db")
    peak_big = _peak_ingest_mib(big, tmp_path / "b.db")
    assert peak_big - peak_small < 10, (peak_small, peak_big)


# ---------------------------------------------------------------- progress bar

_PROGRESS_RUN = (
    "import sys, bootlog.run.ingest as i\n"
    "i._PROGRESS_DELAY = float(sys.argv.pop(1))\n"
    "from bootlog.cli import main\n"
    "sys.argv[0] = 'bootlog'\n"
    "main()\n"
)


def _ingest_stderr(log: Path, db: Path, *, tty: bool, delay: float) -> tuple[int, bytes, bytes]:
    """Run an ingest with stderr on a pseudo-terminal (tty=True) or a pipe; (rc, stdout, stderr)."""
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


@pytest.mark.parametrize("signame", ["SIGTERM", "SIGHUP"])
def test_a_signal_mid_ingest_stores_nothing_and_leaves_no_file(tmp_path, signame):
    # systemd stopping a unit, `timeout`, a dropped ssh session: bootlog still dies by the signal,
    # its transaction is never half-written, and it leaves no temporary file (the log arrives on
    # stdin and stays open)
    import signal
    import time

    sig = getattr(signal, signame)
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    big = tmp_path / "big.log"
    genlog.generate(24, str(big), boots=1)
    db = tmp_path / "t.db"
    proc = subprocess.Popen(
        [sys.executable, "-m", "bootlog.cli", "--db", str(db), "ingest", "-"],
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env=dict(os.environ, TMPDIR=str(tmp)),
    )
    proc.stdin.write(big.read_bytes())
    proc.stdin.flush()
    time.sleep(1.0)  # (reading: the log is still open)
    proc.send_signal(sig)
    assert proc.wait(timeout=30) == -sig
    proc.stdin.close()
    assert b"Traceback" not in proc.stderr.read()
    assert list(tmp.iterdir()) == []
    if db.exists():
        import sqlite3

        with sqlite3.connect(db) as con:
            assert con.execute("select count(*) from boots").fetchone()[0] == 0


def test_forty_thousand_distinct_oom_lines_parse_in_linear_time(tmp_path):
    # each OOM line used to rescan every earlier event (quoted-error and GPU-fault checks):
    # 40k of them took ~40 s; read once per event they take about as long as any 40k lines
    import time

    from bootlog.run.ingest import parse_source
    from bootlog.read.sources import open_source

    seed = (FIXTURES / "seed" / "01-shape-d-fp8-200704x3.log").read_text()

    def log(n: int):
        p = tmp_path / f"ooms-{n}.log"
        p.write_text(
            seed
            + "".join(
                f"2026-10-02T16:30:00.000000000Z (EngineCore_DP0 pid=130) ERROR 10-02 09:30:00 [core.py:720] "  # (after 01 ends)
                f"torch.OutOfMemoryError: CUDA out of memory. Tried to allocate {i}.00 MiB.\n"
                for i in range(n)
            )
        )
        return p

    took = {}
    for n in (5_000, 40_000):
        t0 = time.perf_counter()
        [boot] = parse_source(open_source(str(log(n))))
        took[n] = time.perf_counter() - t0
        assert sum(e.kind == "oom" for e in boot.events) == n
    assert took[40_000] < 20 * took[5_000]  # linear: ~8x; quadratic was ~64x


# ---------------------------------------------------------------- one line without end (issue 31)

_LONG = 32  # MiB of one line: the unbounded reads held it 2-4 times over (70-110 MiB more)
_PIECE = 16384  # bytes of one docker / CRI / journald piece of a partial line


def _pieces(fmt: str) -> Iterator[str]:
    """One logical line of _LONG MiB as `fmt`'s partial records (none ends it until the last)."""
    t = "2026-11-29T14:25:19.%06dZ"
    body = "y" * _PIECE
    for i in range(_LONG * 2**20 // _PIECE):
        if fmt == "docker_json":
            yield json.dumps({"log": body, "stream": "stdout", "time": t % i}) + "\n"
        elif fmt == "cri":
            yield f"{t % i} stdout P {body}\n"
        else:
            yield (
                json.dumps(
                    {
                        "MESSAGE": body,
                        "__REALTIME_TIMESTAMP": str(1764426319000000 + i),
                        "PRIORITY": "6",
                        "CONTAINER_PARTIAL_MESSAGE": "true",
                    }
                )
                + "\n"
            )


def _enveloped(fmt: str, text: str) -> str:
    """A whole line of the real log in `fmt`'s envelope."""
    if fmt == "docker_json":
        return json.dumps({"log": text + "\n", "stream": "stdout", "time": "2026-11-29T14:25:18Z"}) + "\n"
    if fmt == "cri":
        return f"2026-11-29T14:25:18Z stdout F {text}\n"
    return json.dumps({"MESSAGE": text, "__REALTIME_TIMESTAMP": "1764426318000000", "PRIORITY": "6"}) + "\n"


@pytest.fixture(scope="module")
def plain_peak(tmp_path_factory) -> dict[str, float]:
    """The peaks of an ingest and a watch --once of the real log alone: what every case below
    may add little to (a read's block and one line's MiB)."""
    d = tmp_path_factory.mktemp("plainpeak")
    return {
        "ingest": _peak_mib(d / "i.db", "ingest", str(FIXTURES / SMALL))[0],
        "watch": _peak_mib(d / "w.db", "watch", "--once", "--file", str(FIXTURES / SMALL))[0],
    }


SMALL = "012-v0.10.2-v1-small.log"


def _ready(db: Path) -> list[tuple]:
    import sqlite3

    with sqlite3.connect(db) as con:
        return con.execute("SELECT status, vllm_version FROM boots").fetchall()


@pytest.mark.parametrize("fmt", ["docker_json", "cri", "journal_json"])
def test_a_partial_line_joined_from_pieces_is_cut_at_one_mib(tmp_path, plain_peak, fmt):
    """docker json-file pieces without a newline, CRI P records, journald partial messages: a
    logical line of 32 MiB (the joins held it whole, 3.5 times over: 465 MB RSS at 128 MiB) is
    cut at 1 MiB and said so, as ingest says it of a physical line."""
    log = tmp_path / "c.log"
    with open(log, "w") as f:
        for line in (FIXTURES / SMALL).read_text().splitlines():
            f.write(_enveloped(fmt, line))
        f.writelines(_pieces(fmt))
        f.write(_enveloped(fmt, "the end of it"))
    peak, err = _peak_mib(tmp_path / "c.db", "ingest", str(log))
    assert err.strip() == f"bootlog: {log}: 1 line(s) longer than 1 MiB were cut there"
    assert _ready(tmp_path / "c.db") == [("ready", "0.10.2")]
    assert peak - plain_peak["ingest"] < 24, (plain_peak, peak)


def test_a_gzip_bomb_without_a_newline_costs_one_mib(tmp_path, plain_peak):
    """32 MiB of one line, gzipped (a few KiB): the gzip reader held the line back whole (590 MB
    RSS and 15 s at 256 MiB; 2.1 GB at 1 GiB)."""
    import gzip
    import zlib

    log = tmp_path / "bomb.gz"
    with gzip.open(log, "wb", compresslevel=1) as g:
        g.write((FIXTURES / SMALL).read_bytes())
        block = b"x" * 2**20
        for _ in range(_LONG):
            g.write(block)
    assert log.stat().st_size < 2**20 and zlib  # (the bomb: small on disk)
    peak, err = _peak_mib(tmp_path / "g.db", "ingest", str(log))
    assert err.strip() == f"bootlog: {log}: 1 line(s) longer than 1 MiB were cut there"
    assert _ready(tmp_path / "g.db") == [("ready", "0.10.2")]
    assert peak - plain_peak["ingest"] < 24, (plain_peak, peak)


def test_watch_holds_a_line_without_newline_at_one_mib(tmp_path, plain_peak):
    """watch --file's half line was concatenated whole, and quadratically (900 MB RSS and 9.4 s
    for 400 MiB); now it keeps 1 MiB of it, counts the rest and says so."""
    log = tmp_path / "server.log"
    with open(log, "wb") as f:
        f.write((FIXTURES / SMALL).read_bytes())
        block = b"y" * 2**20
        for _ in range(_LONG):
            f.write(block)
    peak, err = _peak_mib(tmp_path / "w.db", "watch", "--once", "--file", str(log))
    assert err.strip() == f"bootlog: {log}: 1 line(s) longer than 1 MiB were cut there"
    assert _ready(tmp_path / "w.db") == [("ready", "0.10.2")]
    assert peak - plain_peak["watch"] < 24, (plain_peak, peak)


# ---------------------------------------------------------------- a database of many boots (issue 31)


def _many_boots(path: Path, n: int) -> Path:
    from pgutil import many_boots

    return many_boots(path, n)


def test_export_json_streams_a_database_of_many_boots(tmp_path):
    """export --format json held every boot's document (10 GB RSS for 100,000 boots, 570 MB for
    10,000): now a page at a time, whatever the number of boots."""
    small, big = _many_boots(tmp_path / "s.db", 300), _many_boots(tmp_path / "b.db", 1500)
    peak_small = _peak_mib(small, "export", "--format", "json", str(tmp_path / "s.json"))[0]
    peak_big = _peak_mib(big, "export", "--format", "json", str(tmp_path / "b.json"))[0]
    got = json.loads((tmp_path / "b.json").read_text())
    assert len(got["boots"]) == 1500 and len(got["samples"]) == 1500 * 3 * 6
    assert peak_big - peak_small < 12, (peak_small, peak_big)
