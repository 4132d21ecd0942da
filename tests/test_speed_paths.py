"""The fast paths of the ingest hot loop give exactly what the generic machinery gives.

* parse(fast_stats=True) (periodic stats lines read by one regex each, straight into
  BootSplitter.feed_sample) == parse(fast_stats=False) (vline parse, BootSplitter.feed, the whole
  catalogue) on every fixture log: the same Samples, and the same boots in every other respect.
* The fast path really takes the fixtures' stats lines (it is not silently bypassed), and it
  hands a line back to the generic path whenever the splitter's state makes it matter.
* Every hit engine of scan.Scanner (hyperscan included when importable) proposes the same lines.
"""
from __future__ import annotations

import math
import os
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bootlog import boots, parse as parse_mod, patterns
from bootlog.envelope import records as envelope_records
from bootlog.parse import parse
from bootlog.records import LineBatch, Record
from bootlog.scan import Scanner, available_engines
from bootlog.vline import parse_line

ROOT = Path(__file__).resolve().parent.parent
LOGS = sorted((ROOT / "fixtures" / "logs").glob("*.log")) + sorted((ROOT / "fixtures" / "logs" / "seed").glob("*.log"))
STATS = "Avg prompt throughput: "
TB = "Traceback (most recent call last)"


def _records(path: Path) -> list[Record]:
    data = path.read_bytes()
    return list(envelope_records([data[i:i + (1 << 16)] for i in range(0, len(data), 1 << 16)]))


def _key(x):
    """repr-like comparison key that treats nan == nan."""
    if isinstance(x, float) and math.isnan(x):
        return "nan"
    if isinstance(x, dict):
        return [(k, _key(v)) for k, v in x.items()]  # order too: samples are stored as JSON
    if isinstance(x, (list, tuple)):
        return [_key(v) for v in x]
    fields = getattr(type(x), "_fields", None)  # (bootlog.plain records)
    if fields is not None:
        return [type(x).__name__] + [(f, _key(getattr(x, f))) for f in fields]
    if type(x).__name__ == "Sample":  # (no _fields: its values may wait in its row)
        from bootlog.store.samplerows import sample_rows

        row = sample_rows([x])[0]  # what the store writes (asked before values: they drop the row)
        return ["Sample", ("line", x.line), ("ts", x.ts), ("row", row), ("values", _key(x.values))]
    return x


class _Counting:
    """Counts the lines BootSplitter.feed_sample took and handed back."""

    def __init__(self, monkeypatch) -> None:
        self.took = self.declined = 0
        orig = boots.BootSplitter.feed_sample

        def feed_sample(splitter, *a):
            ok = orig(splitter, *a)
            if ok:
                self.took += 1
            else:
                self.declined += 1
            return ok
        monkeypatch.setattr(boots.BootSplitter, "feed_sample", feed_sample)


def test_fixtures_exist():
    assert len(LOGS) >= 60
    assert any(p.parent.name == "seed" for p in LOGS)


def _stamp(r: Record) -> str | None:
    """The podman stamp (as scan._podman_runs sends it) that envelope.parse_ts reads as r.ts."""
    if r.ts is None or r.ts.utcoffset() != timedelta(0):
        return None
    return r.ts.strftime("%Y-%m-%dT%H:%M:%S.%f") + "321Z"


def _batched(recs: list[Record], size: int) -> list:
    """The records as the reader process hands lines to parse(): LineBatch items of `size`
    lines, a plain log's without times, a podman -t log's with the stamps of their envelope
    times (a record with any other time, or a stream, stays a Record)."""
    from array import array

    out: list = []
    run: list[Record] = []
    kind = None

    def flush() -> None:
        if run:
            stamps = None if kind == "plain" else [_stamp(x) for x in run]
            out.append(LineBatch(array("q", [x.lineno for x in run]), [x.text for x in run], stamps))
            run.clear()

    for r in recs:
        k = None if r.stream is not None else "plain" if r.ts is None else "stamp" if _stamp(r) else None
        if k != kind or len(run) >= size:
            flush()
            kind = k
        if k is None:
            out.append(r)
        else:
            run.append(r)
    flush()
    return out


def _state(splitter: boots.BootSplitter) -> list:
    """What the splitter's boots hold besides their Boot, as far as a stats line can change it."""
    accs = [a for a in [*splitter.accs, splitter.orphan] if a is not None]
    return [(a.last_seen, a.last_ts, a.body, a.progressed, a.ready_line, len(a.fp), len(a.fp_catalogue))
            for a in accs]


def _native_stats_lines():
    """parse.py's native reader of stats lines (bootlog._linecut.stats_run), or None if not built."""
    parse_mod._NATIVE.clear()
    return parse_mod._native_stats()


def _fast_three_ways(recs: list[Record], **kw) -> list:
    """parse(fast_stats=True) of the records one by one, and of them in LineBatches of 1, 3 and
    4096 lines (runs of stats lines added at once: parse._stats_run, reading them in Python and,
    where it was built, in native code): the same boots and the same splitter state every way."""
    sp = boots.BootSplitter(kw.get("continuing"))
    fast = parse(recs, year=kw.get("year", 2026), fast_stats=True, splitter=sp)
    want = (_key(fast), _state(sp))
    native = _native_stats_lines()
    try:
        for way in [None, native] if native is not None else [None]:
            parse_mod._NATIVE[:] = [way]
            for size in (1, 3, 4096):
                sp2 = boots.BootSplitter(kw.get("continuing"))
                got = parse(_batched(recs, size), year=kw.get("year", 2026), fast_stats=True, splitter=sp2)
                assert (_key(got), _state(sp2)) == want, (size, way)
    finally:
        parse_mod._NATIVE.clear()
    return fast


