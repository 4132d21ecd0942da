"""The scan: the candidate lines of a log, through the envelope, are the records the parser keeps
from a read of every line, on every fixture and with either search (hyperscan, or the pure-Python
one where hyperscan cannot be imported)."""

from __future__ import annotations

import os
import random
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bootlog.read import envelope, scan, sources
from bootlog.parse.parse import all_literals
from bootlog.read.scan import TRACEBACK, Lines, Search, minimal

DATA = Path(__file__).parent / "data" / "envelope"
CORPUS = sorted((Path(__file__).resolve().parent.parent / "fixtures" / "logs").glob("*.log"))
SAMPLES = sorted(p for p in DATA.iterdir() if p.suffix != ".py")
LITERALS = all_literals()
ENGINES = ["hyperscan", "python"] if scan._hs is not None else ["python"]
EXAMPLES = int(os.environ.get("BOOTLOG_HYPOTHESIS_EXAMPLES", "60"))


def _chunks(data: bytes, size: int = 1 << 16) -> list[bytes]:
    return [data[i : i + size] for i in range(0, len(data), size)]


def _kept(records, literals=LITERALS, context: int = scan.CONTEXT) -> list[tuple]:
    """What parse() keeps of a record stream: the records holding a literal (as the scan knows,
    or their text says) and the `context` records after a traceback start."""
    lits = tuple(literals)
    out, owed = [], 0
    for r in records:
        hit = r.hit if r.hit is not None else any(x in r.text for x in lits)
        if hit or owed > 0:
            out.append((r.lineno, r.text, r.ts, r.stream, hit))
        owed = owed - 1 if owed > 0 else 0
        if TRACEBACK in r.text:
            owed = context
    return out


def _check(
    data: bytes,
    engine: str,
    fmt: str | None = None,
    size: int = 1 << 16,
    literals=LITERALS,
    context: int = scan.CONTEXT,
) -> list[tuple]:
    fmt = fmt or envelope.detect(data[:65536])
    want = _kept(envelope.read(_chunks(data, size), fmt), literals, context)
    lines = Lines(_chunks(data, size), fmt, Search(literals, engine), context=context)
    got = _kept(envelope.records(lines, fmt), literals, context)
    assert got == want
    assert lines.lines_seen == data.count(b"\n") + (0 if not data or data.endswith(b"\n") else 1)
    return got


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("path", CORPUS + SAMPLES, ids=lambda p: p.name[:12])
def test_candidates_are_what_a_full_read_keeps(path, engine):
    _check(path.read_bytes(), engine)


@pytest.mark.parametrize("engine", ENGINES)
def test_many_small_blocks_and_context_across_them(monkeypatch, engine):
    # tracebacks whose 200-line context crosses block cuts; several logs back to back
    monkeypatch.setattr(sources, "BLOCK", 3000)
    data = b"".join(p.read_bytes() for p in CORPUS if p.name[:3] in ("009", "022", "038", "053"))
    got = _check(data, engine, size=1000)
    assert any(TRACEBACK in r[1] for r in got) and len(got) > 200


@pytest.mark.parametrize("engine", ENGINES)
def test_ansi_inside_a_literal_nul_garbage_and_a_long_line(engine):
    rng = random.Random(3)
    data = (
        b"(APIServer pid=1) \x1b[1mAvg prompt\x1b[0m throughput: 1.0 tokens/s\n"
        + b"INFO KV cache \x00size: 1,000 tokens\r\n"
        + rng.randbytes(200_000)
        + b"\nKV cache size: 5 tokens\n"
        + b"x" * (3 << 19)
        + b" Error at the end of a long line\nlast Error"
    )
    got = _check(data, engine)
    assert got[0][:2] == (1, "(APIServer pid=1) Avg prompt throughput: 1.0 tokens/s")
    assert got[1][:2] == (2, "INFO KV cache size: 1,000 tokens")
    assert got[-1][1] == "last Error"


