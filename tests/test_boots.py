"""Boot splitting, status and failure logic on real corpus logs and restarts built from them."""

from __future__ import annotations

import re
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from bootlog.parse import boots as boots_mod
from bootlog.parse.parse import all_literals, parse
from bootlog.records import Boot, Record
from test_golden import LOGS, labels, read_records

_VTS = re.compile(r"(?P<lvl>DEBUG|INFO|WARNING|ERROR|CRITICAL) (?P<ts>\d\d-\d\d \d\d:\d\d:\d\d)")


def fixture(prefix: str) -> Path:
    return next(LOGS.glob(prefix + "-*.log"))


def run(prefix: str) -> tuple[list[Record], list[Boot]]:
    recs = read_records(fixture(prefix))
    return recs, parse(recs, year=2026, total_lines=len(recs))


def test_nohup_two_boots_failed_then_ready():
    recs, bs = run("014")
    want = labels(fixture("014"))
    assert [b.status for b in bs] == ["failed", "ready"]
    assert bs[0].first_line == want[0]["boot_start_line"]
    assert bs[1].first_line == want[1]["boot_start_line"]
    assert bs[0].last_line == bs[1].first_line - 1 and bs[1].last_line == len(recs)
    assert bs[0].failure == "value_error"
    assert bs[0].failure_message == want[0]["failure_message"]


def test_root_cause_not_wrapper():
    _, bs = run("048")
    b = bs[0]
    assert b.failure == "value_error"
    assert b.failure_message.startswith("ValueError: To serve at least one request")
    kinds = [e.kind for e in b.events]
    assert "kv_cache_insufficient" in kinds and "value_error" in kinds
    wrapper = next(e for e in b.events if e.kind == "engine_init_failed")
    assert "See root cause above" in wrapper.message
    assert wrapper.detail["root_cause"] == b.failure_message
    kv = next(e for e in b.events if e.kind == "kv_cache_insufficient")
    assert kv.detail["needed_gib"] == 18.35 and kv.detail["estimated_max_model_len"] == 121840


def test_warning_logged_traceback_is_not_the_root_cause():
    _, bs = run("044")
    b = bs[0]
    tbs = [e for e in b.events if e.kind == "traceback"]
    assert tbs[0].detail["exception"] == "AssertionError"  # deep_gemm import, logged at WARNING
    assert b.failure == "engine_init_failed"
    assert b.failure_message.startswith("RuntimeError: Could not find nvcc")


def test_traceback_is_one_event_with_all_its_lines():
    recs, bs = run("053")
    b = bs[3]
    tbs = [e for e in b.events if e.kind == "traceback"]
    first = tbs[0]
    # the ERROR-logged copy: "Traceback" at 245 down to the exception at 273, one event
    assert first.line == 245 and len(first.detail["lines"]) == 273 - 245 + 1
    assert first.detail["exception"] == labels(fixture("053"))[3]["failure_message"]
    assert first.detail["lines"][0].startswith("Traceback (most recent call last)")
    # the raw stderr copy and the API server's own traceback are separate events
    assert [e.line for e in tbs] == [245, 279, 318]
    assert tbs[-1].detail["exception"].startswith("RuntimeError: Engine core initialization failed")


def test_interleaved_tracebacks_of_one_process_stay_apart():
    # corpus 028: the raw stderr traceback and the logger's copy start two lines apart
    _, bs = run("028")
    tbs = [e for e in bs[0].events if e.kind == "traceback"][:2]
    assert [e.line for e in tbs] == [44, 46]
    assert all("HIP out of memory" in e.detail["exception"] for e in tbs)
    assert bs[0].failure == "oom"


def test_runtime_oom_after_ready_keeps_ready():
    _, bs = run("042")
    b = bs[0]
    ready_line = labels(fixture("042"))[0]["ready_line"]
    assert b.status == "ready" and b.failure is None
    ooms = [e for e in b.events if e.kind == "oom"]
    assert ooms and all(e.line > ready_line for e in ooms)
    assert "out of memory" in ooms[0].message


def test_other_programs_startup_complete_is_not_ready():
    recs, bs = run("025")
    assert bs[0].status == "ready"
    ready_line = labels(fixture("025"))[0]["ready_line"]
    # cut before vLLM's own line: the two earlier uvicorn "Application startup complete." do not count
    cut = recs[: ready_line - 1]
    assert parse(cut, year=2026, total_lines=len(recs))[0].status == "incomplete"