@pytest.mark.parametrize("way", ["regex", "native"])
@pytest.mark.parametrize("path", LOGS, ids=lambda p: p.parent.name[:4] + "/" + p.name[:24])
def test_fast_stats_path_equals_generic(path, way, monkeypatch):
    """Line by line, each stats line read by the regexes, or first by the native reader (where it
    was built): the same boots as the generic path."""
    native = _native_stats_lines()
    if way == "native" and native is None:
        pytest.skip("bootlog._linecut not built")
    monkeypatch.setattr(parse_mod, "_NATIVE", [native if way == "native" else None])
    recs = _records(path)
    generic = parse(recs, year=2026, fast_stats=False)
    count = _Counting(monkeypatch)
    fast = parse(recs, year=2026, fast_stats=True)
    # the Samples first (the point of the fast path), then everything else about the boots
    assert [_key(b.samples) for b in fast] == [_key(b.samples) for b in generic]
    assert _key(fast) == _key(generic)
    n_stats = sum(STATS in r.text for r in recs)
    assert count.took + count.declined <= n_stats
    assert _key(_fast_three_ways(recs)) == _key(generic)


@pytest.mark.parametrize("way", ["python", "native"])
def test_stats_runs_are_taken_at_once_from_batches(monkeypatch, way):
    """The fixtures' everyday V1 stats lines go through parse._stats_run in runs, not one by one
    (read in Python, or in native code: it takes them too)."""
    native = _native_stats_lines()
    if way == "native" and native is None:
        pytest.skip("bootlog._linecut not built")
    monkeypatch.setattr(parse_mod, "_NATIVE", [native if way == "native" else None])
    took = []
    real = parse_mod._stats_run

    def run(*a):
        got = real(*a)
        took.append(got[0] - a[3])
        return got
    monkeypatch.setattr(parse_mod, "_stats_run", run)
    n = 0
    for path in LOGS:
        recs = _records(path)
        n += sum(bool(parse_mod._fast_stats()[0][2](r.text)) for r in recs if r.ts is None)
        parse(_batched(recs, 4096), year=2026)
    assert n > 500
    assert sum(took) >= 0.9 * n and max(took) >= 50


V1_PLAIN = ("INFO {} [loggers.py:259] Engine 000: Avg prompt throughput: {}.0 tokens/s, Avg generation "
            "throughput: 2.0 tokens/s, Running: 1 reqs, Waiting: 0 reqs, GPU KV cache usage: 2.2%, Prefix "
            "cache hit rate: 5.0%")
START_V1 = [
    "INFO 06-20 09:00:00 [api_server.py:1] vLLM API server version 0.11.0",
    "INFO 06-20 09:00:01 [utils.py:2] non-default args: {'model': 'm'}",
    "INFO 06-20 09:00:05 [core.py:3] Initializing a V1 LLM engine (v0.11.0) with config: model='m'",
    "INFO 06-20 09:00:30 [kv_cache_utils.py:4] GPU KV cache size: 1,000 tokens",
    "INFO:     Application startup complete.",
]


def test_a_run_of_stats_lines_still_ticks():
    """ingest spills finished samples on parse's tick: a run taken at once ticks at its end."""
    from array import array

    lines = [*START_V1, *[V1_PLAIN.format(f"06-21 00:00:{i:02d}", i) for i in range(20)]]
    at: list[int] = []
    sp = boots.BootSplitter()
    parse([LineBatch(array("q", range(1, len(lines) + 1)), lines)], year=2026, splitter=sp,
          tick=(4, lambda: at.append(len(sp.cur.boot.samples) if sp.cur else 0)))
    assert at and at[-1] == 20


def test_stats_runs_across_new_year_a_restart_and_a_traceback():
    """Runs of stats lines around what ends them: New Year (12-31 -> 01-01 after a June start),
    a bad date, an hour 24, a restart, a traceback and its context, another server's tag."""
    lines = [*START_V1[:2], V1_PLAIN.format("06-20 09:00:02", 1), *START_V1[2:],
             *[V1_PLAIN.format(f"12-31 23:59:{i:02d}", i) for i in range(10)],
             *[V1_PLAIN.format(f"01-01 00:00:{i:02d}", i) for i in range(5)],
             V1_PLAIN.format("02-30 00:00:00", 1), V1_PLAIN.format("01-02 24:00:00", 2),
             "INFO 01-02 00:01:00 [engine.py:9] some other line without a literal",
             *[V1_PLAIN.format(f"01-02 00:02:{i:02d}", i) for i in range(5)],
             "ERROR 01-02 00:03:00 [engine.py:9] Engine background task failed", TB,
             '  File "x.py", line 1, in f', V1_PLAIN.format("01-02 00:03:01", 7), "RuntimeError: boom",
             *[V1_PLAIN.format(f"01-02 00:04:{i:02d}", i) for i in range(5)],
             "(APIServer pid=7) " + V1_PLAIN.format("01-02 00:05:00", 1),
             *START_V1, *[V1_PLAIN.format(f"06-21 00:00:{i:02d}", i) for i in range(5)]]
    recs = [Record(i + 1, t) for i, t in enumerate(lines)]
    generic = parse(recs, year=2026, fast_stats=False)
    fast = _fast_three_ways(recs)
    assert _key(fast) == _key(generic)
    years = [s.ts.year for b in fast for s in b.samples if s.ts is not None]
    assert 2026 in years and 2027 in years
    assert _key(_fast_three_ways(recs[9:], continuing="ready")) == _key(parse(recs[9:], year=2026,
                                                                               fast_stats=False, continuing="ready"))


