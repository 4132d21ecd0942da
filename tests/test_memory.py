"""Bounded memory: `bootlog ingest` must not hold a whole log (issue 5).

Peak RSS is a behaviour, not a timing: a log four times as long may not need more memory. Each
ingest runs in a fresh process started by a small wrapper, whose RUSAGE_CHILDREN.ru_maxrss is the
ingest's own peak (pytest's own, large RSS would otherwise be the floor inherited across exec).
"""
from __future__ import annotations

import json
import subprocess
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
    monkeypatch.setattr(tempfile, "TemporaryFile", no_space)
    got = parse_source(open_source(str(log)))
    assert not any(isinstance(b.samples, SpilledSamples) for b in got)
    assert got == kept