def test_concurrent_boots_resume_the_older_one():
    _, bs = run("053")
    older, newer = bs[2], bs[3]
    assert newer.status == "failed" and newer.last_line < 368
    assert older.status == "ready" and older.last_line >= 399
    late = [m for m in older.metrics if m.name in ("graph_capture_s", "init_engine_s")]
    assert late and all(368 <= m.line <= 413 for m in late)


def test_incomplete_when_log_stops():
    _, bs = run("047")
    assert [b.status for b in bs] == ["incomplete"] and bs[0].failure is None


def _podman_records(parts: list[list[Record]], start: datetime, glue: str) -> list[Record]:
    """Concatenate boots as `podman logs -t` shows a restarted container: one stream, envelope
    times, and each boot's trailing partial line glued onto the next boot's first line."""
    out: list[Record] = []
    t = start
    for i, part in enumerate(parts):
        for j, r in enumerate(part):
            text = r.text
            if i > 0 and j == 0:
                text = glue + text
            t += timedelta(milliseconds=250)
            out.append(Record(lineno=len(out) + 1, text=text, ts=t, stream="stdout"))
        t += timedelta(seconds=5)
    return out


def test_podman_crash_loop_with_glued_partial_lines():
    oom = read_records(fixture("022"))
    ok = read_records(fixture("012"))
    recs = _podman_records(
        [oom, oom, ok],
        datetime(2026, 10, 2, 9, 0, tzinfo=timezone.utc),
        "Loading safetensors checkpoint shards:  50% Completed | 1/2 [00:01<00:01,  1.2s/it]",
    )
    bs = parse(recs, total_lines=len(recs))
    assert [b.status for b in bs] == ["failed", "failed", "ready"]
    assert [b.failure for b in bs] == ["oom", "oom", None]
    assert [b.first_line for b in bs] == [1, len(oom) + 1, 2 * len(oom) + 1]
    assert bs[-1].last_line == len(recs)
    want = labels(fixture("012"))[0]
    got = [m.value for m in bs[2].metrics if m.name == "kv_cache_tokens"]
    assert got == [want["kv_cache_tokens"]]
    # envelope times: timezone-aware, and boot_to_ready_s from them
    assert bs[2].started_at.tzinfo is not None and bs[2].ready_at > bs[2].started_at
    assert any(m.name == "boot_to_ready_s" and m.value > 0 for m in bs[2].metrics)
    # every start is its own boot: two identical OOM starts at two times are two fingerprints
    assert len({b.fingerprint for b in bs}) == 3


def _shift_dates(recs: list[Record], first: datetime, year: int) -> list[Record]:
    """The same log as if it had started at `first` (vLLM prints MM-DD without a year)."""
    base = None
    out = []
    for r in recs:

        def sub(m: re.Match[str]) -> str:
            nonlocal base
            t = datetime.strptime(f"{year}-{m['ts']}", "%Y-%m-%d %H:%M:%S")
            base = base or t
            return f"{m['lvl']} {(first + (t - base)).strftime('%m-%d %H:%M:%S')}"

        out.append(Record(r.lineno, _VTS.sub(sub, r.text)))
    return out


def test_year_roll_over_does_not_go_backwards():
    recs, bs = run("006")
    b = bs[0]
    shifted = _shift_dates(recs, datetime(2025, 12, 31, 23, 59, 30), 2026)
    nb = parse(shifted, year=2025, total_lines=len(recs))[0]
    assert nb.started_at.year == 2025 and nb.ended_at.year == 2026
    assert nb.ready_at >= nb.started_at
    secs = lambda x: [m.value for m in x.metrics if m.name == "boot_to_ready_s"]  # noqa: E731
    assert secs(nb) == secs(b) and secs(b)[0] > 0


def test_fingerprint_ignores_line_offset_and_growth():
    recs, bs = run("020")
    b = bs[0]
    noise = [Record(i, f"unrelated line {i}") for i in range(1, 11)]
    moved = noise + [Record(r.lineno + 10, r.text) for r in recs]
    mb = parse(moved, year=2026, total_lines=len(moved))[0]
    assert mb.first_line == b.first_line + 10 and mb.fingerprint == b.fingerprint
    grown = parse(recs[:400], year=2026, total_lines=400)[0]
    assert grown.fingerprint == b.fingerprint
    _, many = run("053")
    assert len({x.fingerprint for x in many}) == len(many)