def test_fast_path_takes_the_fixtures_stats_lines(monkeypatch):
    count = _Counting(monkeypatch)
    n = 0
    for path in LOGS:
        recs = _records(path)
        n += sum(STATS in r.text for r in recs)
        parse(recs, year=2026)
    assert n > 1000
    assert count.took >= 0.95 * n  # nearly all of them: else the fast path is not fast


@pytest.mark.parametrize("path", LOGS, ids=lambda p: p.parent.name[:4] + "/" + p.name[:24])
def test_fast_regexes_read_what_vline_and_the_catalogue_read(path):
    """Per line: the fast regex's time and figures equal parse_line's and patterns.match's."""
    fast = parse_mod._fast_stats()
    for rec in _records(path):
        if STATS not in rec.text:
            continue
        for fullmatch, names, *_ in fast:
            m = fullmatch(rec.text)
            if m is None:
                continue
            v = parse_line(rec, 2026)
            hits = patterns.match(v.msg)
            assert [h.kind for h in hits] == ["stat"], rec.text
            values = {k: float(x) for k, x in zip(names, m.group(*names)) if x is not None}
            assert _key(values) == _key({k: float(x) for k, x in hits[0].value.items()}), rec.text
            if rec.ts is None and v.ts is not None:
                assert datetime(2026, int(m["mo"]), int(m["d"]), int(m["h"]), int(m["mi"]), int(m["s"])) == v.ts
            assert m["name"] == v.proc
            assert v.level in ("DEBUG", "INFO", "WARNING")
            break


def test_no_other_catalogue_literal_fits_a_fast_stats_line():
    """Every optional part present: the line holds only the stats entries' own literals, and
    no start-marker / status / failure wording the splitter reads."""
    lines = [
        "Engine 000: Avg prompt throughput: 1.0 tokens/s, Avg generation throughput: 2.0 tokens/s, Running: 3 reqs, "
        "Waiting: 4 reqs, Deferred: 5 reqs, Preemptions: 6, XPU KV cache usage: 7.0%, Prefix cache hit rate: 8.0%, "
        "Corrupted: 9 reqs, External prefix cache hit rate: 10.0%, MM cache hit rate: 11.0%.",
        "Avg prompt throughput: nan tokens/s, Avg generation throughput: -1.5 tokens/s, Running: 1 reqs, Swapped: 0 "
        "reqs, Pending: 0 reqs, GPU KV cache usage: 0.5%, CPU KV cache usage: 0.0%.",
    ]
    for msg in lines:
        prefixed = "(APIServer pid=7) INFO 11-20 09:12:33 [loggers.py:1] " + msg
        assert any(fm(prefixed) for fm, *_ in parse_mod._fast_stats())
        lits = [lit for lit in patterns.LITERALS if lit in msg]
        assert set(lits) <= {"Avg prompt throughput: ", "Running: "}, lits
        assert [lit for lit in boots.LITERALS if lit in msg] == []
        assert boots._marker_of(msg) is None
        assert not boots._engine_done(msg) and not boots._kv_known(msg)
        assert not boots._RUNTIME_FATAL.search(msg) and not boots._OOM.search(msg)
        assert not boots._EXC.match(msg) and TB not in msg


# ---------------------------------------------------------------- hand-made splitter states

START = [
    "INFO 11-20 09:00:00 api_server.py:1] vLLM API server version 0.6.4",
    "INFO 11-20 09:00:01 api_server.py:2] args: Namespace(model='m', tensor_parallel_size=2)",
    "INFO 11-20 09:00:05 llm_engine.py:3] Initializing an LLM engine (v0.6.4) with config: model='m'",
    "INFO 11-20 09:00:30 gpu_executor.py:4] # GPU blocks: 1000, # CPU blocks: 100",
    "INFO 11-20 09:00:40 api_server.py:5] Starting vLLM API server on http://0.0.0.0:8000",
    "INFO:     Application startup complete.",
]
V0_STATS = ("INFO 11-20 09:{:02d}:00 metrics.py:351] Avg prompt throughput: {}.0 tokens/s, Avg generation "
            "throughput: 0.1 tokens/s, Running: 1 reqs, Swapped: 0 reqs, Pending: 0 reqs, GPU KV cache usage: "
            "0.5%, CPU KV cache usage: 0.0%.")
V1_TAGGED = ("(APIServer pid={}) INFO 11-20 10:{:02d}:00 [loggers.py:259] Engine 000: Avg prompt throughput: {}.0 "
             "tokens/s, Avg generation throughput: 2.0 tokens/s, Running: 1 reqs, Waiting: 0 reqs, GPU KV cache "
             "usage: 2.2%, Prefix cache hit rate: 5.0%")


def _both(lines, monkeypatch, **kw):
    recs = [Record(i + 1, t, kw.pop("ts", None)) for i, t in enumerate(lines)] if not kw.get("recs") else kw["recs"]
    generic = parse(recs, year=2026, fast_stats=False)
    count = _Counting(monkeypatch)
    fast = parse(recs, year=2026, fast_stats=True)
    assert _key(fast) == _key(generic)
    return fast, count


