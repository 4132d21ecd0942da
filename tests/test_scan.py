"""scan.Scanner yields exactly select(envelope.records()), on every hit engine available here."""
from __future__ import annotations

import gzip
import os
import random
import sys
from pathlib import Path

import pytest

from bootlog import envelope, scan
from bootlog.records import Record
from bootlog.scan import Scanner, available_engines, select

DATA = Path(__file__).parent / "data" / "envelope"
CORPUS = sorted((Path(__file__).resolve().parent.parent / "fixtures" / "logs").glob("*.log"))  # the corpus, copied
SAMPLES = sorted(p for p in DATA.iterdir() if p.suffix != ".py")
TB = "Traceback (most recent call last)"
AFTER = {TB: 200}

# The marker vocabulary of metrics.md / vllm-log-formats.md (what the catalogue searches for);
# the project's own catalogue literals are added when that module is importable.
BASE_LITERALS = [
    "Automatically detected platform", "vLLM API server version", "non-default args",
    "args: Namespace(", "Initializing a V1 LLM engine", "LLM engine", "KV cache size",
    "Maximum concurrency for", "Available KV cache memory", "# GPU blocks", "# CUDA blocks",
    "num_gpu_blocks is", "Loading weights took", "Model loading took", "Loading model weights took",
    "Memory profiling takes", "torch.compile takes", "Dynamo bytecode transform time",
    "Compiling a graph for", "Graph capturing finished in", "init engine", "Avg prompt throughput",
    "Application startup complete", "Error", "out of memory", "died", "█  version", TB,
]
try:
    from bootlog.parse import all_literals

    LITERALS = list(dict.fromkeys([*BASE_LITERALS, *all_literals()]))
except Exception:  # the catalogue is another module's job; the base list still exercises us
    LITERALS = BASE_LITERALS

ENGINES = available_engines()


def _chunks(data: bytes, size: int = 1 << 16):
    return [data[i:i + size] for i in range(0, len(data), size)]


def _physical_lines(data: bytes) -> int:
    return data.count(b"\n") + (0 if not data or data.endswith(b"\n") else 1)


def _check(data: bytes, engine: str, literals=LITERALS, after=AFTER, size: int = 1 << 16):
    want = list(select(envelope.records(_chunks(data, size)), literals, after))
    sc = Scanner(literals, after, accel=engine)
    got = list(sc.records(_chunks(data, size)))
    assert got == want
    assert sc.lines_seen == _physical_lines(data)
    return got


# a podman -t log's odd lines: found line by line, or all at once with numpy, the block's line
# table worked out by numpy or in native code (bootlog/_linecut.c): Scanner's keywords for each
VECTOR = [dict(vectorize=False, native=False), dict(vectorize=True, native=False),
          dict(vectorize=True, native=True)]
VECTOR_IDS = ["lines", "numpy", "native"]
# a plain log's raw read (the reader process's) cuts a block's hit lines line by line, with numpy
# (scan._np_lines) or in native code (bootlog/_linecut.c): Scanner's (vectorize, native) for each
CUTS = {"lines": (False, False), "numpy": (True, False), "native": (False, True)}


def _cut_scanner(cut: str, *args, **kw) -> Scanner:
    """A Scanner that cuts a plain raw read's lines the `cut` way (skipped where the native
    module was not built: `pip install .` without a C compiler)."""
    vectorize, native = CUTS[cut]
    if native and scan._native_cut is None:
        pytest.skip("bootlog._linecut not built")
    sc = Scanner(*args, vectorize=vectorize, native=native, **kw)
    assert (sc._cut is not None) == native
    return sc


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("path", CORPUS + SAMPLES, ids=lambda p: p.name[:12])
def test_scanner_equals_filtered_envelope(path, engine):
    _check(path.read_bytes(), engine)


@pytest.mark.parametrize("engine", ENGINES)
def test_many_small_blocks_and_context_across_them(monkeypatch, engine):
    # tracebacks whose 200-line context crosses block cuts; several logs back to back
    monkeypatch.setattr(scan, "BLOCK", 3000)
    data = b"".join(p.read_bytes() for p in CORPUS if p.name[:3] in ("009", "022", "038", "053"))
    got = _check(data, engine, size=1000)
    tb_lines = [r.lineno for r in got if TB in r.text]
    assert tb_lines and len(got) > 200


@pytest.mark.parametrize("engine", ENGINES)
def test_ansi_inside_a_literal_nul_and_garbage(engine):
    rng = random.Random(3)
    data = (b"(APIServer pid=1) \x1b[1mAvg prompt\x1b[0m throughput: 1.0 tokens/s\n"
            + b"INFO KV cache \x00size: 1,000 tokens\r\n"
            + rng.randbytes(200_000) + b"\nKV cache size: 5 tokens\n"
            + b"x" * (3 << 20) + b" Error at the end of a long line\nlast Error")
    got = _check(data, engine)
    assert got[0] == Record(1, "(APIServer pid=1) Avg prompt throughput: 1.0 tokens/s")
    assert got[1] == Record(2, "INFO KV cache size: 1,000 tokens")
    assert got[-1].text == "last Error"


