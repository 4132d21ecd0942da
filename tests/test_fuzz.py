"""Fuzzing: random bytes and mutated real logs never make bootlog raise or corrupt its database."""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings, strategies as st

from bootlog.read.envelope import read as records
from bootlog.errors import BootlogError
from bootlog.parse.parse import parse
from bootlog.records import Record
from bootlog.parse.vline import parse_line
from paths import FIXTURES

REAL = [
    FIXTURES / n
    for n in (
        "014-v0.10.2-nohup-multiboot.log",
        "005-v0.8.4-v1-tp2.log",
        "022-v0.13.0-oom-engine-failed.log",
        "057-rocm-rdna4-gfx12-tp2-v0.22.69-fork-boot.log",
    )
]
SEED = sorted((FIXTURES / "seed").glob("*.log"))[:2]
LOGS = [p.read_bytes() for p in REAL + SEED if p.exists()]

FAST = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def chunked(data: bytes, size: int):
    return [data[i : i + size] for i in range(0, len(data), size)] or [b""]


@FAST
@given(st.binary(max_size=4000), st.integers(min_value=1, max_value=700))
def test_envelope_decoder_never_raises_on_random_bytes(data, size):
    recs = list(records(chunked(data, size)))
    for r in recs:
        assert isinstance(r.text, str) and r.lineno >= 1
    assert [r.lineno for r in recs] == sorted(r.lineno for r in recs)


@FAST
@given(st.text(max_size=300))
def test_vline_parser_never_raises(text):
    v = parse_line(Record(lineno=1, text=text))
    assert isinstance(v.msg, str)


def mutate(data: bytes, ops: list[tuple[int, int, int]]) -> bytes:
    """Cut, splice, flip bytes and duplicate lines at positions drawn by hypothesis."""
    buf = bytearray(data)
    for op, a, b in ops:
        if not buf:
            break
        i, j = sorted((a % len(buf), b % len(buf)))
        if op == 0:  # cut a span out
            del buf[i:j]
        elif op == 1:  # flip bits of a few bytes
            for k in range(i, min(j, i + 8)):
                buf[k] ^= 0xA5
        elif op == 2:  # duplicate a span (duplicated lines, repeated boots)
            buf[j:j] = buf[i:j][:5000]
        else:  # splice in garbage
            buf[i:i] = bytes((k * 37 + a) & 0xFF for k in range(b % 300))
    return bytes(buf)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.integers(min_value=0, max_value=len(LOGS) - 1),
    st.lists(st.tuples(st.integers(0, 3), st.integers(0, 10**7), st.integers(0, 10**7)), max_size=6),
)
def test_parse_survives_mutated_real_logs(which, ops):
    data = mutate(LOGS[which], ops)
    boots = parse(records(chunked(data, 4096)))
    for b in boots:
        assert b.status in ("ready", "failed", "incomplete")
        assert 1 <= b.first_line <= b.last_line
        assert b.fingerprint


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.integers(min_value=0, max_value=len(LOGS) - 1),
    st.lists(st.tuples(st.integers(0, 3), st.integers(0, 10**7), st.integers(0, 10**7)), max_size=4),
)
def test_whole_ingest_of_mutated_logs_keeps_database_consistent(which, ops):
    from bootlog.run.ingest import ingest
    from bootlog.store.db import open_store
    from bootlog.store.housekeeping import check
    from bootlog.store.reads import list_boots, show_boot

    with tempfile.TemporaryDirectory() as td:
        log = Path(td) / "m.log"
        log.write_bytes(mutate(LOGS[which], ops))
        engine = open_store(str(Path(td) / "f.db"))
        try:
            first = ingest(engine, str(log))
            again = ingest(engine, str(log))
        except BootlogError:
            return  # a clear, typed error is an acceptable answer to garbage
        assert not any(r.created for r in again)  # idempotent even on garbage
        stored = list_boots(engine)
        assert len(stored) == len({r.id for r in first})
        for b in stored:
            s = show_boot(engine, b["id"])
            assert s["boot"]["status"] in ("ready", "failed", "incomplete")
        assert check(engine) == []
        engine.close()