def test_stats_before_any_boot_and_between_start_lines(monkeypatch):
    lines = [V0_STATS.format(1, 1), V0_STATS.format(2, 2), *START[:2], V0_STATS.format(3, 3), *START[2:],
             *[V0_STATS.format(10 + i, 10 + i) for i in range(5)]]
    got, count = _both(lines, monkeypatch)
    # stats before any boot make and feed the orphan the fast way, as feed() would
    assert count.took >= 7
    assert sum(len(b.samples) for b in got) >= 5


@pytest.mark.parametrize("path", [p for p in LOGS if "Application startup complete" in p.read_text(errors="replace")],
                         ids=lambda p: p.parent.name[:4] + "/" + p.name[:24])
def test_a_resumed_reads_lines_fast_and_generic(path, monkeypatch):
    """A resumed read (BootSplitter(continuing)): the lines before the next start marker belong
    to the stored boot; its stats lines take the fast path too, with the same result."""
    recs = _records(path)
    at = next(i for i, r in enumerate(recs) if "Application startup complete" in r.text) + 1
    tail = recs[at:]
    generic = parse(tail, year=2026, fast_stats=False, continuing="ready")
    count = _Counting(monkeypatch)
    fast = parse(tail, year=2026, fast_stats=True, continuing="ready")
    assert _key(fast) == _key(generic)
    if path.parent.name == "seed":  # the operator's tagged v0.22 stats lines: all of them fast
        n = sum(STATS in r.text for r in tail)
        assert n and count.took == n and count.declined == 0


def test_stats_inside_an_open_traceback_and_its_context(monkeypatch):
    lines = [*START, V0_STATS.format(1, 1),
             "ERROR 11-20 09:01:00 engine.py:9] Engine background task failed",
             TB, '  File "x.py", line 1, in f', V0_STATS.format(2, 2), "RuntimeError: boom",
             *[V0_STATS.format(3 + i, 3 + i) for i in range(4)]]
    got, count = _both(lines, monkeypatch)
    assert count.declined >= 1 and count.took >= 4


def test_tagged_stats_of_a_new_or_older_server(monkeypatch):
    def start(pid, minute):
        return [f"(APIServer pid={pid}) INFO 11-20 10:{minute:02d}:00 [api_server.py:1] vLLM API server version 0.11.0",
                f"(APIServer pid={pid}) INFO 11-20 10:{minute:02d}:01 [utils.py:2] non-default args: {{'model': 'm'}}",
                f"(EngineCore_DP0 pid={pid + 100}) INFO 11-20 10:{minute:02d}:05 [core.py:3] Initializing a V1 LLM "
                f"engine (v0.11.0) with config: model='m'",
                f"(APIServer pid={pid}) INFO:     Application startup complete."]
    lines = [*start(10, 0), V1_TAGGED.format(10, 1, 1), V1_TAGGED.format(10, 2, 2),
             *start(20, 3), V1_TAGGED.format(10, 4, 4), V1_TAGGED.format(20, 5, 5), V1_TAGGED.format(10, 6, 6),
             V1_TAGGED.format(30, 7, 7), V1_TAGGED.format(20, 8, 8)]
    got, count = _both(lines, monkeypatch)
    assert count.declined >= 1 and count.took >= 3
    assert len(got) >= 2
    # the same with podman's times (runs of stamped lines: parse._stamped_run)
    t0 = datetime(2026, 11, 20, 10, 0, tzinfo=timezone.utc)
    recs = [Record(i + 1, t, t0 + timedelta(seconds=i)) for i, t in enumerate(lines)]
    assert _key(_fast_three_ways(recs)) == _key(parse(recs, year=2026, fast_stats=False))


def test_envelope_times_and_the_new_year(monkeypatch):
    # no envelope: 12-31 -> 01-01 bumps the year, on the fast path as on the generic one
    lines = [*START, V0_STATS.format(1, 1).replace("11-20", "12-31"), V0_STATS.format(2, 2).replace("11-20", "01-01"),
             V0_STATS.format(3, 3).replace("11-20", "02-30")]
    got, _ = _both(lines, monkeypatch)
    years = [s.ts.year if s.ts else None for b in got for s in b.samples]
    assert years == [2026, 2027, None]
    # envelope time wins over vLLM's own
    ts = datetime(2025, 5, 6, 7, 8, 9, tzinfo=timezone.utc)
    recs = [Record(i + 1, t, ts) for i, t in enumerate([*START, V0_STATS.format(1, 1)])]
    got, _ = _both(None, monkeypatch, recs=recs)
    assert got[-1].samples[-1].ts == ts


def test_odd_shapes_go_the_generic_way(monkeypatch):
    lines = [*START,
             # two tags (Ray), a worker's tag, glued junk, fractional seconds, an unknown part
             "(RayWorkerProc pid=9, ip=10.0.0.2) (APIServer pid=9) " + V0_STATS.format(1, 1),
             "(Worker_TP1 pid=5) " + V0_STATS.format(2, 2),
             "junk" + V0_STATS.format(3, 3),
             V0_STATS.format(4, 4).replace(":00 metrics", ":00,123 metrics"),
             V0_STATS.format(5, 5).replace("Pending: 0 reqs", "Pending: 0 reqs, KV fetch: 1 waiting to start"),
             "ERROR 11-20 09:06:00 metrics.py:1] Avg prompt throughput: 1.0 tokens/s, Avg generation throughput: "
             "0.1 tokens/s, Running: 1 reqs, Swapped: 0 reqs, Pending: 0 reqs, GPU KV cache usage: 0.5%, CPU KV "
             "cache usage: 0.0%.",
             V0_STATS.format(7, 7)]
    got, count = _both(lines, monkeypatch)
    assert count.took >= 1


