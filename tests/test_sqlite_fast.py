"""SQLite's fast write paths store exactly the rows of the generic SQLAlchemy path.

On SQLite, sample rows skip SQLAlchemy's per-row parameter processing (store/queries.py,
_sqlite_fast); queries._FORCE_GENERIC turns that off.  Every table, every column but the wall
clock ones, must come out the same on every real log, read whole, grown (the resumed read's
_extend_tx) and with samples spilled to disk while parsing.
"""
from __future__ import annotations

import json
import math
import sqlite3
from pathlib import Path

import pytest

from bootlog import ingest as ingest_mod
from bootlog.ingest import ingest
from bootlog.records import Sample
from bootlog.store import queries
from bootlog.store.db import open_db
from bootlog.store.queries import SourceInfo, save_boots
from bootlog.store.testing import seed_boot
from conftest import FIXTURES, grow_and_ingest

LOGS = sorted(p.relative_to(FIXTURES).as_posix() for p in FIXTURES.rglob("*.log"))
_CLOCK = {"ingested_at", "created", "updated"}  # wall-clock columns: differ between any two runs


def tables(path: Path) -> dict[str, list[tuple]]:
    """Every row of every table (rowid order), with the stored SQLite type of every value."""
    conn = sqlite3.connect(str(path))
    try:
        out = {}
        names = [n for (n,) in conn.execute("SELECT name FROM sqlite_master WHERE type='table' ORDER BY name")]
        for t in names:
            cols = [r[1] for r in conn.execute(f"PRAGMA table_info({t})") if r[1] not in _CLOCK]
            sel = ", ".join(f'"{c}", typeof("{c}")' for c in cols)
            out[t] = conn.execute(f"SELECT {sel} FROM {t} ORDER BY rowid").fetchall()
        return out
    finally:
        conn.close()


def _ingest_to(db: Path, paths: list[Path]) -> dict[str, list[tuple]]:
    engine = open_db(str(db))
    try:
        for p in paths:
            ingest(engine, str(p))
    finally:
        engine.dispose()
    return tables(db)


def _both(tmp_path, monkeypatch, paths: list[Path], tag: str = "") -> tuple[dict, dict]:
    fast = _ingest_to(tmp_path / f"fast{tag}.db", paths)
    monkeypatch.setattr(queries, "_FORCE_GENERIC", True)
    generic = _ingest_to(tmp_path / f"generic{tag}.db", paths)
    monkeypatch.setattr(queries, "_FORCE_GENERIC", False)
    return fast, generic


def test_fast_path_is_taken_on_sqlite(tmp_path, monkeypatch):
    calls = []
    real = queries._insert_samples_sqlite
    monkeypatch.setattr(queries, "_insert_samples_sqlite", lambda c, p, b=None: calls.append(1) or real(c, p, b))
    _ingest_to(tmp_path / "t.db", [FIXTURES / "seed/07-5x262144-runtime-oom.log"])
    assert calls


def test_corpus_rows_equal_generic_rows(tmp_path, monkeypatch):
    paths = [FIXTURES / name for name in LOGS]
    fast, generic = _both(tmp_path, monkeypatch, paths)
    assert len(fast["samples"]) > 1000
    for t in generic:
        assert fast[t] == generic[t], t


def test_spilled_samples_store_the_same_rows(tmp_path, monkeypatch):
    """Samples spilled to disk while parsing reach the fast path as ready-made rows."""
    paths = [FIXTURES / name for name in LOGS]
    monkeypatch.setattr(queries, "_FORCE_GENERIC", True)
    generic = _ingest_to(tmp_path / "generic.db", paths)
    monkeypatch.setattr(queries, "_FORCE_GENERIC", False)
    monkeypatch.setattr(ingest_mod, "_SPILL_KEEP", 2)
    monkeypatch.setattr(ingest_mod, "_SPILL_EVERY", 3)
    monkeypatch.setattr(queries, "_BATCH", 7)
    spilled = _ingest_to(tmp_path / "spilled.db", paths)
    for t in generic:
        assert spilled[t] == generic[t], t


@pytest.mark.parametrize("name", ["020-v0.11.2-metrics-heavy.log", "seed/07-5x262144-runtime-oom.log",
                                  "seed/09-night-ladder-4-boots.log"])
