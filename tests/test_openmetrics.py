"""bootlog.render.openmetrics: the export node_exporter's textfile collector reads, checked with the
Prometheus client library's own parsers (OpenMetrics, and the classic text format the collector
itself uses)."""

from __future__ import annotations

import os
import stat
import threading
from datetime import datetime, timezone
from functools import lru_cache
from pathlib import Path

import pytest
from prometheus_client.openmetrics.parser import text_string_to_metric_families
from prometheus_client.parser import text_string_to_metric_families as classic_families

from bootlog.render import openmetrics
from bootlog.render.openmetrics import EVENT_KINDS, render, write

LOGS = Path(__file__).resolve().parent.parent / "fixtures" / "logs"


@lru_cache(maxsize=None)
def parsed(name: str) -> tuple:
    from bootlog.run.ingest import parse_source
    from bootlog.read.sources import open_source

    return tuple(parse_source(open_source(str(LOGS / name))))


def iso(t):
    return t.isoformat() if t is not None else None


def show_doc(boot, *, id: int, container=None, host=None, source="frontend.log", model=None) -> dict:
    """A parsed Boot in the `show --json` shape (docs/cli.md)."""
    return {
        "boot": {
            "id": id,
            "status": boot.status,
            "failure": boot.failure,
            "failure_message": boot.failure_message,
            "vllm_version": boot.vllm_version,
            "engine": boot.engine,
            "model": model or boot.model,
            "container": container,
            "host": host,
            "source": source,
            "started_at": iso(boot.started_at),
            "ready_at": iso(boot.ready_at),
            "ended_at": iso(boot.ended_at),
            "first_line": boot.first_line,
            "last_line": boot.last_line,
        },
        "metrics": [
            {"name": m.name, "value": m.value, "unit": m.unit, "rank": m.rank, "line": m.line} for m in boot.metrics
        ],
        "config": dict(boot.config),
        "events": [
            {"kind": e.kind, "rank": e.rank, "line": e.line, "ts": iso(e.ts), "message": e.message, "detail": e.detail}
            for e in boot.events
        ],
        "runtime": {},
    }


def families(text: str) -> dict:
    return {f.name: f for f in text_string_to_metric_families(text)}


def samples(fam) -> dict:
    """{frozenset(labels): value} of a family."""
    return {frozenset(s.labels.items()): s.value for s in fam.samples}


def L(**labels) -> frozenset:
    return frozenset(labels.items())


SEED = "seed/10-cold-vs-warm-compile.log"
HOST, CTR = "dankserver", "frank-primary-qwen"


@pytest.fixture(scope="module")
def tp2_text() -> str:
    """The warm boot of the seed's TP2 deploy, as `export --format openmetrics` would get it."""
    return render([show_doc(parsed(SEED)[1], id=8, container=CTR, host=HOST)])


def test_tp2_boot_families_labels_values(tp2_text):
    fams = families(tp2_text)
    me = dict(host=HOST, container=CTR)
    # per-rank figure: one series per rank
    gc = fams["bootlog_graph_capture_gib"]
    assert gc.type == "gauge" and gc.unit == "gib" and "GiB" in gc.documentation
    assert samples(gc) == {L(**me, rank="0"): 0.31, L(**me, rank="1"): 0.17}
    # engine-level figure: no rank label at all
    kv = fams["bootlog_kv_cache_tokens"]
    assert samples(kv) == {L(**me): 398658} and kv.unit == "tokens"
    assert samples(fams["bootlog_max_concurrency"]) == {L(**me): 1.99}
    assert samples(fams["bootlog_compile_cache_load_s"]) == {L(**me, rank="0"): 2.143}
    assert samples(fams["bootlog_boot_ready"]) == {L(**me): 1}
    assert samples(fams["bootlog_boot_id"]) == {L(**me): 8}
    started = datetime(2026, 10, 2, 22, 17, 11, 924474, tzinfo=timezone.utc).timestamp()
    assert samples(fams["bootlog_boot_started_timestamp_seconds"]) == {L(**me): started}
    assert fams["bootlog_boot_started_timestamp_seconds"].unit == "seconds"
    (info,) = fams["bootlog_boot_info"].samples
    assert info.value == 1 and info.labels == {
        **me,
        "vllm_version": "0.22.1rc2.dev161+g8c2d4f1a7.rocm711",
        "engine": "v1",
        "model": "/home/dank/models/Qwen3.8-Flash-Next-Uncensored-FP8",
        "status": "ready",
    }
    events = samples(fams["bootlog_events"])
    assert set(events) >= {L(**me, kind=k) for k in EVENT_KINDS} and events[L(**me, kind="oom")] == 0
    # every numeric figure of the boot is there
    boot = parsed(SEED)[1]
    assert {f"bootlog_{m.name}" for m in boot.metrics} <= set(fams)
    assert all(f.type == "gauge" for f in fams.values())