# ---------------------------------------------------------------- scan engines

def test_hyperscan_is_an_engine_when_importable():
    try:
        import hyperscan  # noqa: F401
    except ImportError:
        pytest.skip("hyperscan not installed")
    assert available_engines()[0] == "hyperscan"
    assert Scanner(["Error"], accel=True).engine == "hyperscan"
    assert Scanner(["Error"], accel="hyperscan").engine == "hyperscan"


@pytest.mark.parametrize("engine", available_engines())
def test_every_engine_proposes_the_same_lines_on_the_fixtures(engine):
    lits = parse_mod.all_literals()
    for path in LOGS[::7]:
        data = path.read_bytes()
        chunks = [data[i:i + 4096] for i in range(0, len(data), 4096)]
        ref = list(Scanner(lits, {TB: 200}, accel="find").records(chunks))
        got = list(Scanner(lits, {TB: 200}, accel=engine).records(chunks))
        assert got == ref, path.name


def test_no_accel_forces_pure_python(monkeypatch):
    monkeypatch.setenv("BOOTLOG_NO_ACCEL", "1")
    assert Scanner(["Error"]).engine == "find"


@pytest.mark.parametrize("stamped", [False, True], ids=["plain", "podman"])
@pytest.mark.parametrize("seed", range(12))
def test_shuffled_mixtures_of_fixture_lines(seed, stamped, monkeypatch):
    """Odd splitter states the fixtures alone may not reach: runs of lines from several logs
    (tagged and untagged, V0 and V1, tracebacks, restarts) cut and interleaved at random;
    `stamped`: each line with a podman time (some on a whole second), batches with stamps."""
    import random

    rng = random.Random(seed)
    pool = rng.sample(LOGS, 4)
    runs = []
    for path in pool:
        recs = [r.text for r in _records(path)]
        for _ in range(6):
            if not recs:
                break
            a = rng.randrange(len(recs))
            runs.append(recs[a:a + rng.randrange(1, 400)])
    rng.shuffle(runs)
    lines = [t for run in runs for t in run]
    recs = [Record(i + 1, t) for i, t in enumerate(lines)]
    if stamped:
        t0 = datetime(2026, 11, 29, 14, 0, tzinfo=timezone.utc)
        recs = [Record(r.lineno, r.text, t0 + timedelta(seconds=i, microseconds=rng.choice([0, 0, 7, 123456])))
                for i, r in enumerate(recs)]
        assert any(isinstance(x, LineBatch) and x.stamps for x in _batched(recs, 3))
    generic = parse(recs, year=2026, fast_stats=False)
    fast = parse(recs, year=2026, fast_stats=True)
    assert _key(fast) == _key(generic)
    assert _key(_fast_three_ways(recs)) == _key(generic)


@pytest.mark.parametrize("year", [2026, 2024, 999, 1, 9999])
def test_fast_path_times_equal_the_generic_ones(year, monkeypatch):
    """The fast path's clock (fromisoformat where it is datetime()'s equal) gives the generic
    path's ts on odd times too: hour 24, Feb 29, minute 60, non-ASCII digits, odd years."""
    odd = ["11-20 24:00:00", "02-29 10:00:00", "02-28 23:59:59", "11-20 09:60:00", "11-20 09:00:60",
           "00-10 10:00:00", "13-01 10:00:00", "11-\u0662\u0660 09:01:00", "12-31 23:59:59", "01-01 00:00:00",
           "06-15 12:00:00"]
    lines = [*START] + [V0_STATS.format(i, i).replace("11-20 09:%02d:00" % i, t) for i, t in enumerate(odd)]
    recs = [Record(i + 1, t) for i, t in enumerate(lines)]
    generic = parse(recs, year=year, fast_stats=False)
    count = _Counting(monkeypatch)
    fast = parse(recs, year=year, fast_stats=True)
    assert _key(fast) == _key(generic)
    assert count.took >= 5
    stamps = [s.ts for b in fast for s in b.samples]
    assert len(stamps) == len(odd) and None in stamps
    assert any(stamps) or year == 9999  # (9999: the first month going back makes it year 10000)
    # the same times in runs of V1 lines (parse._stats_run), after a start in June
    lines = [*START_V1] + [V1_PLAIN.format(t, i) for i, t in enumerate(odd + odd[::-1])]
    recs = [Record(i + 1, t) for i, t in enumerate(lines)]
    assert _key(_fast_three_ways(recs, year=year)) == _key(parse(recs, year=year, fast_stats=False))


_FIG = r"(?:-?\d+(?:\.\d+)?|nan)"


def _fig_strings():
    from hypothesis import strategies as st

    digits = st.text("0123456789", min_size=1, max_size=18)
    return st.one_of(
        st.builds(lambda s, a, b: f"{s}{a}.{b}", st.sampled_from(["", "-"]), digits, digits),
        st.builds(lambda s, a: f"{s}{a}", st.sampled_from(["", "-"]), digits),
        st.sampled_from(["nan", "0", "0.0", "-0.0", "-0", "0.001", "0.0001", "0.00001", "2.50", "2.05", "007",
                         "123456789012.5", "1234567890123.5", "999999999999.999", "100000000000000",
                         "9007199254740993", "1352.6", "55.6"]),
        st.floats(allow_nan=False, allow_infinity=False).map(repr).filter(lambda x: "e" not in x),
    )


