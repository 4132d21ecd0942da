"""ingest reading a big file in a forked reader process (ingest._read, reader.py) stores exactly
what the in-process read stores: every fixture log, every scan engine, the full-scan path, a
resumed read of a grown file and a plan's user patterns.  BOOTLOG_BACKGROUND_MIN forces the
reader on for small files (0) or off (a size no fixture reaches)."""
from __future__ import annotations

import math

import pytest

from bootlog import ingest as ingest_mod
from bootlog import reader
from bootlog.ingest import parse_source
from bootlog.scan import available_engines
from bootlog.sources import open_source
from bootlog.store.db import open_db
from conftest import FIXTURES, grow_and_ingest, v1_start, v1_stats
from test_sqlite_fast import _ingest_to, tables

DATA = FIXTURES.parent.parent / "tests" / "data" / "envelope"
LOGS = sorted([*FIXTURES.rglob("*.log"), *DATA.glob("*.log"), *DATA.glob("*.stdout")])
NEVER = str(1 << 60)


@pytest.fixture
def forks(monkeypatch):
    """Counts the reader processes started."""
    calls = []
    real = reader.background

    def background(make, **kw):
        calls.append(1)
        return real(make, **kw)
    monkeypatch.setattr(reader, "background", background)
    return calls


def _key(x):
    if isinstance(x, float) and math.isnan(x):
        return "nan"
    if isinstance(x, dict):
        return [(k, _key(v)) for k, v in x.items()]
    if isinstance(x, (list, tuple)) or type(x).__name__ == "SpilledSamples":
        return [_key(v) for v in x]
    fields = getattr(type(x), "_fields", None)  # (bootlog.plain records)
    if fields is not None:
        return [type(x).__name__] + [(f, _key(getattr(x, f))) for f in fields]
    if type(x).__name__ == "Sample":  # (no _fields: its values may wait in its row)
        return ["Sample", ("line", x.line), ("ts", x.ts), ("values", _key(x.values))]
    return x


def _boots(path, monkeypatch, background: bool, **kw):
    monkeypatch.setenv("BOOTLOG_BACKGROUND_MIN", "0" if background else NEVER)
    return _key(parse_source(open_source(str(path)), **kw))


@pytest.mark.parametrize("engine", available_engines())
def test_same_boots_on_every_fixture_with_every_engine(engine, monkeypatch, forks):
    monkeypatch.setenv("BOOTLOG_ACCEL", engine)
    for path in LOGS:
        before = len(forks)
        there = _boots(path, monkeypatch, True)
        assert len(forks) == before + 1, path.name
        assert there == _boots(path, monkeypatch, False), (engine, path.name)


def _cut_by(cut: str, monkeypatch) -> None:
    """The reader cuts a plain log's blocks in native code (bootlog/_linecut.c) or with numpy
    (scan._np_lines, at once), or line by line (numpy imported only after NUMPY_AFTER bytes)."""
    from bootlog import scan

    if cut == "native" and scan._native_cut is None:
        pytest.skip("bootlog._linecut not built")
    if cut != "native":
        monkeypatch.setenv("BOOTLOG_NO_NATIVE", "1")
    if cut == "numpy":
        monkeypatch.setattr(scan, "NUMPY_AFTER", 0)


@pytest.mark.parametrize("cut", ["numpy", "native"])
@pytest.mark.parametrize("block", [3000, 1 << 20])
def test_same_boots_with_block_cuts_and_stats_runs(block, cut, monkeypatch, forks):
    """The reader cutting a block's lines at once (natively or with numpy) and parse() adding
    runs of stats lines at once (parse._stats_run): the boots of the in-process, line-by-line
    read."""
    from bootlog import scan

    _cut_by(cut, monkeypatch)
    monkeypatch.setattr(scan, "BLOCK", block)
    for path in LOGS:
        assert _boots(path, monkeypatch, True) == _boots(path, monkeypatch, False), path.name
    assert len(forks) == len(LOGS)


def test_same_boots_reading_every_line(monkeypatch, forks):
    monkeypatch.setenv("BOOTLOG_FULL_SCAN", "1")
    for path in LOGS[::3]:
        assert _boots(path, monkeypatch, True) == _boots(path, monkeypatch, False), path.name
    assert forks


def _ingest_all(db, paths, monkeypatch, background: bool):
    monkeypatch.setenv("BOOTLOG_BACKGROUND_MIN", "0" if background else NEVER)
    return _ingest_to(db, paths)


def test_same_rows_on_every_fixture(tmp_path, monkeypatch, forks):
    there = _ingest_all(tmp_path / "bg.db", LOGS, monkeypatch, True)
    assert len(forks) == len(LOGS)
    here = _ingest_all(tmp_path / "fg.db", LOGS, monkeypatch, False)
    assert len(forks) == len(LOGS)
    for t in here:
        assert there[t] == here[t], t


@pytest.mark.parametrize("cut", ["lines", "numpy", "native"])
@pytest.mark.parametrize("name", ["020-v0.11.2-metrics-heavy.log", "seed/07-5x262144-runtime-oom.log",
                                  "seed/08-gdn-hip-burst-prefix-caching.log"])