def test_v0_driver_is_rank_zero():
    _, bs = run("002")
    ranks = sorted(m.rank for m in bs[0].metrics if m.name == "model_load_gib")
    assert ranks == [0, 1]
    assert all(m.rank is None for m in bs[0].metrics if m.name == "num_gpu_blocks")


def test_config_engine_line_wins_then_args_fill_gaps():
    _, bs = run("053")
    cfg = bs[0].config
    # max_num_batched_tokens: None in Namespace, filled by "Chunked prefill is enabled with ..."
    assert cfg["max_num_batched_tokens"] == "8192"
    assert cfg["model"] == "ibm-granite/granite-3.2-8b-instruct" == bs[0].model
    assert "port" in cfg  # args keys are kept too


def test_literals_cover_the_markers():
    lits = all_literals()
    for needed in (
        "Application startup complete",
        "Traceback (most recent call last)",
        "non-default args",
        "Automatically detected platform",
        "initialization failed",
    ):
        assert needed in boots_mod.LITERALS and needed in lits


@pytest.mark.parametrize("prefix", ["009", "022", "038", "046", "052", "055"])
def test_failed_boots_have_root_cause_events(prefix):
    _, bs = run(prefix)
    b = bs[0]
    assert b.status == "failed"
    assert any(e.kind == "traceback" and e.detail["exception"] == b.failure_message for e in b.events)
    if b.failure == "oom":
        assert any(e.kind == "oom" and e.detail.get("requested_mib") for e in b.events)


def test_chained_traceback_is_one_event():
    # corpus 025 (runtime, after ready): HFValidationError, "The above exception was the direct
    # cause of the following exception:", then OSError -- printed as one chain, kept as one event
    _, bs = run("025")
    tbs = [e for e in bs[0].events if e.kind == "traceback"]
    assert [e.line for e in tbs] == [575, 641, 719]
    lines = tbs[0].detail["lines"]
    assert lines[0].startswith("Traceback") and any(x.startswith("The above exception") for x in lines)
    assert sum(x.startswith("Traceback") for x in lines) == 2
    assert tbs[0].detail["exception"].startswith("OSError: Incorrect path_or_model_id")
    assert bs[0].status == "ready"  # runtime faults after ready do not fail the boot


def test_second_api_server_banner_is_not_a_restart():
    # --api-server-count 2: ApiServer_1 printing its own banner must not split the boot
    recs, bs = run("034")
    i = next(k for k, r in enumerate(recs) if "version 0.17.1" in r.text)
    extra = Record(recs[i].lineno, recs[i].text.replace("(APIServer pid=229492)", "(ApiServer_1 pid=229999)"))
    more = recs[: i + 1] + [extra] + recs[i + 1 :]
    more = [Record(n, r.text) for n, r in enumerate(more, 1)]
    got = parse(more, year=2026, total_lines=len(more))
    assert len(bs) == len(got) == 1 and got[0].status == "ready"
    # while the same API server printing it again is a new start
    again = more + [Record(len(more) + 1 + n, r.text) for n, r in enumerate(recs[:10])]
    assert len(parse(again, year=2026, total_lines=len(again))) == 2


def test_tagged_startup_complete_is_ready_without_engine_lines():
    # a WARNING-level log has no INFO engine lines; the API server's own uvicorn line still counts
    recs, _ = run("034")
    quiet = [r for r in recs if " INFO " not in r.text or "INFO:  " in r.text or "version" in r.text]
    b = parse(quiet, year=2026, total_lines=len(recs))[0]
    assert b.status == "ready"
    assert not any(m.name == "kv_cache_tokens" for m in b.metrics)


def test_engine_death_after_ready_names_the_runtime_cause():
    # seed 07 (podman --timestamps): ready, then a request OOMs Worker_TP1 and the engine dies
    from bootlog.read.envelope import read as records

    path = LOGS / "seed" / "07-5x262144-runtime-oom.log"
    recs = list(records(iter([path.read_bytes()])))
    want = labels(path)[0]
    b = parse(recs, total_lines=len(recs))[0]
    assert b.status == "ready"  # it did boot: "Application startup complete." was printed
    assert b.failure == "oom" and b.failure_message == want["failure_message"]
    assert b.started_at.tzinfo is not None  # envelope time
    oom = [e for e in b.events if e.kind == "oom" and e.rank == 1]
    assert oom and oom[0].detail["requested_mib"] == want["oom_tried_to_allocate_mib"]
    # one fault, one event: EngineCore's "RuntimeError: Worker failed with error 'HIP out of
    # memory...'" (line 345) re-raises the worker's OOM (line 319)
    assert [(e.kind, e.line) for e in b.events if e.kind == "oom"] == [("oom", 319)]
    assert any(e.kind == "worker_died" and e.detail.get("rank") == 1 for e in b.events)
    # a runtime OOM the server survives (corpus 042) is an event, not a failure
    _, bs = run("042")
    assert bs[0].failure is None and any(e.kind == "oom" for e in bs[0].events)