# one line per stats wording (patterns.STATS_FAST_BODIES, in order), every optional part present
_WORDINGS = [
    "Engine 000: Avg prompt throughput: {} tokens/s, Avg generation throughput: {} tokens/s, Running: {} reqs, "
    "Waiting: {} reqs, GPU KV cache usage: {}%, Prefix cache hit rate: {}%",
    "Engine 000: Avg prompt throughput: {} tokens/s, Avg generation throughput: {} tokens/s, Running: {} reqs, "
    "Waiting: {} reqs, Deferred: {} reqs, Preemptions: {}, GPU KV cache usage: {}%, Prefix cache hit rate: {}%, "
    "Corrupted: {} reqs, External prefix cache hit rate: {}%, MM cache hit rate: {}%",
    "Avg prompt throughput: {} tokens/s, Avg generation throughput: {} tokens/s, Running: {} reqs, Swapped: {} "
    "reqs, Pending: {} reqs, GPU KV cache usage: {}%, CPU KV cache usage: {}%.",
]
_PREFIX = "(APIServer pid=1) INFO 10-02 17:03:23 [loggers.py:259] "


def test_ready_made_sample_json_is_json_dumps():
    """parse's ready-made values JSON (figures printed in repr's own spelling) is json.dumps of
    the values dict, byte for byte, whenever the canonical regex takes a line; and the general
    regex reads such a line to the same groups."""
    import json

    from hypothesis import given, settings, strategies as st

    assert len(_WORDINGS) == len(patterns.STATS_FAST_BODIES)
    entries = [parse_mod._fast_entry(*body) for body in patterns.STATS_FAST_BODIES]

    @given(st.data())
    @settings(max_examples=3000, deadline=None)
    def check(data):
        k = data.draw(st.sampled_from(range(len(entries))))
        loose, names, strict, template = entries[k]
        figs = tuple(data.draw(_fig_strings()) for _ in names)
        line = _PREFIX + _WORDINGS[k].format(*figs)
        m = strict(line)
        if m is not None:
            assert m.groups()[7:] == figs
            assert loose(line).groups() == m.groups()
            assert template % figs == json.dumps(dict(zip(names, map(float, figs))))
    check()
    # and it takes the usual ones
    loose, names, strict, template = entries[0]
    figs = ("1352.6", "30.1", "2", "1", "2.2", "55.6")
    line = _PREFIX + _WORDINGS[0].format(*figs)
    assert strict(line) and template % figs == json.dumps(dict(zip(names, map(float, figs))))
    for odd in ("2.50", "007", "0.0001", "nan", "1234567890123.5", "\u0662.5", "5"):
        assert loose(line.replace("1352.6", odd)) and not strict(line.replace("1352.6", odd))


SPEC = ("INFO 11-20 09:{:02d}:05 metrics.py:120] SpecDecoding metrics: Mean acceptance length: 3.43, Accepted: 85 "
        "tokens, Drafted: 105 tokens, Avg Draft acceptance rate: {}.0%")


def test_ready_made_rows_stand_only_for_unchanged_samples(monkeypatch):
    """parse's ready-made rows (ingest spill): a sample a later line adds to (spec decoding), a
    line read twice, odd figures: the spilled rows and Samples are those made from the Samples."""
    from bootlog import ingest as ingest_mod
    from bootlog.boots import BootSplitter
    from bootlog.store.samplerows import sample_rows

    lines = [*START]
    for i in range(30):
        lines.append(V0_STATS.format(i, 100 + i).replace("0.5%", "0.50%" if i % 7 == 3 else "0.5%"))
        if i % 4 == 1:
            lines.append(SPEC.format(i, i))
    recs = [Record(i + 1, t) for i, t in enumerate(lines)]
    # the same line twice (an envelope may split one physical line): the second updates the Sample
    dup = next(i for i, r in enumerate(recs) if "GPU KV cache usage: 0.5%," in r.text and i > 10)
    recs.insert(dup + 1, Record(recs[dup].lineno, recs[dup].text.replace("tokens/s, Avg gen", "tokens/s, Avg gen")
                                .replace("GPU KV cache usage: 0.5%", "GPU KV cache usage: 9.5%")))
    # ... and once more in a shape only the generic path reads, updating the same Sample there
    dup2 = next(i for i, r in enumerate(recs) if "GPU KV cache usage: 0.5%," in r.text and i > dup + 8)
    recs.insert(dup2 + 1, Record(recs[dup2].lineno, "junk" + recs[dup2].text.replace("0.5%", "7.5%")))
    want = parse(recs, year=2026, fast_stats=False)  # (rows made from dicts, the generic way)
    monkeypatch.setattr(ingest_mod, "_SPILL_KEEP", 1)
    splitter = BootSplitter()
    spill = ingest_mod._Spill(splitter)
    made = []
    real_put = spill._put

    def put(b):
        made.append(sum(s.row is not None for s in b.samples))
        real_put(b)
    spill._put = put
    got = parse(recs, year=2026, splitter=splitter, tick=(1, spill.drain))
    spill.seal(got)
    assert any(isinstance(b.samples, ingest_mod.SpilledSamples) for b in got) and any(made)
    assert len(got) == len(want)
    for a, b in zip(got, want):
        parts = getattr(a.samples, "row_parts", None)
        rows = [r for part in parts() for r in part] if parts else sample_rows(a.samples)
        assert rows == sample_rows(b.samples)
        a.samples = list(a.samples)
    assert _key(got) == _key(want)
    assert any(len(s.values) > 7 for b in want for s in b.samples)  # spec decoding added to some