def test_numpy_only_for_a_big_podman_read_and_when_allowed(monkeypatch):
    monkeypatch.setattr(scan, "BLOCK", 1000)
    monkeypatch.setattr(scan, "NUMPY_AFTER", 5000)
    data = _podman_t(CORPUS[0])
    want = list(select(envelope.records(_chunks(data)), LITERALS, AFTER))
    sc = Scanner(LITERALS, AFTER)
    assert sc._np is None  # (a small read: importing numpy would cost more than it saves)
    recs = sc.records(_chunks(data, 700))
    first = [next(recs) for _ in range(2)]
    assert sc._np is None and sc._read_bytes < 5000
    rest = list(recs)
    assert sc._np is not None  # taken on the way, the same records
    assert first + rest == want
    plain = Scanner(LITERALS, AFTER)
    list(plain.records(_chunks(CORPUS[0].read_bytes() * 3, 700)))
    assert plain._np is None  # (a plain log's lines are found without it)
    assert Scanner(LITERALS, vectorize=True)._np is not None
    assert Scanner(LITERALS, vectorize=False)._np is None
    monkeypatch.setenv("BOOTLOG_NO_NUMPY", "1")
    assert Scanner(LITERALS, vectorize=True)._np is None
    sc = Scanner(LITERALS, AFTER)
    assert list(sc.records(_chunks(data, 700))) == want and sc._np is None


def test_no_accel_env_forces_the_pure_python_path(monkeypatch):
    monkeypatch.setenv("BOOTLOG_NO_ACCEL", "1")
    assert Scanner(LITERALS).engine == "find"
    monkeypatch.delenv("BOOTLOG_NO_ACCEL")
    assert Scanner(LITERALS).engine == ENGINES[0]


def test_enveloped_logs_go_through_the_joining_parser():
    # a CRI log whose marker line is split into P pieces: only the joined text holds it
    raw = (b"2026-11-29T14:25:19.000000001+00:00 stdout P " + b"y" * 8000 + b" KV cache si\n"
           b"2026-11-29T14:25:19.000000002+00:00 stdout F ze: 42 tokens\n"
           b"2026-11-29T14:25:19.000000003+00:00 stderr F noise\n")
    sc = Scanner(["KV cache size"])
    got = list(sc.records([raw]))
    assert sc.format == "cri" and sc.lines_seen == 3
    assert len(got) == 1 and got[0].text.endswith("KV cache size: 42 tokens") and got[0].lineno == 1


def test_gzip_source_and_start_line(tmp_path):
    from bootlog.sources import open_source

    path = next(p for p in CORPUS if p.name.startswith("014"))
    gz = tmp_path / "x.log"
    gz.write_bytes(gzip.compress(path.read_bytes()))
    src = open_source(str(gz))
    want = list(select(envelope.records(src.chunks(), start_line=10), LITERALS, AFTER))
    got = list(Scanner(LITERALS, AFTER).records(src.chunks(), start_line=10))
    assert got == want and got[0].lineno >= 10


def _podman_t(path: Path) -> bytes:
    """A corpus log as `podman logs -t 2>&1` prints it after conmon split it into reads: a
    stamp before every record, P continuations and glued partial lines inside lines."""
    from datetime import datetime, timedelta, timezone

    from test_envelope import _conmon, _stamp

    lines = path.read_bytes().split(b"\n")
    rng = random.Random(path.name)
    t0 = datetime(2026, 11, 29, 14, 0, tzinfo=timezone.utc)
    out = list(_conmon(lines[:-1], rng, t0))
    err = list(_conmon([b"Traceback (most recent call last):", b"  x", b"tail-no-newline"], rng,
                       t0 + timedelta(seconds=1), final_nl=False))
    merged = sorted(out + err, key=lambda r: r[0])
    return b"".join(_stamp(t, True) + b" " + m + (b"\n" if tag == b"F" else b"")
                    for t, tag, m in merged)


@pytest.mark.parametrize("vectorize", VECTOR, ids=VECTOR_IDS)
@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("path", CORPUS[::3], ids=lambda p: p.name[:3])
def test_podman_t_fast_path_equals_envelope(monkeypatch, path, engine, vectorize):
    monkeypatch.setattr(scan, "BLOCK", 20_000)
    data = _podman_t(path)
    assert envelope.detect(data[:65536]) == "podman_ts"
    sc = Scanner(LITERALS, AFTER, accel=engine, **vectorize)
    got = list(sc.records(_chunks(data, 7000)))
    want = list(select(envelope.records(_chunks(data)), LITERALS, AFTER))
    assert got == want
    assert sc.format == "podman_ts" and sc.lines_seen == _physical_lines(data)
    # read raw, as the reader process reads it (runs of lines sent with their stamps)
    sc = Scanner(LITERALS, AFTER, accel=engine, **vectorize)
    assert _raw_records(sc, data, 7000) == want
    assert sc.format == "podman_ts" and sc.lines_seen == _physical_lines(data)


# ---------------------------------------------------------------- generated inputs

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