def test_v0_kv_too_small_is_value_error():
    # V0 (corpus 002) cut after its KV sizing, then the V0 wording of "KV cache too small"
    # (docs/log-formats.md 3.6) raised to the top level
    recs, _ = run("002")
    head = [r for r in recs if r.lineno <= 40]
    tail = [
        "Traceback (most recent call last):",
        '  File "/usr/lib/python3.10/site-packages/vllm/engine/llm_engine.py", line 412, in _initialize_kv_caches',
        "    self.model_executor.initialize_cache(num_gpu_blocks, num_cpu_blocks)",
        "ValueError: The model's max seq len (131072) is larger than the maximum number of tokens that can be "
        "stored in KV cache (98304). Try increasing `gpu_memory_utilization` or decreasing `max_model_len` when "
        "initializing the engine.",
    ]
    recs2 = head + [Record(41 + i, t) for i, t in enumerate(tail)]
    b = parse(recs2, year=2026, total_lines=len(recs2))[0]
    assert b.status == "failed" and b.failure == "value_error" and b.engine == "v0"
    kv = next(e for e in b.events if e.kind == "kv_cache_insufficient")
    assert kv.detail == {"max_model_len": 131072, "kv_cache_tokens": 98304}


def test_log_cut_after_the_start_keeps_a_partial_boot():
    # a rotated log / `podman logs --since`: the boot's start is gone, its runtime is not
    recs, full = run("020")
    cut = recs[200:]
    bs = parse(cut, year=2026, total_lines=len(recs))
    assert len(bs) == 1 and bs[0].first_line > 200 and bs[0].last_line == len(recs)
    assert bs[0].status == "incomplete" and bs[0].samples
    assert bs[0].samples[-1].values == full[0].samples[-1].values
    # noise without any vLLM figure before the first boot makes no boot
    noise = [Record(i, f"+ export VLLM_LOGGING_LEVEL=INFO # Error {i}") for i in range(1, 5)]
    moved = noise + [Record(r.lineno + 4, r.text) for r in recs]
    assert len(parse(moved, year=2026, total_lines=len(moved))) == 1


_POOL = [r.text for p in ("053", "028", "002", "035") for r in read_records(fixture(p))]


def test_shuffled_real_lines_never_break_the_parser():
    from hypothesis import given, settings
    from hypothesis import strategies as st

    from bootlog.parse.parse import has_literal
    from bootlog.read.scan import CONTEXT, TRACEBACK

    def candidates(recs):
        """What the scan hands over: the records holding a literal (so marked), and the
        CONTEXT records after each traceback start."""
        out, owed = [], 0
        for r in recs:
            hit = has_literal(r.text)
            if hit or owed > 0:
                out.append(Record(r.lineno, r.text, r.ts, r.stream, hit))
            owed = CONTEXT if TRACEBACK in r.text else max(owed - 1, 0)
        return out

    line = st.one_of(st.sampled_from(_POOL), st.text(max_size=80))

    @settings(max_examples=60, deadline=None)
    @given(st.lists(line, max_size=120))
    def check(texts):
        recs = [Record(i, t) for i, t in enumerate(texts, 1)]
        bs = parse(recs, year=2026, total_lines=len(recs))
        for b in bs:
            assert 1 <= b.first_line <= b.last_line <= max(len(recs), 1)
            assert b.status in ("ready", "failed", "incomplete")
            assert (b.status == "failed") <= (b.failure is not None)
        assert parse(candidates(recs), year=2026, total_lines=len(recs)) == bs

    check()


def test_fingerprint_stable_while_a_crash_loop_log_grows():
    # seed 05 (podman -t): a snapshot taken while the next start's first lines are arriving must
    # give the failed boot the same fingerprint as the full log (hook re-ingests update in place)
    from bootlog.read.envelope import read as records

    path = LOGS / "seed" / "05-util-1.00-crash-loop.log"
    recs = list(records(iter([path.read_bytes()])))
    full = parse(recs, total_lines=len(recs))
    assert [b.status for b in full] == ["failed", "failed"]
    second = full[1].first_line
    banner = next(r.lineno for r in recs if r.lineno >= second and "version" in r.text and "\u2588" in r.text)
    for cut in range(second - 2, banner + 3):
        snap = parse(recs[:cut], total_lines=cut)
        assert snap[0].fingerprint == full[0].fingerprint, cut
        assert snap[0].status == "failed" and snap[0].failure == full[0].failure