@pytest.mark.parametrize("engine", ENGINES)
def test_last_line_emptied_by_cleaning_is_still_a_line(engine):
    data = TRACEBACK.encode() + b"\n\x1b[0;36m"  # the owed context line is all colour codes
    assert [r[:2] for r in _check(data, engine)] == [(1, TRACEBACK), (2, "")]


def _podman_t(path: Path) -> bytes:
    """A corpus log as `podman logs -t 2>&1` prints it after conmon split it into reads: a
    stamp before every record, P continuations and glued partial lines inside lines."""
    from datetime import datetime, timedelta, timezone

    from test_envelope import _conmon, _stamp

    lines = path.read_bytes().split(b"\n")
    rng = random.Random(path.name)
    t0 = datetime(2026, 11, 29, 14, 0, tzinfo=timezone.utc)
    out = list(_conmon(lines[:-1], rng, t0))
    err = list(
        _conmon(
            [b"Traceback (most recent call last):", b"  x", b"tail-no-newline"],
            rng,
            t0 + timedelta(seconds=1),
            final_nl=False,
        )
    )
    merged = sorted(out + err, key=lambda r: r[0])
    return b"".join(_stamp(t, True) + b" " + m + (b"\n" if tag == b"F" else b"") for t, tag, m in merged)


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("path", CORPUS[::3], ids=lambda p: p.name[:3])
def test_podman_t_candidates_are_what_a_full_read_keeps(monkeypatch, path, engine):
    monkeypatch.setattr(sources, "BLOCK", 20_000)
    data = _podman_t(path)
    assert envelope.detect(data[:65536]) == "podman_ts"
    _check(data, engine, size=7000)


def test_podman_line_without_a_stamp_keeps_the_run_it_interrupts():
    """A line without a stamp between two lines of one conmon read: the bytes before it still
    count toward the run that decides whether a glued piece continues its line."""
    t1, t2 = b"2026-11-29T14:25:01.000000001Z ", b"2026-11-29T14:25:01.000000002Z "
    lines = [
        t1 + b"a" * 3000,
        b"bare line",
        t1 + b"c" * 1500,
        t1 + b"KV cache size: 5 tokens partial" + t1 + b"continued",
        t2 + b"KV cache size: 6",
    ]
    data = b"\n".join(lines) + b"\n"
    for engine in ENGINES:
        got = _check(data, engine, "podman_ts")
        assert got[0][1] == "KV cache size: 5 tokens partialcontinued"  # 4,500+ bytes: one read