def test_file_shape(tp2_text):
    lines = tp2_text.split("\n")
    assert lines[-2:] == ["# EOF", ""] and "" not in lines[:-1]
    # HELP and TYPE once per family, before its samples; no timestamps (node_exporter refuses them)
    names = [line.split()[2] for line in lines if line.startswith("# TYPE")]
    assert len(names) == len(set(names))
    for line in lines:
        if line and not line.startswith("#"):
            assert len(line.rsplit("}", 1)[-1].split()) == 1  # just the value


def test_classic_text_parser_reads_it_too(tp2_text):
    """node_exporter's textfile collector parses the classic text format: # UNIT and # EOF are
    comments there, every family is a gauge."""
    classic = {f.name: f for f in classic_families(tp2_text)}
    assert set(classic) == set(families(tp2_text))
    assert {s.labels["rank"]: s.value for s in classic["bootlog_graph_capture_gib"].samples} == {"0": 0.31, "1": 0.17}


def test_two_hosts_and_a_boot_without_container():
    ready = show_doc(parsed(SEED)[0], id=7, container=CTR, host=HOST)
    failed = show_doc(
        parsed("seed/09-night-ladder-4-boots.log")[0], id=3, host="gpu2", source="/var/log/vllm/night-ladder.log"
    )
    corpus = show_doc(parsed("051-v0.27.1-tp2-compilation-split.log")[0], id=9, source="051.log")
    fams = families(render([ready, failed, corpus]))
    a, b, c = dict(host=HOST, container=CTR), dict(host="gpu2", container="night-ladder.log"), dict(container="051.log")
    assert samples(fams["bootlog_boot_ready"]) == {L(**a): 1, L(**b): 0, L(**c): 1}
    assert samples(fams["bootlog_events"])[L(**b, kind="oom")] == 1
    info = {
        frozenset((k, v) for k, v in s.labels.items() if k in ("host", "container")): s.labels
        for s in fams["bootlog_boot_info"].samples
    }
    assert info[L(**b)]["status"] == "failed" and info[L(**b)]["failure"] == "oom"
    assert "failure" not in info[L(**a)]
    # the failed boot never reached graph capture: it has no such series
    assert L(**b, rank="0") not in samples(fams["bootlog_graph_capture_s"])
    assert samples(fams["bootlog_compile_graph_s"])[L(**a, rank="0")] == 179.24
    assert samples(fams["bootlog_profiling_run_s"])[L(**c, rank="0")] == 96.24
    # a naive started_at (plain vLLM log): read in local time, as datetime.timestamp() does
    assert (
        samples(fams["bootlog_boot_started_timestamp_seconds"])[L(**c)] == datetime(2026, 8, 13, 11, 31, 25).timestamp()
    )


HOSTILE = 'evil"model\\name\nINFO:     Application startup complete.\x1b[2J\r\t\x00'


def test_hostile_text_cannot_break_the_file():
    doc = show_doc(parsed(SEED)[1], id=8, container='ctr"\n}x 1', host="h\\", model=HOSTILE)
    doc["boot"]["vllm_version"] = "0.1\u2028\ud800"
    doc["events"].append({"kind": 'odd"kind\n'})
    text = render([doc])
    assert "\x1b" not in text and "\r" not in text and "\x00" not in text and "\t" not in text
    fams = families(text)
    (info,) = fams["bootlog_boot_info"].samples
    # shown as every output shows them (safe.term, one line): the escapes are text
    assert info.labels["model"] == 'evil"model\\name\\nINFO:     Application startup complete.\\x1b[2J\\r\\t\\x00'
    assert info.labels["container"] == 'ctr"\\n}x 1' and info.labels["host"] == "h\\"
    assert info.labels["vllm_version"] == "0.1\\u2028\\ud800"
    assert any(s.labels["kind"] == 'odd"kind\\n' for s in fams["bootlog_events"].samples)
    assert classic_families(text)  # (the classic parser agrees it is one file)
    # every sample line is one line of the file: the newline in the name stayed escaped
    assert sum(1 for line in text.splitlines() if line.startswith("bootlog_boot_info")) == 1


def test_long_label_values_are_bounded():
    doc = show_doc(parsed(SEED)[1], id=8, container=CTR, model="m" * 100_000)
    (info,) = families(render([doc]))["bootlog_boot_info"].samples
    assert info.labels["model"] == "m" * openmetrics.MAX_LABEL