def test_later_stats_wordings_compile_on_first_use():
    """_fast_stats() makes the everyday wording's entry at once and the others' when a line needs
    them: the stand-ins read a line exactly as the compiled entries do."""
    import importlib

    mod = importlib.reload(parse_mod)  # a fresh list of stand-ins
    try:
        fast = mod._fast_stats()
        assert len(fast) >= 2
        line = V0_STATS.format(1, 7)  # not the first (V1) wording
        assert not fast[0][0](line)
        stand_ins = [entry[0] for entry in fast[1:]]
        hit = next(i for i in range(1, len(fast)) if fast[i][0](line))  # tried in order, as parse does
        assert all(fast[i][0] is not stand_ins[i - 1] for i in range(1, hit + 1))  # those compiled
        assert all(fast[i][0] is stand_ins[i - 1] for i in range(hit + 1, len(fast)))  # not the rest
        from bootlog import patterns

        compiled = mod._fast_entry(*patterns.STATS_FAST_BODIES[hit])
        assert fast[hit][0](line).groups() == compiled[0](line).groups() and fast[hit][3] == compiled[3]
    finally:
        importlib.reload(parse_mod)


# ------------------------------------------------------------------ the native stats reader

# (the first of each list is what vLLM prints; the others are near misses and odd spellings)
_PARTS = {
    "tag": [None, "APIServer", "EngineCore_DP0", "Api-Server", "_x", "9x", "Név", "a b", ""],
    "pid": ["1", "007", "", "x", "١"],
    "level": ["INFO", "DEBUG", "WARNING", "ERROR", "info"],
    "when": ["10-02 17:06:23", "12-31 23:59:59", "02-30 00:00:00", "10-02 24:00:00", "10-02 29:00:00",
             "1-02 17:06:23", "10-02 17:06:2٣", "10-02 17:06:23x"],
    "file": ["[loggers.py:259]", "loggers.py:259]", "[a:1:2]", "[:12]", "[x]", "[a:]", "[a:1a]", "[\x1cx:1]",
             "[é:1]", "[a]b:1]", "[[a:1]", "[a:01]", "[a:1]x"],
    "lead": ["Engine 000: ", "", "Engine 12: ", "Engine 0000: ", "Engine 00a: "],
    "fig": ["1.5", "0.0", "-0.0", "1.10", "01.5", "12345678901.5", "1234567890123.5", "nan", "1e5", "١.٥", "0.05",
            "0.005", "0.0005", "7", "0", "00", "-1", "123456789012", "1234567890123", "3.0"],
    "end": ["", "", "%", " ", "\x1b[0m", "5"],
}


def _stats_text(draw) -> str:
    """A stats line, some of its parts swapped for a near miss (and at times cut short)."""
    from hypothesis import strategies as st

    odd = draw(st.sets(st.sampled_from([*_PARTS, "fig0", "fig2", "fig4", "cut"]), max_size=3))

    def part(kind: str, key: str | None = None) -> str:
        opts = _PARTS[kind]
        return draw(st.sampled_from(opts)) if (key or kind) in odd else opts[0]
    name = draw(st.sampled_from(_PARTS["tag"])) if "tag" in odd else draw(st.sampled_from([None, "APIServer"]))
    tag = "" if name is None else f"({name} pid={part('pid')}) "
    f = [part("fig", f"fig{k}") if k % 2 == 0 else draw(st.sampled_from(["1.5", "0.0", "23.4", "0.05"]))
         for k in range(6)]
    if "fig2" not in odd:
        f[2] = f[3] = draw(st.sampled_from(["0", "1", "12"]))  # (reqs counts print no point)
    body = (f"Avg prompt throughput: {f[0]} tokens/s, Avg generation throughput: {f[1]} tokens/s, Running: {f[2]} "
            f"reqs, Waiting: {f[3]} reqs, GPU KV cache usage: {f[4]}%, Prefix cache hit rate: {f[5]}%")
    text = f"{tag}{part('level')} {part('when')} {part('file')} {part('lead')}{body}{part('end')}"
    if "cut" in odd:
        text = text[:draw(st.integers(0, len(text)))]
    return text


def test_the_native_reader_reads_podmans_stamp_shape_as_scan_does():
    from bootlog import scan

    linecut = pytest.importorskip("bootlog._linecut")
    assert linecut.PODMAN_STAMP.encode() == scan._STAMP_SHAPE


def test_the_native_reader_of_stats_lines_follows_parses_prefix():
    """parse.py uses the native reader only while its prefix is the one the C code reads."""
    native = _native_stats_lines()
    if native is None:
        pytest.skip("bootlog._linecut not built")
    from bootlog._linecut import STATS_PREFIX

    assert STATS_PREFIX == parse_mod._FAST_PREFIX
    try:
        parse_mod._NATIVE.clear()
        parse_mod._FAST_PREFIX += " "
        assert parse_mod._native_stats() is None
    finally:
        parse_mod._FAST_PREFIX = parse_mod._FAST_PREFIX[:-1]
        parse_mod._NATIVE.clear()


def _run_key(got, i):
    j, name, pid, times, rows = got
    return j - i, (name, pid) if j > i else None, times, rows