_PIECES = [
    b"INFO 11-29 14:25:19 [core.py:1] ",
    b"KV cache size: 1,000 tokens",
    b"KV cache si",
    b"ze",
    b"Error",
    b"Err",
    b"\x1b[0;36m",
    b"\x1b[",
    b"\x00",
    b"\r",
    b"\xff\xfe",
    b"caf\xc3\xa9",
    TRACEBACK.encode(),
    b"Trace",
    b"x" * 50,
    b" ",
    b"Z ",
    b"2026-11-29T14:25:19.320146538Z ",
    "█  version".encode(),
    b"\xe2\x96",
    b"\xef\xbb\xbf",
]
_line = st.lists(st.sampled_from(_PIECES), max_size=6).map(b"".join)


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    lines=st.lists(_line, max_size=40),
    final_nl=st.booleans(),
    block=st.integers(5, 300),
    chunk=st.integers(1, 97),
    fmt=st.sampled_from(["plain", "podman_ts", "cri", "compose"]),
    tags=st.lists(st.sampled_from([b"stdout F ", b"stdout P ", b"stderr F ", b"stderr P "]), min_size=40, max_size=40),
)
def test_generated_logs_scan_like_a_full_read(monkeypatch, lines, final_nl, block, chunk, fmt, tags):
    monkeypatch.setattr(sources, "BLOCK", block)
    if fmt == "podman_ts":  # a stamp on every line, seconds apart
        lines = [b"2026-11-29T14:25:%02d.000000001Z " % (i % 60) + x for i, x in enumerate(lines)]
    elif fmt == "cri":  # random streams and partial pieces
        lines = [b"2026-11-29T14:25:%02d.000000001+00:00 " % (i % 60) + tags[i] + x for i, x in enumerate(lines)]
    elif fmt == "compose":
        lines = [b"frank-primary  | " + x for x in lines]
    data = b"\n".join(lines) + (b"\n" if final_nl and lines else b"")
    for engine in ENGINES:
        _check(data, engine, fmt, size=chunk, context=3)


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    lines=st.lists(st.tuples(_line, st.sampled_from([0, 0, 0, 700, 1500, 3000])), max_size=60),
    run=st.integers(1, 12),
    glue=st.lists(st.booleans(), min_size=60, max_size=60),
    bare=st.lists(st.sampled_from([False] * 5 + [True]), min_size=60, max_size=60),
    block=st.integers(40, 9000),
    chunk=st.integers(1, 997),
)
def test_generated_podman_runs_scan_like_a_full_read(monkeypatch, lines, run, glue, bare, block, chunk):
    """podman -t lines under shared stamps (one conmon read each), long enough to cross half of
    conmon's buffer, some glued to a partial line before them, a few without a stamp: the run
    that decides a glued piece is the same when only the candidate lines are read."""
    monkeypatch.setattr(sources, "BLOCK", block)
    out = []
    for i, (x, pad) in enumerate(lines):
        stamp = b"" if bare[i] else b"2026-11-29T14:25:%02d.000000001Z " % ((i // run) % 60)
        piece = stamp + b"y" * pad + x
        if glue[i] and out:
            out[-1] += piece  # a partial line: the next record's stamp follows inside the line
        else:
            out.append(piece)
    data = b"\n".join(out) + b"\n"
    for engine in ENGINES:
        _check(data, engine, "podman_ts", size=chunk, context=3)


def test_a_line_past_the_limit_is_cut_and_counted(monkeypatch):
    monkeypatch.setattr(sources, "LINE_MAX", 1000)
    monkeypatch.setattr(sources, "BLOCK", 4000)
    data = b"KV cache size: 1 tokens\n" + b"Error " + b"y" * 9000 + b"\nKV cache size: 2 tokens\n" + b"z" * 1500
    for engine in ENGINES:
        lines = Lines(_chunks(data, 700), "plain", Search(LITERALS, engine))
        got = list(lines)
        assert [(n, len(raw)) for n, raw, _ in got] == [(1, 23), (2, 1000), (3, 23)]
        assert lines.cut_lines == 2 and lines.lines_seen == 4


def test_hyperscan_and_python_find_the_same_lines_of_every_fixture():
    if scan._hs is None:
        pytest.skip("hyperscan is not installed here")
    hs, py = Search(LITERALS, "hyperscan"), Search(LITERALS, "python")
    assert hs.engine == "hyperscan" and py.engine == "python"
    for path in CORPUS:
        for block in sources.Blocks([path.read_bytes()], 40_000):
            assert hs.lines(block, stamps=True) == py.lines(block, stamps=True), path.name


def test_which_names_the_literals_a_line_holds():
    lits = ["KV cache size", "KV cache", "tokens", "█  version"]
    for engine in ENGINES:
        s = Search(lits, engine, every=True)
        assert s.which("GPU KV cache size: 5 tokens") == [0, 1, 2]
        assert s.which("▄▄ ▄█ █     █     █ ▀▄▀ █  version 0.22") == [3]
        assert s.which("nothing") == [] and not s.holds("nothing") and s.holds("5 tokens")


@settings(max_examples=EXAMPLES * 3, deadline=None)
@given(st.lists(st.text(alphabet="ab\n\x00", max_size=6), max_size=14))
def test_minimal_keeps_the_literals_that_hold_no_other(lits):
    distinct = sorted({x.encode() for x in lits if x}, key=lambda x: (len(x), x))
    want = [x for x in distinct if not any(y != x and y in x for y in distinct)]
    assert minimal(lits) == want