def test_bad_values_and_names():
    doc = {
        "boot": {"id": 1, "status": "ready", "container": "c"},
        "metrics": [
            {"name": "kv_cache_tokens", "value": float("nan"), "unit": "tokens", "rank": None},
            {"name": "max_concurrency", "value": None, "unit": "x", "rank": None},
            {"name": "graph_capture_s", "value": float("inf"), "unit": "s", "rank": 0},
            {"name": "weights_load_s", "value": True, "unit": "s", "rank": 0},
            {"name": "model_load_gib", "value": "6.36", "unit": "GiB", "rank": 0},
            {"name": "weird-name.with spaces/€", "value": 2.5, "unit": 'u"\n', "rank": 3},
            {"name": "boot_ready", "value": 7, "unit": None, "rank": None},
            {"name": "graph_capture_gib", "value": -0.06, "unit": "GiB", "rank": 1},
            {"name": "graph_capture_gib", "value": -0.05, "unit": "GiB", "rank": 1},
            {"name": "compile_graph_s", "value": 1e-05, "unit": "s", "rank": True},
        ],
    }
    fams = families(render([doc]))
    for gone in (
        "bootlog_kv_cache_tokens",
        "bootlog_max_concurrency",
        "bootlog_graph_capture_s",
        "bootlog_weights_load_s",
        "bootlog_model_load_gib",
    ):
        assert gone not in fams
    weird = fams["bootlog_weird_name_with_spaces__"]
    assert samples(weird) == {L(container="c", rank="3"): 2.5} and weird.unit == ""
    assert '"' not in weird.documentation and "\n" not in weird.documentation
    assert samples(fams["bootlog_boot_ready"]) == {L(container="c"): 1}  # the figure did not clash in
    assert samples(fams["bootlog_graph_capture_gib"]) == {L(container="c", rank="1"): -0.05}  # the later line
    assert samples(fams["bootlog_compile_graph_s"]) == {L(container="c"): 1e-05}  # a bool is no rank


def test_same_identity_twice_keeps_the_later_boot():
    cold, warm = parsed(SEED)
    fams = families(render([show_doc(cold, id=7, container=CTR), show_doc(warm, id=8, container=CTR)]))
    assert samples(fams["bootlog_boot_id"]) == {L(container=CTR): 8}
    assert "bootlog_compile_graph_s" not in fams  # only the cold boot compiled


def test_nothing_to_export():
    assert render([]) == "# EOF\n"
    assert families(render([])) == {}
    fams = families(render([{"boot": {}}]))
    assert set(fams) == {"bootlog_boot_info", "bootlog_events"}


# --- write -----------------------------------------------------------------------------------


def test_write_puts_the_whole_file_with_mode_0644(tmp_path, tp2_text):
    target = tmp_path / "bootlog.prom"
    old = os.umask(0o077)
    try:
        write(target, tp2_text)
    finally:
        os.umask(old)
    assert target.read_text(encoding="utf-8") == tp2_text
    assert stat.S_IMODE(target.stat().st_mode) == 0o644
    assert os.listdir(tmp_path) == ["bootlog.prom"]  # no temp file left
    write(str(target), "# EOF\n")  # replaces; str paths too
    assert target.read_text() == "# EOF\n" and os.listdir(tmp_path) == ["bootlog.prom"]


def test_write_goes_through_a_synced_temp_file_in_the_same_dir(tmp_path, monkeypatch):
    target = tmp_path / "bootlog.prom"
    calls = []
    real_replace, real_fsync = os.replace, os.fsync

    def fsync(fd):
        calls.append(("fsync", fd))
        return real_fsync(fd)

    def replace(src, dst):
        src, dst = Path(src), Path(dst)
        calls.append(("replace", src, dst))
        assert src.parent == dst.parent == tmp_path
        assert not src.name.endswith(".prom")  # the collector never reads the temp file
        assert src.read_text() == "x 1\n# EOF\n" and stat.S_IMODE(src.stat().st_mode) == 0o644
        return real_replace(src, dst)

    monkeypatch.setattr(os, "fsync", fsync)
    monkeypatch.setattr(os, "replace", replace)
    write(target, "x 1\n# EOF\n")
    kinds = [c[0] for c in calls]
    # the data is synced before the rename, the directory after it
    assert kinds == ["fsync", "replace", "fsync"]


def test_a_failed_write_leaves_the_old_file_and_no_temp(tmp_path, monkeypatch):
    target = tmp_path / "bootlog.prom"
    target.write_text("old\n")

    def boom(src, dst):
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", boom)
    with pytest.raises(OSError):
        write(target, "new\n")
    assert target.read_text() == "old\n" and os.listdir(tmp_path) == ["bootlog.prom"]


def test_a_concurrent_reader_never_sees_a_partial_file(tmp_path):
    target = tmp_path / "bootlog.prom"
    big = [("a" * 1023 + "\n") * 512, ("b" * 1023 + "\n") * 768]  # 512 KiB and 768 KiB
    write(target, big[0])
    seen, stop = set(), threading.Event()

    def reader():
        while not stop.is_set():
            seen.add(target.read_text())

    t = threading.Thread(target=reader)
    t.start()
    try:
        for i in range(40):
            write(target, big[i % 2])
    finally:
        stop.set()
        t.join()
    assert seen <= set(big) and seen