def test_two_tagged_servers_interleaved_keep_their_own_lines():
    # like corpus 053 but in the tagged era: server A (034) is starting when server B (022)
    # starts on another port and dies of OOM; their lines interleave, pids tell them apart
    a, alone = run("034")
    b, _ = run("022")
    ka = next(r.lineno for r in a if "KV cache size" in r.text)
    mixed = a[: ka - 5]
    rest_a, rest_b = a[ka - 5 :], list(b)
    while rest_a or rest_b:
        mixed.extend(rest_b[:3])
        mixed.extend(rest_a[:2])
        rest_a, rest_b = rest_a[2:], rest_b[3:]
    mixed = [Record(n, r.text) for n, r in enumerate(mixed, 1)]
    bs = parse(mixed, year=2026, total_lines=len(mixed))
    assert [x.status for x in bs] == ["ready", "failed"]
    assert bs[1].failure == "oom" and bs[0].failure is None
    want = labels(fixture("034"))[0]
    assert [m.value for m in bs[0].metrics if m.name == "kv_cache_tokens"] == [want["kv_cache_tokens"]]
    assert not any(m.name == "kv_cache_tokens" for m in bs[1].metrics)
    assert [x.values for x in bs[0].samples] == [x.values for x in alone[0].samples]
    assert bs[1].failure_message == labels(fixture("022"))[0]["failure_message"]


def test_owner_index_answers_as_the_linear_scan(monkeypatch):
    """BootSplitter._owner looks up earlier boots by pid and API-server identity; it must name
    the boot the plain walk over every earlier boot names, line by line, on every fixture and
    on a generated log of many restarts of one container."""
    import sys
    from pathlib import Path

    from bootlog.parse import boots as boots_mod
    from bootlog.run.ingest import parse_source
    from bootlog.read.sources import open_source
    from paths import FIXTURES

    def linear(self, v):
        cur = self.cur
        pid = boots_mod.tag_pid(v)
        if pid is None or pid in cur.pids or not cur.api_pids:
            return None
        for acc in reversed(self.accs[:-1]):
            if acc is None:
                continue  # retired: no line goes back to it
            if pid in acc.pids and acc.api_pids and acc.api_pids != cur.api_pids and not acc.superseded:
                return acc
        return None

    indexed = boots_mod.BootSplitter._owner
    calls = {"n": 0, "found": 0}

    def both(self, v):
        got = indexed(self, v)
        assert got is linear(self, v), v.text[:160]
        calls["n"] += 1
        calls["found"] += got is not None
        return got

    monkeypatch.setattr(boots_mod.BootSplitter, "_owner", both)
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))
    try:
        import genlog
    finally:
        sys.path.pop(0)
    import tempfile

    def server(api: int, engine: int, minute: int, version: str = "0.11.0") -> list[str]:
        return [
            f"(APIServer pid={api}) INFO 11-20 10:{minute:02d}:00 [api_server.py:1] vLLM API server version {version}",
            f"(APIServer pid={api}) INFO 11-20 10:{minute:02d}:01 [utils.py:2] non-default args: {{'model': 'm{api}'}}",
            f"(EngineCore_DP0 pid={engine}) INFO 11-20 10:{minute:02d}:05 [core.py:3] Initializing a V1 LLM "
            f"engine (v{version}) with config: model='m{api}'",
        ]

    def kv(engine: int, minute: int, tokens: int) -> str:
        return (
            f"(EngineCore_DP0 pid={engine}) INFO 11-20 10:{minute:02d}:30 [kv_cache_utils.py:1028] "
            f"GPU KV cache size: {tokens:,} tokens"
        )

    # two servers started side by side (their lines interleave), then restarts reusing the pids
    two = [
        *server(10, 110, 0),
        *server(20, 120, 1),
        kv(110, 2, 111_000),
        kv(120, 3, 222_000),
        *server(20, 120, 5),
        kv(110, 6, 333_000),
        kv(120, 7, 444_000),
        *server(10, 110, 9),
        kv(120, 10, 5),
    ]
    with tempfile.TemporaryDirectory() as d:
        many = Path(d) / "many.log"
        genlog.generate(0, str(many), boots=300, noise_mb=0)
        mixed = Path(d) / "two.log"
        mixed.write_text("\n".join(two) + "\n")
        for p in [*sorted(FIXTURES.rglob("*.log")), many, mixed]:
            parse_source(open_source(str(p)))
    assert calls["n"] > 1000 and calls["found"] >= 2  # the older server's lines found their boot


