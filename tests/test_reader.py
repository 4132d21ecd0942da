"""reader.py: a log read in a forked reader process gives exactly the records read in process."""
from __future__ import annotations

import gzip
import os

import pytest

from bootlog import reader
from bootlog.errors import InputError
from bootlog.ingest import read_records
from bootlog.sources import open_source
from conftest import FIXTURES

DATA = FIXTURES.parent.parent / "tests" / "data" / "envelope"
LOGS = sorted([*FIXTURES.rglob("*.log"), *DATA.glob("*.log"), *DATA.glob("*.stdout")])


def records(path, **kw):
    recs, scanner = read_records(open_source(str(path)), **kw)
    return [(r.lineno, r.text, r.ts, r.stream) for r in recs], getattr(scanner, "lines_seen", None)


def in_background(path, **kw):
    # (as ingest._read: the reader sends a plain log's lines as bytes)
    got = reader.background(lambda: read_records(open_source(str(path)), raw=True, **kw))
    assert got is not None
    recs, done = got
    return [(r.lineno, r.text, r.ts, r.stream) for r in recs], done.lines_seen


@pytest.mark.parametrize("path", LOGS, ids=lambda p: str(p.relative_to(p.parents[1])))
def test_same_records_in_a_reader_process(path):
    assert in_background(path) == records(path)