def test_same_rows_for_a_growing_log(tmp_path, monkeypatch, forks, name, cut):
    """Resumed reads (start offset, line number, format of the stored position) in the reader,
    with its blocks' lines found line by line, with numpy (scan._np_lines) or natively."""
    _cut_by(cut, monkeypatch)
    if cut != "lines":
        from bootlog import scan

        monkeypatch.setattr(scan, "BLOCK", 4000)
    data = (FIXTURES / name).read_bytes()
    ready = data.index(b"\n", data.index(b"Application startup complete")) + 1  # then a resumed read
    cuts = sorted({ready, len(data) // 2 + 11, len(data)})
    out, resumed = [], []
    for background in (True, False):
        monkeypatch.setenv("BOOTLOG_BACKGROUND_MIN", "0" if background else NEVER)
        log = tmp_path / ("bg" if background else "fg") / "grow.log"
        log.parent.mkdir()
        engine = open_db(str(tmp_path / f"{int(background)}.db"))
        try:
            resumed += [res.resumed_at_line is not None for res in grow_and_ingest(engine, log, data, cuts)]
        finally:
            engine.dispose()
        out.append(tables(tmp_path / f"{int(background)}.db"))
    assert len(forks) == len(cuts)
    assert any(resumed)
    there, here = out
    for t in here:
        if t in ("sources", "positions"):  # their key holds the (different) file path
            assert len(there[t]) == len(here[t])
        else:
            assert there[t] == here[t], t


def test_same_boots_with_a_plans_user_patterns(tmp_path, monkeypatch, forks):
    from bootlog.plan import load_plan

    plan_file = tmp_path / "plan.toml"
    plan_file.write_text(
        '[[pattern]]\nname = "my_kv_tokens"\nregex = \'KV cache size: (?P<value>[\\d,]+) tokens\'\nunit = "tokens"\n'
        'samples = [{ line = "GPU KV cache size: 398,658 tokens", value = 398658 }]\n\n'
        '[[pattern]]\nname = "my_stats"\nregex = \'Running: (?P<value>\\d+) reqs\'\nunit = "reqs"\n'
        'samples = [{ line = "Running: 3 reqs, Waiting: 0 reqs", value = 3 }]\n')
    plan = load_plan(str(plan_file))
    assert len(plan.patterns) == 2
    for path in LOGS[::5]:
        got = []
        for background in (True, False):
            monkeypatch.setenv("BOOTLOG_BACKGROUND_MIN", "0" if background else NEVER)
            got.append(_key(ingest_mod._parse(open_source(str(path)), plan=plan)[0]))
        assert got[0] == got[1], path.name
    assert forks


def test_small_files_and_streams_are_read_here(tmp_path, monkeypatch, forks):
    monkeypatch.delenv("BOOTLOG_BACKGROUND_MIN", raising=False)
    parse_source(open_source(str(FIXTURES / "seed/07-5x262144-runtime-oom.log")))
    assert not forks  # far below ingest.BACKGROUND_MIN
    monkeypatch.setenv("BOOTLOG_BACKGROUND_MIN", "0")
    monkeypatch.setattr(ingest_mod, "read_records", ingest_mod.read_records)
    src = open_source(str(FIXTURES / "seed/07-5x262144-runtime-oom.log"))
    src.kind, src.size = "stdin", None  # (a stream can be read only once: never in a child)
    parse_source(src)
    assert not forks


def _two_servers() -> list[str]:
    """Two API servers writing to one file (pids 10 and 20), the older one still logging after
    the newer one started, and the file ending in access-log lines that hold no literal."""
    def access(pid: int) -> str:
        return f'(APIServer pid={pid}) INFO:     127.0.0.1:45988 - "POST /v1/chat/completions HTTP/1.1" 200 OK'
    return [*v1_start(10, 110, 0), v1_stats(10, 1), *v1_start(20, 120, 2), v1_stats(10, 3), v1_stats(20, 4),
            access(10), v1_stats(10, 5), access(20), access(10), access(20)]


def test_same_boots_scanning_or_reading_every_line(tmp_path, monkeypatch):
    """Candidate lines only (the scan) or every line: the same boots on every fixture, and for
    two servers interleaved in one file (plain, and as podman -t prints it) whose last lines hold
    no literal: every boot still running at the end ends at the file's last line either way
    (the scan gave only the newest-ending one the lines after the last candidate)."""
    lines = _two_servers()
    plain = tmp_path / "two.log"
    plain.write_text("\n".join(lines) + "\n")
    pod = tmp_path / "two-podman.log"
    pod.write_text("".join(f"2026-11-20T10:{i // 60:02d}:{i % 60:02d}.000000001Z {x}\n" for i, x in enumerate(lines)))
    for path in [*LOGS, plain, pod]:
        monkeypatch.delenv("BOOTLOG_FULL_SCAN", raising=False)
        fast = _boots(path, monkeypatch, False)
        monkeypatch.setenv("BOOTLOG_FULL_SCAN", "1")
        assert _boots(path, monkeypatch, False) == fast, path.name
    ends = [b[2] for b in fast]  # (the podman log's boots: ["Boot", first_line, last_line, ...])
    assert ends[-2:] == [("last_line", len(lines))] * 2