@settings(max_examples=int(os.environ.get("BOOTLOG_HYPOTHESIS_EXAMPLES", "100")) * 10, deadline=None)
@given(data=st.data(), own_time=st.booleans())
def test_native_stats_reader_takes_only_what_the_regex_takes(data, own_time):
    """bootlog._linecut.stats_run against parse._stats_lines (the regex) on generated lines near
    the stats shape: every line it takes, the regex takes with the same tag, time and row, and
    a run it reads is the regex's run or its start; on the shape vLLM prints it takes them all."""
    native = _native_stats_lines()
    if native is None:
        pytest.skip("bootlog._linecut not built")
    parse_mod._NATIVE.clear()
    entry = parse_mod._fast_stats()[0]
    texts = [_stats_text(data.draw) for _ in range(data.draw(st.integers(1, 6)))]
    i = data.draw(st.integers(0, len(texts) - 1))
    want = parse_mod._stats_lines(texts, i, entry[2], entry[3], own_time)
    got = native(texts, i, entry[2], entry[3], own_time)
    n = got[0] - i
    assert n <= want[0] - i
    if n:
        assert got[1:3] == want[1:3] and got[3] == want[3][:n] and got[4] == want[4][:n]
    else:
        assert got[3:] == ([], [])
    if all(t.isascii() and "[loggers.py:259]" in t for t in texts[i:want[0]]):
        assert n == want[0] - i  # (the everyday shape: the native reader misses none of it)


def test_native_stats_reader_on_the_fixtures():
    """Every stats line of the fixture logs: the native reader's run equals the regex's."""
    native = _native_stats_lines()
    if native is None:
        pytest.skip("bootlog._linecut not built")
    parse_mod._NATIVE.clear()
    entry = parse_mod._fast_stats()[0]
    taken = 0
    for path in LOGS:
        texts = [r.text for r in _records(path)]
        for i, t in enumerate(texts):
            if STATS in t:
                for own_time in (True, False):
                    want = parse_mod._stats_lines(texts, i, entry[2], entry[3], own_time)
                    assert native(texts, i, entry[2], entry[3], own_time) == want, (path.name, i)
                taken += want[0] > i
    assert taken > 500


def test_stats_readers_take_nothing_from_a_negative_start():
    entry = parse_mod._fast_stats()[0]
    line = V1_PLAIN.format("06-21 00:00:01", 1)
    texts = [line, "x", line]
    readers = [parse_mod._stats_lines] + ([_native_stats_lines()] if _native_stats_lines() else [])
    for read in readers:
        assert read(texts, -1, entry[2], entry[3], True) == (-1, None, None, [], [])
        assert read(texts, 3, entry[2], entry[3], True)[0] == 3
    parse_mod._NATIVE.clear()


def _near_misses() -> list[str]:
    """One everyday stats line, and that line with one part spelled each odd way of _PARTS (and
    a few more): every single near miss, not a random draw of them."""
    base = {"tag": "(APIServer pid=1) ", "level": "INFO", "when": "10-02 17:06:23", "file": "[loggers.py:259]",
            "lead": "Engine 000: ", "figs": ["591.1", "20.9", "1", "0", "15.8", "29.9"], "end": ""}

    def line(**kw) -> str:
        p = {**base, **kw}
        f = p["figs"]
        return (f"{p['tag']}{p['level']} {p['when']} {p['file']} {p['lead']}Avg prompt throughput: {f[0]} tokens/s, "
                f"Avg generation throughput: {f[1]} tokens/s, Running: {f[2]} reqs, Waiting: {f[3]} reqs, GPU KV "
                f"cache usage: {f[4]}%, Prefix cache hit rate: {f[5]}%{p['end']}")
    out = [line(), line(tag=""), line(lead="")]
    out += [line(tag=f"({n} pid={p}) ") for n in _PARTS["tag"][1:] if n is not None for p in _PARTS["pid"]]
    out += [line(level=x) for x in _PARTS["level"][1:]] + [line(when=x) for x in _PARTS["when"][1:]]
    out += [line(file=x) for x in _PARTS["file"][1:] + [":12]", "[]:1]", "[a\t:1]", "[a\x85:1]", "[a:1] ", "[a: 1]",
                                                        "[a:1]]", "]", "[a.py:٢]", "a:1]"]]
    out += [line(lead=x) for x in _PARTS["lead"][1:]] + [line(end=x) for x in _PARTS["end"][2:]]
    for k in range(6):
        for fig in _PARTS["fig"] + ["1.1000", "0.00", "0.50", "9.999", "-5.5", "1.", ".5", "1.5.5"]:
            figs = list(base["figs"])
            figs[k] = fig
            out.append(line(figs=figs))
    return out


@pytest.mark.parametrize("own_time", [True, False])
def test_native_stats_reader_on_every_near_miss(own_time):
    """Each near miss alone, and after an everyday line: the native reader takes a line only if
    the regex does, with the same tag, time and row, and takes every line the regex takes that
    is ASCII with an everyday file part."""
    native = _native_stats_lines()
    if native is None:
        pytest.skip("bootlog._linecut not built")
    parse_mod._NATIVE.clear()
    entry = parse_mod._fast_stats()[0]
    lines = _near_misses()
    took = 0
    for text in lines:
        for texts in ([text], [lines[0], text]):
            want = parse_mod._stats_lines(texts, 0, entry[2], entry[3], own_time)
            got = native(texts, 0, entry[2], entry[3], own_time)
            n = got[0]
            assert n <= want[0], texts
            assert got[3:] == (want[3][:n], want[4][:n]) and (not n or got[1:3] == want[1:3]), texts
            if text.isascii() and "[loggers.py:259]" in text:
                assert n == want[0], texts
            took += n
    assert took > 100