_PIECES = [b"INFO 11-29 14:25:19 [core.py:1] ", b"KV cache size: 1,000 tokens", b"KV cache si",
           b"ze", b"Error", b"Err", b"\x1b[0;36m", b"\x1b[", b"\x00", b"\r", b"\xff\xfe", b"caf\xc3\xa9",
           TB.encode(), b"Trace", b"x" * 50, b" ", b"Z ", b"2026-11-29T14:25:19.320146538Z ",
           "█  version".encode(), b"\xe2\x96", b"\xef\xbb\xbf"]
_line = st.lists(st.sampled_from(_PIECES), max_size=6).map(b"".join)


@settings(max_examples=int(os.environ.get("BOOTLOG_HYPOTHESIS_EXAMPLES", "100")), deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(lines=st.lists(_line, max_size=40), final_nl=st.booleans(), block=st.integers(5, 300),
       chunk=st.integers(1, 97), fmt=st.sampled_from(["plain", "podman_ts", "cri"]),
       tags=st.lists(st.sampled_from([b"stdout F ", b"stdout P ", b"stderr F ", b"stderr P "]),
                     min_size=40, max_size=40))
def test_generated_logs_scan_like_the_envelope(monkeypatch, lines, final_nl, block, chunk, fmt,
                                               tags):
    monkeypatch.setattr(scan, "BLOCK", block)
    if fmt == "podman_ts":  # a stamp on every line, seconds apart
        lines = [b"2026-11-29T14:25:%02d.000000001Z " % (i % 60) + x for i, x in enumerate(lines)]
    elif fmt == "cri":  # random streams and partial pieces
        lines = [b"2026-11-29T14:25:%02d.000000001+00:00 " % (i % 60) + tags[i] + x
                 for i, x in enumerate(lines)]
    data = b"\n".join(lines) + (b"\n" if final_nl and lines else b"")
    after = {TB: 3}
    want = list(select(envelope.records(_chunks(data, chunk), fmt), LITERALS, after))
    for engine in ENGINES:
        for vectorize in VECTOR:
            sc = Scanner(LITERALS, after, accel=engine, **vectorize)
            assert list(sc.records(_chunks(data, chunk), fmt)) == want, (engine, vectorize)
            assert sc.lines_seen == _physical_lines(data)
            if fmt == "podman_ts":  # and raw, as the reader process reads it
                sc = Scanner(LITERALS, after, accel=engine, **vectorize)
                assert _raw_records(sc, data, chunk, fmt) == want, (engine, vectorize, "raw")
                assert sc.lines_seen == _physical_lines(data)
        if fmt == "plain":  # raw, each way of cutting the lines
            for cut in CUTS if scan._native_cut is not None else ("lines", "numpy"):
                sc = _cut_scanner(cut, LITERALS, after, accel=engine)
                assert _raw_records(sc, data, chunk, fmt) == want, (engine, cut, "raw")
                assert sc.lines_seen == _physical_lines(data)


@settings(max_examples=int(os.environ.get("BOOTLOG_HYPOTHESIS_EXAMPLES", "100")), deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(lines=st.lists(st.tuples(_line, st.sampled_from([0, 0, 0, 700, 1500, 3000])), max_size=60),
       run=st.integers(1, 12), glue=st.lists(st.booleans(), min_size=60, max_size=60),
       bare=st.lists(st.sampled_from([False] * 5 + [True]), min_size=60, max_size=60),
       block=st.integers(40, 9000), chunk=st.integers(1, 997))
def test_generated_podman_runs_scan_like_the_envelope(monkeypatch, lines, run, glue, bare, block, chunk):
    """podman -t lines under shared stamps (one conmon read each), long enough to cross half of
    conmon's buffer, some glued to a partial line before them, a few without a stamp: the run
    state that decides a glued piece is the same whether each line is read (Python) or only the
    odd ones (numpy)."""
    monkeypatch.setattr(scan, "BLOCK", block)
    out = []
    for i, (x, pad) in enumerate(lines):
        stamp = b"" if bare[i] else b"2026-11-29T14:25:%02d.000000001Z " % ((i // run) % 60)
        piece = stamp + b"y" * pad + x
        if glue[i] and out:
            out[-1] += piece  # a partial line: the next record's stamp follows inside the line
        else:
            out.append(piece)
    data = b"\n".join(out) + b"\n"
    after = {TB: 3}
    want = list(select(envelope.records(_chunks(data, chunk), "podman_ts"), LITERALS, after))
    for vectorize in VECTOR:
        sc = Scanner(LITERALS, after, **vectorize)
        assert list(sc.records(_chunks(data, chunk), "podman_ts")) == want, vectorize
        assert sc.lines_seen == _physical_lines(data)
        sc = Scanner(LITERALS, after, **vectorize)
        assert _raw_records(sc, data, chunk, "podman_ts") == want, (vectorize, "raw")


def test_podman_block_of_one_huge_line_is_read_line_by_line(monkeypatch):
    """numpy's arrays cost a few times their block: a block that one huge line made goes the
    line-by-line way, and the two ways hand each other the same run state."""
    monkeypatch.setattr(scan, "BLOCK", 20_000)
    data = _podman_t(CORPUS[0])
    cut = data.index(b"\n", len(data) // 2) + 1
    huge = b"2026-11-29T14:00:09.000000001Z " + b"KV cache size: 1 tokens " + b"x" * 100_000 + b"\n"
    data = data[:cut] + huge + data[cut:]
    used = {"np": 0, "py": 0}
    for name, key in (("_podman_np", "np"), ("_podman_py", "py")):
        real = getattr(Scanner, name)

        def counted(self, *a, _real=real, _key=key):
            used[_key] += 1
            return _real(self, *a)
        monkeypatch.setattr(Scanner, name, counted)
    sc = Scanner(LITERALS, AFTER, vectorize=True)
    got = list(sc.records(_chunks(data, 7000)))
    assert got == list(select(envelope.records(_chunks(data)), LITERALS, AFTER))
    assert used["py"] >= 1 and used["np"] > used["py"]
    assert any(r.text.startswith("KV cache size: 1 tokens x") for r in got)


def test_podman_line_without_a_stamp_keeps_the_run_it_interrupts():
    """A line without a stamp between two lines of one conmon read: the bytes before it still
    count toward the run that decides whether a glued piece continues its line."""
    t1, t2 = b"2026-11-29T14:25:01.000000001Z ", b"2026-11-29T14:25:01.000000002Z "
    lines = [t1 + b"a" * 3000, b"bare line", t1 + b"c" * 1500,
             t1 + b"KV cache size: 5 tokens partial" + t1 + b"continued", t2 + b"KV cache size: 6"]
    data = b"\n".join(lines) + b"\n"
    want = list(select(envelope.records(_chunks(data), "podman_ts"), LITERALS, {}))
    assert want[0].text == "KV cache size: 5 tokens partialcontinued"  # 4,500+ bytes: one read
    for vectorize in VECTOR:
        assert list(Scanner(LITERALS, {}, **vectorize).records(_chunks(data), "podman_ts")) == want
        assert _raw_records(Scanner(LITERALS, {}, **vectorize), data, 1 << 16, "podman_ts") == want


def test_odd_literals_still_match_the_reference():
    data = b"a line\r\nbad \xff byte\nsplit\nhere\n"
    for lits in (["line\r"], ["\ufffd"], ["split\nhere"], ["bad"]):
        for engine in ENGINES:
            _check(data, engine, literals=lits, after={})


def _cri(path: Path) -> bytes:
    """A corpus log as conmon writes it to ctr.log, with a stderr traceback interleaved."""
    from datetime import datetime, timedelta, timezone

    from test_envelope import _conmon, _stamp

    lines = path.read_bytes().split(b"\n")
    rng = random.Random(path.name + "cri")
    t0 = datetime(2026, 11, 29, 14, 0, tzinfo=timezone.utc)
    out = [(t, b"stdout", tag, m) for t, tag, m in _conmon(lines[:-1], rng, t0)]
    err = [(t, b"stderr", tag, m) for t, tag, m in
           _conmon([TB.encode(), b"  File x", b"RuntimeError: boom", b"partial"], rng,
                   t0 + timedelta(milliseconds=30), final_nl=False)]
    return b"".join(_stamp(t, False) + b" " + s + b" " + tag + b" " + m + b"\n"
                    for t, s, tag, m in sorted(out + err, key=lambda r: r[0]))


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("path", CORPUS[1::3], ids=lambda p: p.name[:3])
def test_cri_fast_path_equals_envelope(monkeypatch, path, engine):
    monkeypatch.setattr(scan, "BLOCK", 30_000)
    data = _cri(path)
    assert envelope.detect(data[:65536]) == "cri"
    sc = Scanner(LITERALS, AFTER, accel=engine)
    got = list(sc.records(_chunks(data, 9000)))
    assert got == list(select(envelope.records(_chunks(data)), LITERALS, AFTER))
    assert sc.format == "cri" and sc.lines_seen == _physical_lines(data)
    assert any(r.stream == "stderr" for r in got)


def test_a_failing_search_tool_falls_back_to_python(monkeypatch, tmp_path):
    fake = tmp_path / "rg"
    fake.write_text("#!/bin/sh\necho 'rg: unsupported flag' >&2\nexit 2\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}:/usr/bin:/bin")
    monkeypatch.setattr(scan, "BLOCK", 5000)
    data = next(p for p in CORPUS if p.name.startswith("022")).read_bytes()
    sc = Scanner(LITERALS, AFTER, accel="rg")
    assert sc.engine == "rg"
    got = list(sc.records(_chunks(data)))
    assert got == list(select(envelope.records(_chunks(data)), LITERALS, AFTER)) and got
    assert sc._argv is None  # gave up on the tool after its first failure


@pytest.mark.parametrize("engine", ENGINES)
def test_last_line_emptied_by_cleaning_is_still_a_line(engine):
    data = TB.encode() + b"\n\x1b[0;36m"  # the owed context line is all colour codes
    got = _check(data, engine)
    assert got == [Record(1, TB), Record(2, "")]


# ---------------------------------------------------------------- hyperscan

def test_hyperscan_engine_is_preferred_and_odd_literals_agree(monkeypatch):
    pytest.importorskip("hyperscan")
    assert ENGINES[0] == "hyperscan" and Scanner(LITERALS).engine == "hyperscan"
    # literals spanning a newline (hits no longer in start order), holding NUL (argv cannot carry
    # it to rg/grep, Hyperscan can), overlapping one another, and one that is a prefix of another
    data = (b"ab\ncd x\x00y\nabcd abc bcd\n" * 50 + b"tail ab\ncd")
    for lits in (["b\ncd", "x y"], ["abc", "bcd", "abcd"], ["ab", "d x"], ["b\ncd", "x\x00y"], ["\x00"]):
        sc = Scanner(lits, {}, accel="hyperscan")
        # the binding hands patterns over as C strings: a NUL would cut a literal short
        assert (sc.engine == "hyperscan") == (not any("\x00" in x for x in lits))
        _check(data, "hyperscan", literals=lits, after={}, size=7)
    monkeypatch.setattr(scan, "BLOCK", 40)  # many small blocks
    _check(data, "hyperscan", literals=["b\ncd", "abc"], after={"d x": 2}, size=3)


def test_without_hyperscan_the_next_engine_takes_over(monkeypatch):
    monkeypatch.setattr(scan, "_hs", None)
    assert "hyperscan" not in available_engines()
    sc = Scanner(LITERALS, AFTER, accel="hyperscan")  # asked for, not there: the pure-Python one
    assert sc.engine == "find"
    assert Scanner(LITERALS, AFTER).engine == available_engines()[0]
    path = CORPUS[0]
    assert list(sc.records(_chunks(path.read_bytes()))) == list(
        select(envelope.records(_chunks(path.read_bytes())), LITERALS, AFTER))


def _raw_records(sc: Scanner, data: bytes, size: int, fmt: str | None = None, chunks=None) -> list[Record]:
    """Scanner.records(raw=True) as Records (as reader.py makes them): (lineno, bytes), a
    block's ("lines", numbers, joined lines) from _np_lines, ("plines", numbers, joined lines
    with their stamps) from _podman_runs, (lineno, text, ts, stream) or Records.  chunks: the
    data as given (else in pieces of `size`)."""
    from array import array

    out = []
    for r in sc.records(_chunks(data, size) if chunks is None else chunks, fmt, raw=True):
        if r.__class__ is Record:  # (other formats than plain)
            out.append(r)
        elif len(r) == 2:
            out.append(Record(r[0], r[1].decode("utf-8", "replace")))
        elif len(r) == 3:
            nums = array("q")
            nums.frombytes(r[1])
            lines = r[2].decode("utf-8", "replace").split("\n")
            if r[0] == "plines":  # podman -t lines with their stamps (scan._podman_runs)
                out += [Record(n, t[31:], envelope.parse_ts(t[:30])) for n, t in zip(nums, lines)]
            else:
                out += [Record(n, t) for n, t in zip(nums, lines)]
        else:
            out.append(Record(*r))
    return out


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("cut", CUTS)
def test_raw_plain_read_equals_envelope_each_way_of_cutting(monkeypatch, engine, cut):
    """A plain log read raw (as the reader process sends it): a block's lines found all at once
    in native code or with numpy (scan._np_lines), or line by line, the same lines with the
    same numbers as the reference; CRLF endings, BOMs at line starts, bad UTF-8 and tracebacks
    whose context runs across blocks included."""
    monkeypatch.setattr(scan, "BLOCK", 3000)
    rng = random.Random(7)
    base = b"".join(p.read_bytes() for p in CORPUS[::9])
    lines = base.split(b"\n")
    for i in rng.sample(range(len(lines)), len(lines) // 10):
        lines[i] += b"\r"
    for i in rng.sample(range(len(lines)), len(lines) // 20):
        lines[i] = b"\xef\xbb\xbf" + lines[i]
    for i in rng.sample(range(len(lines)), len(lines) // 50):
        lines[i] = lines[i][:5] + b"\xff\xfe" + lines[i][5:]
    for data in (base, b"\n".join(lines), b"\n".join(lines) + b"\nlast Error"):
        want = list(select(envelope.records(_chunks(data, 4096)), LITERALS, AFTER))
        sc = _cut_scanner(cut, LITERALS, AFTER, accel=engine)
        got = _raw_records(sc, data, 4096)
        assert (sc._np is not None) == CUTS[cut][0]  # (the native cut never imports numpy)
        assert got == want, engine
        assert sc.lines_seen == _physical_lines(data)


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("vectorize", VECTOR, ids=VECTOR_IDS)
def test_raw_podman_read_equals_envelope(monkeypatch, engine, vectorize):
    """A podman -t log read raw (as the reader process reads it): runs of usual lines go out
    with their stamps (scan._podman_runs), the rest through the stamp parser.  The same records
    as the reference with CRLF endings, a BOM after the stamp, ANSI codes, bad UTF-8, a literal
    found only inside stamps, pieces glued behind a partial line (a stamp inside the line), a
    context key hidden by ANSI codes (context owed from the middle of a block) and keys whose
    context runs across blocks."""
    from datetime import datetime, timedelta, timezone

    from test_envelope import _stamp

    monkeypatch.setattr(scan, "BLOCK", 3000)
    rng = random.Random(11)
    lines = b"".join(p.read_bytes() for p in CORPUS[::4]).split(b"\n")
    n = len(lines)
    for i in rng.sample(range(n), n // 10):
        lines[i] += b"\r"
    for i in rng.sample(range(n), n // 20):
        lines[i] = b"\xef\xbb\xbf" + lines[i]
    for i in rng.sample(range(n), n // 50):
        lines[i] = lines[i][:5] + b"\xff\xfe" + lines[i][5:]
    for i in rng.sample(range(n), n // 50):
        lines[i] = b"\x1b[0;36m" + lines[i]
    for i in rng.sample(range(n), 3):
        lines[i] = b"Trace\x1b[0mback (most recent call last):"
    for i in rng.sample(range(n), 3):
        lines[i] = TB.encode() + b":"
    t0 = datetime(2026, 11, 29, 14, 0, tzinfo=timezone.utc)
    out: list[bytes] = []
    for i, line in enumerate(lines):
        piece = _stamp(t0 + timedelta(milliseconds=7 * i), True) + b" " + line
        if out and rng.random() < 0.02:
            out[-1] += piece  # behind a partial line: its stamp inside the line
        else:
            out.append(piece)
    data = b"\n".join(out) + b"\n"
    lits = [*LITERALS, "T14:00:0"]  # (in the first stamps, and in no text)
    want = list(select(envelope.records(_chunks(data, 4096), "podman_ts"), lits, AFTER))
    runs = []
    real = Scanner._podman_runs

    def counted(self, *a):
        runs.append(1)
        return real(self, *a)
    monkeypatch.setattr(Scanner, "_podman_runs", counted)
    sc = Scanner(lits, AFTER, accel=engine, **vectorize)
    assert _raw_records(sc, data, 4096) == want
    assert sc.format == "podman_ts" and sc.lines_seen == _physical_lines(data)
    assert bool(runs) == (engine == "hyperscan" and vectorize["vectorize"])
    assert len(runs) > 20 or not runs
    assert list(Scanner(lits, AFTER, accel=engine, **vectorize).records(_chunks(data, 4096))) == want


def _cuts() -> list:
    """The block line cuts there are here: numpy's, and the native one where it was built."""
    np = pytest.importorskip("numpy")
    out = [lambda block, hits, at: scan._np_lines(np, block, hits, at)]
    return out + ([scan._native_cut] if scan._native_cut is not None else [])


def test_block_cuts_cut_each_line_as_the_per_line_path():
    block = b"a Error\r\n\xef\xbb\xbfb Error\nskip\n\xef\xbb\xbf\r\nc Error Error\n\r\n"
    from array import array

    for cut in _cuts():
        nums, blob, n = cut(block, [2, 19, 26, 37, 43, 35, 44], 10)
        got = array("q")
        got.frombytes(nums)
        assert list(got) == [10, 11, 13, 14, 15] and n == 6
        assert blob.split(b"\n") == [b"a Error", b"b Error", b"", b"c Error Error", b""]
        assert cut(b"x\ny\n", [], 1) == (b"", b"", 2)
        assert cut(b"\n\n\n", [1], 7) == (array("q", [8]).tobytes(), b"", 3)  # (a hit on a newline: its line)


@settings(max_examples=int(os.environ.get("BOOTLOG_HYPOTHESIS_EXAMPLES", "100")) * 3, deadline=None)
@given(lines=st.lists(st.lists(st.sampled_from([b"ab", b"\r", b"\xef\xbb\xbf", b"\xef\xbb", b"x" * 40]),
                               max_size=5).map(b"".join), min_size=1, max_size=60),
       picks=st.lists(st.tuples(st.integers(0, 10 ** 6), st.integers(0, 10 ** 6)), max_size=30),
       at=st.integers(1, 10 ** 12))
def test_native_cut_equals_numpy_cut(lines, picks, at):
    """bootlog._linecut.cut, the same bytes as scan._np_lines on any block and any hits (in
    any order, repeated, several in a line, on its newline), and as the per-line path."""
    if scan._native_cut is None:
        pytest.skip("bootlog._linecut not built")
    np = pytest.importorskip("numpy")
    block = b"\n".join(lines) + b"\n"
    hits = [(p % len(block)) for p, _ in picks]
    want = scan._np_lines(np, block, hits, at)
    assert scan._native_cut(block, hits, at) == want
    assert scan._native_cut(bytearray(block), sorted(hits), at) == want  # (any bytes-like)
    # the per-line path's cut of each hit's line
    starts = sorted({block.rfind(b"\n", 0, h) + 1 for h in hits})
    cut = []
    for s in starts:
        e = block.index(b"\n", s)
        e -= e > s and block[e - 1] == 13
        cut.append(block[s + 3:e] if block.startswith(b"\xef\xbb\xbf", s, e) else block[s:e])
    assert want[1] == b"\n".join(cut)


@settings(max_examples=int(os.environ.get("BOOTLOG_HYPOTHESIS_EXAMPLES", "100")) * 3, deadline=None)
@given(lines=st.lists(st.lists(st.sampled_from([b"2026-11-29T14:25:01.000000001Z ", b"2026-11-29T14:25:01.00000000",
                                                b"Z", b" ", b"Z ", b"x" * 30, b"\r", b"\x00", b"9"]),
                               max_size=6).map(b"".join), max_size=40),
       final_nl=st.booleans())
def test_native_podman_table_equals_numpy(lines, final_nl):
    """bootlog._linecut.podman_lines: the same line table of a podman -t block as numpy's
    (scan._podman_table): each line's start and end, and whether it is in the usual shape."""
    if scan._native_podman is None:
        pytest.skip("bootlog._linecut not built")
    np = pytest.importorskip("numpy")
    block = b"\n".join(lines) + (b"\n" if final_nl and lines else b"")
    arr = np.frombuffer(block, dtype=np.uint8)
    want = scan._podman_table(np, arr)
    got = scan._podman_table(np, arr, scan._native_podman)
    for w, g in zip(want, got):
        assert w.dtype == g.dtype and w.tolist() == g.tolist()
    pieces = block.split(b"\n")
    if block.endswith(b"\n"):
        pieces.pop()
    usual = [len(x) >= 31 and scan._PODMAN_NORMAL.match(x) is not None and x.find(b"Z ", 31) < 0
             for x in pieces]
    assert got[2].tolist() == usual


def test_native_cut_refuses_what_it_cannot_cut():
    if scan._native_cut is None:
        pytest.skip("bootlog._linecut not built")
    for hits in ([4], [-1], [0, 10]):
        with pytest.raises(ValueError):
            scan._native_cut(b"ab\nc", hits, 1)
    with pytest.raises(TypeError):
        scan._native_cut(b"ab\n", [0.5], 1)
    with pytest.raises(TypeError):
        scan._native_cut("ab\n", [0], 1)


@pytest.mark.skipif("hyperscan" not in ENGINES, reason="hyperscan not installed")
def test_a_scanner_read_raw_then_reused_for_podman_finds_the_same_lines():
    """The raw plain read leaves hyperscan's hits as offsets for its own use only."""
    pod = b"".join(b"2026-01-01T00:00:0%d.000000000Z some text then Error %d\n" % (i, i) for i in range(5))
    fresh = list(Scanner(["Error"], {}, accel="hyperscan").records([pod], "podman_ts"))
    sc = Scanner(["Error"], {}, accel="hyperscan")
    list(sc.records([b"x\nan Error here\n" * 3], "plain", raw=True))
    assert list(sc.records([pod], "podman_ts")) == fresh and len(fresh) == 5


@pytest.mark.skipif(scan._native_cut is None or "hyperscan" not in ENGINES,
                    reason="block views are read with hyperscan and bootlog._linecut only")
@pytest.mark.parametrize("fmt", ["plain", "podman_ts"])
def test_raw_read_of_block_views_equals_envelope(tmp_path, monkeypatch, fmt):
    """The reader's read of a file as views of reused buffers (blockread.py): the records of
    the bytes, with blocks small enough that lines cross them, a line longer than many blocks,
    CRLF, BOMs, bad UTF-8, ANSI codes and NUL bytes (those blocks go as bytes), and tracebacks
    whose context runs across blocks; a podman -t log's blocks go as bytes."""
    from bootlog import blockread

    monkeypatch.setattr(scan, "BLOCK", 3000)
    rng = random.Random(13)
    lines = b"".join(p.read_bytes() for p in CORPUS[::7]).split(b"\n")
    for i in rng.sample(range(len(lines)), len(lines) // 10):
        lines[i] += b"\r"
    for i in rng.sample(range(len(lines)), len(lines) // 20):
        lines[i] = b"\xef\xbb\xbf" + lines[i]
    for i in rng.sample(range(len(lines)), len(lines) // 50):
        lines[i] = lines[i][:5] + rng.choice([b"\xff\xfe", b"\x1b[31m", b"\x00"]) + lines[i][5:]
    lines.insert(len(lines) // 2, b"x" * 40000 + b" Error in a line longer than a block")
    at = len(lines) // 4  # (a key that only the ANSI removal makes whole, then its context)
    lines[at:at] = [b"x" * 2990, b"ERROR 11-29 10:00:00 [core.py:1] Trace\x1b[0mback (most recent call last)",
                    b'  File "y.py", line 2, in g', b"ValueError: split key"]
    clean = [x for x in lines if b"\x1b" not in x and b"\x00" not in x]  # (blocks that stay views)
    at = len(clean) // 3
    clean[at:at] = [b"x" * 2990, b"ERROR 11-29 10:00:00 [core.py:1] " + TB.encode(), b'  File "x.py", line 1, in f',
                    b"RuntimeError: boom"]
    for variant in (lines, clean):
        data = b"\n".join(variant) + b"\nlast Error"
        path = tmp_path / "x.log"
        if fmt == "podman_ts":
            data = b"".join(b"2026-11-29T14:25:%02d.000000001Z " % (i % 60) + x + b"\n" for i, x in enumerate(variant))
        path.write_bytes(data)
        want = list(select(envelope.records(_chunks(data, 4096), fmt), LITERALS, AFTER))
        views = blockread.blocks(str(path), 0, len(data), scan.BLOCK)
        sc = Scanner(LITERALS, AFTER, accel="hyperscan")
        assert _raw_records(sc, data, 0, fmt, chunks=views) == want
        assert sc.lines_seen == _physical_lines(data)


def test_hyperscan_is_its_compiled_module_loaded_alone():
    if scan._hs is None:
        pytest.skip("hyperscan is not installed")
    import hyperscan

    # one module, which the package re-exports: not a second copy of the library's state
    assert hyperscan.Database is scan._hs.Database and scan._hs.__name__ == "hyperscan._hs_ext"


def test_hyperscan_falls_back_to_its_package_where_its_module_cannot_be_found(monkeypatch):
    if scan._hs is None:
        pytest.skip("hyperscan is not installed")
    import importlib.machinery

    import hyperscan

    # (scan takes the finder from _frozen_importlib_external: the same class)
    assert importlib.machinery.PathFinder is sys.modules["_frozen_importlib_external"].PathFinder
    monkeypatch.delitem(sys.modules, "hyperscan._hs_ext")
    monkeypatch.setattr(importlib.machinery.PathFinder, "find_spec", classmethod(lambda cls, *a, **k: None))
    assert scan._load_hyperscan() is hyperscan
    monkeypatch.setitem(sys.modules, "hyperscan", None)  # `import hyperscan` raises ImportError
    assert scan._load_hyperscan() is None


def _kept(tmp_path) -> list[Path]:
    return sorted((tmp_path / "cache" / "bootlog").glob("hyperscan-*.db"))


def test_a_compiled_hyperscan_database_is_kept_and_loaded_again(tmp_path, monkeypatch):
    if scan._hs is None:
        pytest.skip("hyperscan is not installed")
    data = CORPUS[0].read_bytes()
    want = _check(data, "hyperscan")  # (the conftest's cache directory: empty, then written)
    [kept] = _kept(tmp_path)
    assert scan._hs_cache_path(Scanner(LITERALS, AFTER)._bmin) == str(kept)

    class NoCompile:
        def __init__(self, *a, **k):
            raise AssertionError("compiled again instead of loading the kept database")
    with monkeypatch.context() as m:
        m.setattr(scan._hs, "Database", NoCompile)
        assert _check(data, "hyperscan") == want
        sc = Scanner(LITERALS, AFTER, accel="hyperscan")
        assert list(sc.records(_chunks(data))) == want
        assert sc._hs_db is not None  # (its scans worked: a failed one drops it for Python's search)
    # a damaged file (a crash mid-copy by some other tool, a libhs it does not fit) is compiled
    # again, same answer, and replaced
    kept.write_bytes(kept.read_bytes()[:100])
    assert _check(data, "hyperscan") == want
    assert scan._hs_cached(str(kept)) is not None
    # other literals, another file; and none at all where the cache is turned off or unwritable
    Scanner(["KV cache size"], accel="hyperscan")
    assert len(_kept(tmp_path)) == 2
    monkeypatch.setenv("BOOTLOG_NO_CACHE", "1")
    Scanner(["Maximum concurrency for"], accel="hyperscan")
    assert len(_kept(tmp_path)) == 2
    monkeypatch.delenv("BOOTLOG_NO_CACHE")
    (tmp_path / "file").write_text("")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "file"))
    assert _check(data, "hyperscan", literals=["Maximum concurrency for"]) == _check(data, "find", literals=["Maximum concurrency for"])
    assert not [p for p in (tmp_path / "cache" / "bootlog").iterdir() if p.suffix == ".tmp"]


def test_the_kept_database_is_found_again_by_another_process_and_few_are_kept(tmp_path):
    # the literals' order (their ids) must not depend on the hash seed, or every start misses
    if scan._hs is None:
        pytest.skip("hyperscan is not installed")
    import subprocess

    code = "from bootlog.scan import Scanner; from bootlog.parse import all_literals; Scanner(all_literals())"
    for seed in ("1", "2", "3"):
        subprocess.run([sys.executable, "-c", code], check=True, env=dict(os.environ, PYTHONHASHSEED=seed))
    assert len(_kept(tmp_path)) == 1
    for i in range(scan._HS_KEEP + 3):
        Scanner([f"literal number {i}"], accel="hyperscan")
    assert len(_kept(tmp_path)) == scan._HS_KEEP


@settings(max_examples=int(os.environ.get("BOOTLOG_HYPOTHESIS_EXAMPLES", "100")) * 5, deadline=None)
@given(st.lists(st.binary(max_size=6).map(lambda b: bytes(c % 4 for c in b).replace(b"\x03", b"\n")),
                max_size=14))
def test_minimal_keeps_the_literals_that_hold_no_other(lits):
    """_minimal: a literal that holds another is dropped (the other finds its lines); the rest in
    one order, shortest first then bytewise (the kept hyperscan database is named by it).
    Small alphabets with NUL and newline: literals that overlap, repeat and cross the join."""
    distinct = sorted({x for x in lits if x}, key=lambda x: (len(x), x))
    want = [x for x in distinct if not any(y != x and y in x for y in distinct)]
    assert scan._minimal(lits) == want