def test_same_records_every_line_and_resumed(tmp_path):
    path = FIXTURES / "seed/08-gdn-hip-burst-prefix-caching.log"
    assert in_background(path, fast=False) == records(path, fast=False)
    data = path.read_bytes()
    start = data.index(b"\n", len(data) // 2) + 1
    kw = dict(start=start, limit=len(data), start_line=data[:start].count(b"\n") + 1, fmt="podman_ts")
    got = in_background(path, **kw)
    assert got == records(path, **kw) and got[0] and got[0][0][0] > kw["start_line"] - 1


def test_an_error_in_the_reader_is_raised_here(tmp_path):
    whole = gzip.compress((FIXTURES / "seed/07-5x262144-runtime-oom.log").read_bytes() * 20)
    p = tmp_path / "cut.log.gz"
    p.write_bytes(whole[: len(whole) // 2])
    with pytest.raises(InputError) as here:
        records(p)
    with pytest.raises(InputError) as there:
        in_background(p)
    assert str(there.value) == str(here.value) == f"truncated gzip: {p}"


def test_a_reader_stopped_early_is_reaped():
    got = reader.background(lambda: read_records(open_source(str(FIXTURES / "seed/07-5x262144-runtime-oom.log")),
                                                 fast=False))
    recs, done = got
    next(recs)
    recs.close()  # the caller gave up (an error while parsing): no process left behind
    with pytest.raises(ChildProcessError):  # already reaped: no such child of ours any more
        os.waitpid(done.pid, os.WNOHANG)


def test_a_reader_that_dies_is_an_error_not_a_shorter_log():
    def dies():
        os._exit(3)
    recs, _ = reader.background(dies)
    with pytest.raises(InputError, match="stopped before the end"):
        list(recs)


def test_only_a_plain_log_is_read_as_block_views(tmp_path, monkeypatch):
    """ingest._block_views: hyperscan and the native cut read a plain log's blocks where they
    are; any other format would only copy them (a podman -t log, a gzip file, a resumed read in
    another format), and BOOTLOG_NO_NATIVE=1 turns it off."""
    from bootlog import ingest, scan

    if scan._native_cut is None or scan._hs is None:
        pytest.skip("the reader reads block views only with hyperscan and bootlog._linecut")
    plain = open_source(str(FIXTURES / "014-v0.10.2-nohup-multiboot.log"))
    podman = open_source(str(FIXTURES / "seed/07-5x262144-runtime-oom.log"))
    views = ingest._block_views(plain, 0, None)
    assert views is not None and bytes(next(views)) == (FIXTURES / "014-v0.10.2-nohup-multiboot.log").read_bytes()
    views.close()
    assert ingest._block_views(podman, 0, None) is None
    assert ingest._block_views(plain, 0, None, fmt="podman_ts") is None
    bom = tmp_path / "bom.log"
    bom.write_bytes(b"\xef\xbb\xbfINFO 11-29 10:00:00 [x.py:1] a\n")
    assert bytes(next(ingest._block_views(open_source(str(bom)), 0, None))).startswith(b"INFO")
    assert list(ingest._block_views(open_source(str(bom)), 0, 2)) == [memoryview(b"\xef\xbb")]  # (as _no_bom: no BOM)
    monkeypatch.setenv("BOOTLOG_NO_NATIVE", "1")
    assert ingest._block_views(plain, 0, None) is None


def test_a_log_cut_short_under_the_reader_is_said_so(tmp_path, monkeypatch):
    """The reader reads a big plain file in blocks (blockread.py) up to the size it had: a file
    truncated while it is read ends the read with an error that says so, never a shorter log,
    and the reader process is reaped."""
    from bootlog import scan

    if scan._native_cut is None or scan._hs is None:
        pytest.skip("the reader reads block views only with hyperscan and bootlog._linecut")
    monkeypatch.setattr(scan, "BLOCK", 4096)
    log = tmp_path / "x.log"
    log.write_bytes((FIXTURES / "014-v0.10.2-nohup-multiboot.log").read_bytes() * 20)  # (a plain log)
    real = scan._native_cut

    def cut_then_truncate(*a):  # (runs in the reader process: the file shrinks while it reads)
        os.truncate(log, 0)
        return real(*a)
    monkeypatch.setattr(scan, "_native_cut", cut_then_truncate)
    size = log.stat().st_size  # (ingest reads a file up to the size it had when it began)
    recs, done = reader.background(lambda: read_records(open_source(str(log)), raw=True, limit=size),
                                   batches=True)
    with pytest.raises(InputError, match="got shorter while it was read"):
        list(recs)
    with pytest.raises(ChildProcessError):  # (reaped)
        os.waitpid(done.pid, os.WNOHANG)


def test_reader_memory_is_reported_for_the_bench(tmp_path):
    import subprocess
    import sys

    env = dict(os.environ, BOOTLOG_BACKGROUND_MIN="0", BOOTLOG_BENCH_RSS="1")
    run = subprocess.run([sys.executable, "-c", "from bootlog.cli import main; main()", "--db", str(tmp_path / "t.db"),
                          "ingest", str(FIXTURES / "seed/07-5x262144-runtime-oom.log")],
                         capture_output=True, text=True, env=env)
    assert run.returncode == 0 and "[new]" in run.stdout
    main_kib, reader_kib = (int(x.split("=")[1]) for x in run.stderr.split()[1:3])
    assert main_kib > 10_000 and reader_kib > 10_000  # both processes' own peaks, in KiB


def test_line_bytes_decode_in_the_parent_as_they_would_here(tmp_path):
    """The reader sends a plain log's candidate lines as bytes and the parent decodes a batch of
    them at once: bad UTF-8 at a line's end, mid-line and alone, a BOM, CRLF, NUL, ESC and the
    traceback context must come out exactly as the in-process read gives them."""
    base = (FIXTURES / "058-rocm-rdna4-tp2-hip-oom-sweep.log").read_bytes().splitlines(keepends=True)
    odd = [
        b"INFO 10-02 09:53:01 [gpu_worker.py:1] GPU KV cache size: 1,024 tokens \xe2\x82\n",  # cut sequence
        b"INFO 10-02 09:53:01 [gpu_worker.py:1] GPU KV cache size: 2,048 \xff\xfe tokens\r\n",
        b"\xef\xbb\xbfINFO 10-02 09:53:02 [loggers.py:1] Avg prompt throughput: 1.0 tokens/s\n",
        b"\xe2\x82\n",  # a bad line alone (not a candidate)
        b"ERROR 10-02 09:53:03 [core.py:1] EngineCore failed\x00 \x1b[31mred\x1b[0m\n",
        b"Traceback (most recent call last):\n",
        b"  File \"x.py\", line 1, in <module> \xc3\n",
        b"\xf0\x9f\x98\n",
        b"torch.OutOfMemoryError: HIP out of memory \xed\xa0\x80 surrogate bytes\n",
    ]
    p = tmp_path / "odd.log"
    p.write_bytes(b"".join(base[:40] + odd + base[40:] + odd))
    got, seen = in_background(p)
    want, seen_here = records(p)
    assert got == want and seen == seen_here
    assert any("\ufffd" in text for _, text, _, _ in got)
    assert sum("surrogate bytes" in text for _, text, _, _ in got) == 2  # (context after a traceback)


def test_mixed_kinds_of_records_arrive_in_order():
    """A record of one kind is never sent ahead of the other kind's waiting ones."""
    from array import array

    mixed = [(1, "a", None, None), (2, b"b"), (3, "c", None, None),
             ("lines", array("q", [4, 5]).tobytes(), b"d\ne"), (6, b"f"), (7, "g", None, None)]
    got = reader.background(lambda: (iter(mixed), None))
    assert got is not None
    assert [(r.lineno, r.text) for r in got[0]] == [(1, "a"), (2, "b"), (3, "c"), (4, "d"), (5, "e"),
                                                    (6, "f"), (7, "g")]