def test_untagged_uvicorn_ready_from_v031():
    # v0.31+ tags vLLM's log records only (docs/log-formats.md 2.2): fixture 036 reshaped that
    # way (its uvicorn lines lose the API server's tag, its logo says 0.31.0) is still ready at
    # the same line; as printed by v0.18 (tagged elsewhere, untagged uvicorn) it is not
    recs, bs = run("036")
    ready_at = bs[0].ready_at
    assert bs[0].status == "ready"

    def reshape(version: str) -> list[Record]:
        out = []
        for r in recs:
            text = re.sub(r"^\(APIServer pid=\d+\) (?=INFO:  )", "", r.text)
            out.append(Record(r.lineno, text.replace("version 0.18.0", f"version {version}")))
        return out

    new = parse(reshape("0.31.0"), year=2026, total_lines=len(recs))
    assert [(b.status, b.vllm_version, b.ready_at) for b in new] == [("ready", "0.31.0", ready_at)]
    old = parse(reshape("0.18.0"), year=2026, total_lines=len(recs))
    assert [b.status for b in old] == ["incomplete"]


@pytest.mark.parametrize("cut, failure", [(20, "engine_init_failed"), (41, "other")])
def test_engine_death_before_ready_fails_the_boot(cut, failure):
    # fixture 021's own "Engine core proc ... died unexpectedly" line (a SIGKILL leaves no
    # exception) moved to mid-load (cut 20) or after init engine (cut 41), before "ready"
    recs, bs = run("021")
    assert bs[0].status == "ready"
    died = next(r for r in recs if "died unexpectedly" in r.text)
    cut_recs = recs[:cut] + [Record(cut + 1, died.text)]
    b = parse(cut_recs, year=2026, total_lines=len(cut_recs))[0]
    assert (b.status, b.failure) == ("failed", failure)
    assert b.failure_message == "Engine core proc EngineCore_DP0 died unexpectedly, shutting down client."
    # the same boot cut there without the line only ran out of log
    assert parse(recs[:cut], year=2026, total_lines=cut)[0].status == "incomplete"


def test_json_record_traceback_gives_the_root_cause():
    # v0.32+ JSON formatter: logger.exception's traceback is the record's "exc_info" field
    # (python-json-logger), not more lines.  Fixture 048's "EngineCore failed to start." and its
    # prefixed traceback (lines 104-127) as one such record, its raw stderr copy (128-157) gone:
    # the root cause is still the ValueError, not the API server's wrapper
    import json

    recs, bs = run("048")
    prefix = "(EngineCore pid=6890) ERROR 08-03 21:49:23 [core.py:1231] "
    block = [r.text for r in recs[103:127]]
    assert all(t.startswith(prefix) for t in block)
    record = json.dumps(
        {
            "asctime": "2026-08-03 21:49:23,101",
            "levelname": "ERROR",
            "name": "vllm.v1.engine.core",
            "processName": "EngineCore",
            "process": 6890,
            "message": block[0][len(prefix) :],
            "exc_info": "\n".join(t[len(prefix) :] for t in block[1:]),
        }
    )
    texts = [r.text for r in recs[:103]] + [record] + [r.text for r in recs[157:]]
    b = parse([Record(i + 1, t) for i, t in enumerate(texts)], year=2026, total_lines=len(texts))[-1]
    assert (b.status, b.failure) == ("failed", bs[-1].failure) == ("failed", "value_error")
    assert b.failure_message == bs[-1].failure_message
    assert b.failure_message.startswith("ValueError: To serve at least one request")