def test_grown_log_rows_equal_generic_rows(tmp_path, monkeypatch, name):
    """A re-ingest of a grown file appends to the stored boot (_extend_tx): same rows both ways."""
    data = (FIXTURES / name).read_bytes()
    cuts = [len(data) // 3, (2 * len(data)) // 3, len(data)]
    out = []
    for generic in (False, True):
        monkeypatch.setattr(queries, "_FORCE_GENERIC", generic)
        log = tmp_path / f"grow{int(generic)}" / "grow.log"  # one name: the source key is the same
        log.parent.mkdir()
        engine = open_db(str(tmp_path / f"g{int(generic)}.db"))
        try:
            grow_and_ingest(engine, log, data, cuts)
        finally:
            engine.dispose()
        out.append(tables(tmp_path / f"g{int(generic)}.db"))
    fast, generic_rows = out
    for t in generic_rows:
        if t in ("sources", "positions"):  # their key holds the (different) file path
            assert len(fast[t]) == len(generic_rows[t])
            continue
        assert fast[t] == generic_rows[t], t


def test_odd_sample_values_equal_generic_rows(tmp_path, monkeypatch):
    """Values the JSON conversion has to touch (non-finite, ints, nested, non-str keys)."""
    odd = [
        {"kv_cache_usage_pct": float("inf"), "prompt_throughput_tps": float("nan")},
        {"running_reqs": 3, "flag": True, "none": None, "text": "é\u2028"},
        {"nested": {"a": [1.5, (2, 3)], 4: float("-inf")}, 7: 1.0},
        {},
        {"x": 1e300, "y": -0.0, "z": 5e-324},
    ]
    src = SourceInfo("odd", "file")
    out = []
    for generic in (False, True):
        monkeypatch.setattr(queries, "_FORCE_GENERIC", generic)
        engine = open_db(str(tmp_path / f"o{int(generic)}.db"))
        try:
            boot = seed_boot(0)
            boot.samples = [Sample(100 + i, None if i % 2 else boot.started_at, v) for i, v in enumerate(odd)]
            save_boots(engine, src, [boot])
        finally:
            engine.dispose()
        out.append(tables(tmp_path / f"o{int(generic)}.db"))
    assert out[0]["samples"] == out[1]["samples"]
    assert len(out[0]["samples"]) == len(odd)
    assert not any(isinstance(x, float) and math.isnan(x) for row in out[0]["samples"] for x in row)


def test_spilled_rows_rebuild_every_sample_exactly():
    """The spill file holds rows; odd samples (values that are not plain floats, a ts with a
    zone that is no fixed offset) come back as they went in, and row_parts() are sample_rows()."""
    from datetime import datetime, timedelta, timezone
    from zoneinfo import ZoneInfo

    from bootlog.records import Boot
    from bootlog.store.samplerows import sample_rows

    stamps = [None, datetime(2026, 1, 2, 3, 4, 5), datetime(2026, 1, 2, 3, 4, 5, 123456),
              datetime(2026, 1, 2, 3, 4, 5, tzinfo=timezone.utc),
              datetime(2026, 1, 2, 3, 4, 5, 7, tzinfo=timezone(timedelta(hours=-7, minutes=-30))),
              datetime(2026, 7, 2, 3, 4, 5, tzinfo=ZoneInfo("Europe/Berlin"))]
    values = [{"a": 1.5, "b": 2.0}, {"a": float("nan")}, {"n": 3}, {}, {"x": {"y": [1.0]}}, {"é": 0.1}]
    samples = [Sample(10 + i, stamps[i % len(stamps)], dict(values[(i * 5) % len(values)]))
               for i in range(40)]
    b = Boot(first_line=1, last_line=100, samples=list(samples))
    spill = ingest_mod._Spill(splitter=None)
    spill._put(b)  # all but the last sample
    b.samples.extend(Sample(200 + i, None, {"z": float(i)}) for i in range(3))
    spill._put(b)
    spill.seal([b])
    assert isinstance(b.samples, ingest_mod.SpilledSamples) and b.samples.spilled == 42
    want = samples + [Sample(200 + i, None, {"z": float(i)}) for i in range(3)]
    got = list(b.samples)
    assert repr(got) == repr(want) == repr(list(b.samples))  # (repr: NaN != NaN)
    assert [s for s in got if "nan" not in repr(s)] == [s for s in want if "nan" not in repr(s)]
    assert [str(s.ts.tzinfo) if s.ts else None for s in got] == [str(s.ts.tzinfo) if s.ts else None for s in want]
    assert [r for part in b.samples.row_parts() for r in part] == sample_rows(want)
    for (line, ts, js), s in zip(sample_rows(want), want):
        assert ts == (s.ts.isoformat() if s.ts else None)
        assert js == json.dumps(queries._jsonable(s.values))