def test_a_restart_glued_onto_a_partial_last_line_ends_the_boot_there():
    # docs/podman.md: a boot whose output ends without a newline has the next boot's first line glued
    # on; `podman logs -t` splits them again at the stamp, as two records of one physical line.
    # Fixture 022 (a failed boot) twice, the second an hour later: boot 1 ends on that line
    recs, bs = run("022")
    n = len(recs)
    later = [
        Record(
            n + r.lineno - 1,
            re.sub(r"(\d\d-\d\d) (\d\d):", lambda m: f"{m.group(1)} {int(m.group(2)) + 1:02d}:", r.text),
        )
        for r in recs
    ]
    both = recs + later  # later[0] has line n: the same physical line as recs[-1]
    first, second = parse(both, year=2026, total_lines=2 * n - 1)
    assert (first.first_line, first.last_line) == (1, n)
    assert (second.first_line, second.last_line) == (n, 2 * n - 1)
    assert first.status == second.status == bs[0].status == "failed"


# ---------------------------------------------------------------- worker tags no real log shows
# Lines from docs/log-formats.md (§2.2 tag names, the TSV's message wordings); no log
# in the corpus has a v0.31+ Ray worker, a pipeline-parallel worker or a V0 worker's death.


def _lines(*texts: str) -> list[Record]:
    return [Record(i, t) for i, t in enumerate(texts, 1)]


def test_ray_worker_with_inner_mainprocess_tag_is_a_worker_not_an_api_server():
    # v0.31+: "Ray workers without a vLLM name show (MainProcess pid=N) as the inner tag"
    recs = _lines(
        "(APIServer pid=1) INFO 11-20 09:12:33 [startup.py:18] vLLM server version 0.33.0, serving model Qwen/Qwen3-8B",
        "(APIServer pid=1) INFO 11-20 09:12:33 [utils.py:278] non-default args: {'model': 'Qwen/Qwen3-8B', "
        "'tensor_parallel_size': 2, 'distributed_executor_backend': 'ray'}",
        "(RayWorkerProc pid=501, ip=10.0.0.2) (MainProcess pid=501) INFO 11-20 09:12:40 [gpu_model_runner.py:5088] "
        "Model loading took 14.96 GiB memory and 5.123456 seconds",
        "(RayWorkerProc pid=502, ip=10.0.0.3) (MainProcess pid=502) INFO 11-20 09:12:40 [gpu_model_runner.py:5088] "
        "Model loading took 14.96 GiB memory and 5.123456 seconds",
        "(EngineCore pid=270) INFO 11-20 09:12:42 [kv_cache_utils.py:1147] GPU KV cache size: 1,350,182 tokens",
        "(EngineCore pid=270) INFO 11-20 09:12:43 [core.py:412] init engine (profile, create kv cache, warmup model) took 53.87 s",
        "(APIServer pid=1) INFO 11-20 09:12:44 [entry.py:139] Starting vLLM server on http://0.0.0.0:8000",
        "INFO:     Application startup complete.",
    )
    bs = parse(recs, year=2026, total_lines=len(recs))
    assert [(b.status, b.first_line, b.last_line, b.vllm_version) for b in bs] == [("ready", 1, 8, "0.33.0")]
    assert [m.value for m in bs[0].metrics if m.name == "model_load_gib"] == [14.96, 14.96]


def _pp_boot(order: tuple[int, ...]) -> Boot:
    workers = [
        ("Worker_PP0_TP0", 412, "61.23"),
        ("Worker_PP0_TP1", 413, "61.20"),
        ("Worker_PP1_TP0", 414, "59.10"),
        ("Worker_PP1_TP1", 415, "59.05"),
    ]
    recs = _lines(
        "(APIServer pid=1) INFO 11-20 09:12:33 [api_server.py:1839] vLLM API server version 0.11.0",
        *(
            f"({workers[i][0]} pid={workers[i][1]}) INFO 11-20 09:12:33 [gpu_worker.py:298] "
            f"Available KV cache memory: {workers[i][2]} GiB"
            for i in order
        ),
        "(EngineCore_DP0 pid=270) INFO 11-20 09:12:33 [kv_cache_utils.py:1028] GPU KV cache size: 1,350,182 tokens",
        "(APIServer pid=1) INFO:     Application startup complete.",
    )
    (b,) = parse(recs, year=2026, total_lines=len(recs))
    return b


def test_pipeline_stages_get_distinct_ranks_whatever_order_they_print_in():
    # vLLM's global rank: pp * TP + tp (TP fastest); the TP index alone repeats in every stage
    got = [
        sorted((m.rank, m.value) for m in _pp_boot(order).metrics if m.name == "kv_cache_available_gib")
        for order in ((0, 1, 2, 3), (3, 2, 1, 0), (2, 0, 3, 1))
    ]
    assert got[0] == got[1] == got[2] == [(0, 61.23), (1, 61.2), (2, 59.1), (3, 59.05)]


def test_pp_only_and_dp_worker_names_are_ranked_by_their_stage():
    assert boots_mod.worker_dims("(Worker_PP1 pid=513) INFO x") == {"PP": 1}
    assert boots_mod.worker_dims("(VllmWorker PP1_TP0 pid=9) INFO x") == {"PP": 1, "TP": 0}
    assert boots_mod.worker_dims("(Worker_DP1_TP0_EP1 pid=612) INFO x") == {"DP": 1, "TP": 0}
    assert boots_mod.worker_dims("(Worker_TP1 pid=612) INFO x") is None  # the TP index is the rank


def test_v0_worker_death_gets_the_rank_its_pid_was_numbered_with():
    recs = _lines(
        "INFO 10-14 09:12:30 llm_engine.py:237] Initializing an LLM engine (v0.6.4.post1) with config: "
        "model='m', tensor_parallel_size=2",
        "\x1b[1;36m(VllmWorkerProcess pid=413)\x1b[0;0m INFO 10-14 09:12:33 model_runner.py:1060] "
        "Loading model weights took 7.4829 GB",
        "ERROR 10-14 09:12:40 [multiproc_worker_utils.py:116] Worker VllmWorkerProcess pid 413 died, exit code: -9",
    )
    (b,) = parse(recs, year=2026, total_lines=len(recs))
    assert [(m.name, m.rank) for m in b.metrics if m.name == "model_load_gib"] == [("model_load_gib", 1)]
    died = [e for e in b.events if e.kind == "worker_died"]
    assert [(e.rank, e.detail.get("rank")) for e in died] == [(1, 1)]


def test_a_flag_the_engine_did_not_take_is_a_warning():
    # the seeds' --no-enable-prefix-caching (04's non-default args) against an engine config
    # line that runs with prefix caching on (08's line, verbatim): said, not silently replaced
    seed = LOGS / "seed"
    a = (seed / "04-shape-g-kv-400700-no-prefix-cache.log").read_text().split("\n")
    b = (seed / "08-gdn-hip-burst-prefix-caching.log").read_text().split("\n")
    engine_line = next(x for x in b if "Initializing a V1 LLM engine" in x)
    at = next(i for i, x in enumerate(a) if "Initializing a V1 LLM engine" in x)
    # (with 04's own stamp: a line stamped a day earlier is another run's, a boot of its own)
    mixed = a[:at] + [a[at].split(" ", 1)[0] + " " + engine_line.split(" ", 1)[1]] + a[at + 1 :]
    from bootlog.read.envelope import read as env_records

    recs = list(env_records([("\n".join(mixed)).encode()]))
    (boot, *_) = parse(recs, year=2026, total_lines=len(recs))
    got = [e.detail for e in boot.events if e.detail.get("what") == "arg_overridden"]
    assert [(d["key"], d["asked"], d["effective"]) for d in got] == [("enable_prefix_caching", "False", "True")]
    assert boot.config["enable_prefix_caching"] == "True"  # (the config is what the engine ran)
    # every real log: none (spellings such as dtype half / torch.float16 are the same value)
    for path in [*sorted(LOGS.glob("*.log")), *sorted(seed.glob("*.log"))]:
        recs = read_records(path)
        for bt in parse(recs, year=2026, total_lines=len(recs)):
            assert not [e for e in bt.events if e.detail.get("what") == "arg_overridden"], path.name


def test_a_log_starting_mid_boot_keeps_the_servers_untagged_faults():
    """A log rotated under a running server (copytruncate, podman --log-opt max-size) starts
    with its stats lines; the fork's untagged "[gdn_hip] ERROR ... fault" lines that follow are
    that server's, not dropped for want of a boot start."""
    from bootlog.run.ingest import parse_source
    from bootlog.read.sources import open_source
    from paths import FIXTURES

    data = (FIXTURES / "seed/08-gdn-hip-burst-prefix-caching.log").read_bytes()
    ready = data.index(b"\n", data.index(b"Application startup complete")) + 1
    import tempfile

    with tempfile.NamedTemporaryFile(suffix=".log") as f:
        f.write(data[ready:])
        f.flush()
        (lead,) = parse_source(open_source(f.name))
    kinds = [e.kind for e in lead.events]
    assert kinds.count("gdn_hip_fault") == data[ready:].count(b"[gdn_hip] ERROR") - 1
    assert "gdn_hip_fault_cap" in kinds and lead.samples
