"""The store: opening, saving, dedup/update-in-place, refs, the show --json shape, housekeeping.

Runs on SQLite always and on PostgreSQL too when BOOTLOG_TEST_PG_URL is set (own schema per test).
"""

from __future__ import annotations

import itertools
import json
import os
import stat
from pathlib import Path
import subprocess
import sys

from dataclasses import replace

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from bootlog import records
from bootlog.errors import RefError, StoreError
from bootlog.records import Boot, Event, Metric, Samples
from bootlog.store import housekeeping, reads, write
from bootlog.store.db import HEAD_REVISION, current_revision, open_store, resolve_url
from bootlog.store.reads import (
    boots_like,
    count_rows,
    get_position,
    list_boots,
    resolve_ref,
    samples,
    show_boot,
    show_boots,
    typed_config_value,
)
from bootlog.store.write import SourceInfo, save_boots
from pgutil import pg_base_url, pg_schema, seed_boot

BACKENDS = ["sqlite"] + (["postgresql"] if pg_base_url() else [])
PRIMARY = SourceInfo("podman:frank-primary-qwen", "container", container="frank-primary-qwen")
SECONDARY = SourceInfo("podman:frank-secondary", "container", container="frank-secondary")


@pytest.fixture(params=BACKENDS)
def url(request, tmp_path):
    if request.param == "sqlite":
        yield str(tmp_path / "store.db")
    else:
        with pg_schema(pg_base_url()) as u:
            yield u


@pytest.fixture
def engine(url):
    eng = open_store(url)
    yield eng
    eng.close()


# ------------------------------------------------------------------ opening


def test_resolve_url_order(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    monkeypatch.delenv("BOOTLOG_DB", raising=False)
    assert resolve_url(None) == f"sqlite:///{tmp_path}/xdg/bootlog/bootlog.db"
    monkeypatch.setenv("BOOTLOG_DB", str(tmp_path / "env.db"))
    assert resolve_url(None) == f"sqlite:///{tmp_path}/env.db"
    assert resolve_url(str(tmp_path / "flag.db")) == f"sqlite:///{tmp_path}/flag.db"
    pg = "postgresql+psycopg://root@127.0.0.1:5432/test"
    assert resolve_url(pg) == pg
    monkeypatch.chdir(tmp_path)
    assert resolve_url("rel.db") == f"sqlite:///{tmp_path}/rel.db"


def test_new_sqlite_file_is_private_and_tuned(tmp_path, monkeypatch):
    # the default location's directories are made on first use (an explicit --db in a missing
    # directory is refused instead: tests/test_cli.py)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "deep" / "dir"))
    monkeypatch.delenv("BOOTLOG_DB", raising=False)
    path = tmp_path / "deep" / "dir" / "bootlog" / "bootlog.db"
    eng = open_store(None)
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert eng.one("PRAGMA journal_mode")[0] == "wal"
    assert eng.one("PRAGMA foreign_keys")[0] == 1
    assert eng.one("PRAGMA synchronous")[0] == 1  # NORMAL
    assert eng.one("PRAGMA page_size")[0] == 65536  # db.PAGE_SIZE
    assert eng.one("PRAGMA busy_timeout")[0] >= 5000
    assert current_revision(eng) == HEAD_REVISION
    eng.close()


def test_up_to_date_database_opens_without_alembic(tmp_path):
    path = str(tmp_path / "fast.db")
    open_store(path).close()  # (a new file: the migrations made it)
    code = (
        "import sys; from bootlog.store.db import open_store; e = open_store(sys.argv[1]);"
        "print('alembic' in sys.modules, 'sqlalchemy' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code, path], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False False"
    eng = open_store(path)
    assert current_revision(eng) == HEAD_REVISION and housekeeping.check(eng) == []
    eng.close()


def test_open_errors_are_one_line_store_errors(tmp_path):
    (tmp_path / "adir").mkdir()
    with pytest.raises(StoreError) as err:
        open_store(str(tmp_path / "adir"))
    assert "\n" not in str(err.value)
    with pytest.raises(StoreError) as err:
        open_store("postgresql+psycopg://nobody@127.0.0.1:1/none?connect_timeout=2")
    assert "\n" not in str(err.value)
    with pytest.raises(StoreError, match="unsupported database URL"):
        open_store("nosuchdialect://x/y")
    with pytest.raises(StoreError) as err:
        open_store("postgresql+psycopg://:::")
    assert "\n" not in str(err.value)


def test_not_a_database_file(tmp_path):
    bad = tmp_path / "notes.txt"
    bad.write_text("GPU KV cache size: 398,658 tokens\n" * 100)
    with pytest.raises(StoreError) as err:
        open_store(str(bad))
    assert "not a database" in str(err.value)


# ------------------------------------------------------------------ saving


def test_show_shape_round_trip(engine):
    boot = seed_boot(0)
    [(bid, created)] = save_boots(engine, PRIMARY, [boot])
    assert created
    shown = show_boot(engine, bid)
    assert list(shown) == ["boot", "metrics", "config", "events", "runtime", "deploy"]
    assert shown["deploy"] is None  # read from a file-like source: no engine to ask
    assert shown["boot"] == {
        "id": bid,
        "status": "ready",
        "failure": None,
        "failure_message": None,
        "vllm_version": "0.11.1",
        "engine": "v1",
        "model": boot.model,
        "container": "frank-primary-qwen",
        "host": None,
        "source": "podman:frank-primary-qwen",
        "started_at": "2026-10-02T09:53:01-07:00",
        "ready_at": "2026-10-02T10:01:41-07:00",
        "ended_at": None,
        "first_line": boot.first_line,
        "last_line": boot.last_line,
        # (added for the real engine: how the process ended, how the KV pool was sized)
        "ended": None,
        "kv_cache_sized_by": None,
    }
    # every metric back, in log order, one row per rank
    assert [(m["name"], m["value"], m["rank"], m["line"]) for m in shown["metrics"]] == [
        (m.name, m.value, m.rank, m.line) for m in boot.metrics
    ]
    kv = [m for m in shown["metrics"] if m["name"] == "kv_cache_tokens"]
    assert kv == [{"name": "kv_cache_tokens", "value": 398658, "unit": "tokens", "rank": None, "line": kv[0]["line"]}]
    assert isinstance(kv[0]["value"], int)
    cfg = shown["config"]
    assert cfg["max_model_len"] == 200704 and cfg["max_num_seqs"] == 3
    assert cfg["gpu_memory_utilization"] == 0.982
    assert cfg["enable_prefix_caching"] is False and cfg["kv_cache_dtype"] == "fp8"
    assert cfg["quantization"] is None and cfg["served_model_name"] == ["frank-primary"]
    assert shown["events"][0]["kind"] == "warning" and shown["events"][0]["ts"] == "2026-10-02T09:53:06-07:00"
    rt = shown["runtime"]
    assert rt["stats_lines"] == 3
    assert rt["last"]["kv_cache_usage_pct"] == 39.2 and rt["max"]["kv_cache_usage_pct"] == 41.2
    assert rt["max"]["prompt_throughput_tps"] == 812.4
    json.dumps(shown)  # JSON-ready as is


def test_failed_boot_with_oom_event(engine):
    boot = Boot(
        first_line=1,
        last_line=5130,
        status="failed",
        failure="oom",
        failure_message="torch.OutOfMemoryError: HIP out of memory. Tried to allocate 50.00 MiB. "
        "GPU 1 has a total capacity of 31.86 GiB of which 0 bytes is free.",
        vllm_version="0.11.1",
        engine="v1",
        model="/models/q",
        fingerprint="oom-boot",
        metrics=[
            Metric("kv_cache_tokens", 1350182, "tokens", line=300),
            Metric("max_concurrency", 5.15, "x", line=301),
        ],
        events=[
            Event(
                "oom",
                line=5120,
                rank=1,
                message="torch.OutOfMemoryError: HIP out of memory.",
                detail={"requested_mib": 50.0, "free_mib": 0.0, "total_gib": 31.86},
            ),
            Event(
                "traceback",
                line=5100,
                rank=1,
                message="Traceback (most recent call last):",
                detail={"exception": "torch.OutOfMemoryError", "lines": ["a", "b"]},
            ),
        ],
    )
    [(bid, _)] = save_boots(engine, PRIMARY, [boot])
    shown = show_boot(engine, bid)
    assert shown["boot"]["failure"] == "oom" and shown["boot"]["failure_message"] == boot.failure_message
    assert [e["kind"] for e in shown["events"]] == ["oom", "traceback"]  # stored order, not line order
    assert shown["events"][0]["detail"] == {"requested_mib": 50.0, "free_mib": 0.0, "total_gib": 31.86}
    assert shown["events"][1]["detail"]["lines"] == ["a", "b"]
    assert shown["runtime"] == {"stats_lines": 0, "last": {}, "max": {}}


def test_same_content_is_not_stored_twice(engine):
    first = save_boots(engine, PRIMARY, [seed_boot(0), seed_boot(1)])
    before = count_rows(engine)
    again = save_boots(engine, PRIMARY, [seed_boot(0), seed_boot(1), seed_boot(2)])
    assert [c for _, c in first] == [True, True]
    assert again[:2] == [(first[0][0], False), (first[1][0], False)] and again[2][1] is True
    after = count_rows(engine)
    assert after["boots"] == before["boots"] + 1
    assert after["metrics"] == before["metrics"] + len(seed_boot(2).metrics)
    # the same boot read from another source is still the same boot
    assert save_boots(engine, SourceInfo("/var/log/vllm.log", "file"), [seed_boot(1)]) == [(first[1][0], False)]
    # and the same boot twice in one call is stored once
    dup = save_boots(engine, PRIMARY, [seed_boot(7), seed_boot(7)])
    assert dup[0][1] is True and dup[1] == (dup[0][0], False)


def test_running_boot_is_updated_in_place(engine):
    full = seed_boot(3)
    early = replace(
        full,
        status="incomplete",
        ready_at=None,
        last_line=full.first_line + 15,
        metrics=full.metrics[:4],
        samples=Samples(),
        events=[],
    )
    [(bid, created)] = save_boots(engine, PRIMARY, [early])
    assert created and show_boot(engine, bid)["boot"]["status"] == "incomplete"
    [(bid2, created2)] = save_boots(engine, PRIMARY, [full])
    assert (bid2, created2) == (bid, False)
    shown = show_boot(engine, bid)
    assert shown["boot"]["status"] == "ready" and shown["boot"]["last_line"] == full.last_line
    assert len(shown["metrics"]) == len(full.metrics)  # replaced, not appended
    assert shown["runtime"]["stats_lines"] == 3
    assert count_rows(engine)["boots"] == 1
    # an older, shorter read never overwrites the longer one
    assert save_boots(engine, PRIMARY, [early]) == [(bid, False)]
    assert len(show_boot(engine, bid)["metrics"]) == len(full.metrics)


def test_position_is_saved_with_the_boots(engine):
    assert get_position(engine, "podman:frank-primary-qwen") is None
    save_boots(engine, PRIMARY, [seed_boot(0)], position=("podman:frank-primary-qwen", 81234, "ab12"))
    assert get_position(engine, "podman:frank-primary-qwen") == (81234, "ab12")
    save_boots(engine, PRIMARY, [], position=("podman:frank-primary-qwen", 3_000_000_000, "cd34"))
    assert get_position(engine, "podman:frank-primary-qwen") == (3_000_000_000, "cd34")  # > 2 GiB


def test_failed_save_leaves_nothing(engine):
    good = seed_boot(0)
    broken = seed_boot(1)
    broken.metrics.append(Metric(None, 1.0, "s"))  # type: ignore[arg-type]  # NOT NULL violation
    with pytest.raises(StoreError):
        save_boots(engine, PRIMARY, [good, broken], position=("k", 10, "h"))
    assert count_rows(engine)["boots"] == 0 and count_rows(engine)["metrics"] == 0
    assert get_position(engine, "k") is None


def test_non_finite_values_are_dropped_not_fatal(engine):
    b = seed_boot(0)
    b.metrics.append(Metric("kv_cache_available_gib", float("nan"), "GiB"))
    b.samples.add(b.last_line, None, ("kv_cache_usage_pct",), [float("inf")])
    [(bid, _)] = save_boots(engine, PRIMARY, [b])
    shown = show_boot(engine, bid)
    assert len(shown["metrics"]) == len(b.metrics) - 1
    json.dumps(shown, allow_nan=False)


def test_boot_without_fingerprint_still_dedups(engine):
    b = replace(seed_boot(0), fingerprint="")
    [(bid, created)] = save_boots(engine, PRIMARY, [b])
    assert created and save_boots(engine, PRIMARY, [b]) == [(bid, False)]


# ------------------------------------------------------------------ refs and reads


def _interleaved(engine):
    """P0 S0 P1 S1 P2 (P = primary container, S = secondary), ids in that order."""
    ids = {}
    for i, (src, name) in enumerate(
        [(PRIMARY, "P0"), (SECONDARY, "S0"), (PRIMARY, "P1"), (SECONDARY, "S1"), (PRIMARY, "P2")]
    ):
        [(bid, _)] = save_boots(engine, src, [seed_boot(i, tag=name)])
        ids[name] = bid
    return ids


def test_refs(engine):
    with pytest.raises(RefError, match="no boots stored yet"):
        resolve_ref(engine, "last")
    ids = _interleaved(engine)
    assert resolve_ref(engine, "last") == ids["P2"]
    assert resolve_ref(engine, "prev") == ids["P1"]  # same container as last, not S1
    assert resolve_ref(engine, "last~1") == ids["P1"]
    assert resolve_ref(engine, "last~2") == ids["P0"]
    assert resolve_ref(engine, "last~0") == ids["P2"]
    assert resolve_ref(engine, "last", container="frank-secondary") == ids["S1"]
    assert resolve_ref(engine, "prev", container="frank-secondary") == ids["S0"]
    assert resolve_ref(engine, str(ids["S0"])) == ids["S0"]
    with pytest.raises(RefError, match="no boot matches 'prev'"):
        resolve_ref(engine, "prev", container="frank-secondary-other")
    with pytest.raises(RefError, match="no boot matches 'last~3'"):
        resolve_ref(engine, "last~3")
    with pytest.raises(RefError, match="no boot with id 999"):
        resolve_ref(engine, "999")
    with pytest.raises(RefError, match="not a boot reference"):
        resolve_ref(engine, "latest")


@pytest.mark.parametrize("host", [None, "dankserver"])
def test_prev_of_a_plain_file_is_the_same_file(engine, host):
    a, b = SourceInfo("/logs/a.log", "file", host=host), SourceInfo("/logs/b.log", "file", host=host)
    (a0, _), (a1, _) = save_boots(engine, a, [seed_boot(0, tag="a"), seed_boot(1, tag="a")])
    [(b0, _)] = save_boots(engine, b, [seed_boot(0, tag="b")])
    [(a2, _)] = save_boots(engine, a, [seed_boot(2, tag="a")])
    assert resolve_ref(engine, "last") == a2 and resolve_ref(engine, "prev") == a1
    assert resolve_ref(engine, "last~2") == a0
    # timing history is wider: every earlier same-config boot of the host (or of the file), in
    # the order they started (b0 started with a0, an hour before a1)
    assert boots_like(engine, a2) == ([a0, b0, a1] if host else [a0, a1])


def test_list_boots_newest_last_and_filtered(engine):
    ids = _interleaved(engine)
    rows = list_boots(engine)
    assert [r["id"] for r in rows] == sorted(ids.values())
    assert set(rows[0]) == set(show_boot(engine, ids["P0"])["boot"])
    assert [r["id"] for r in list_boots(engine, container="frank-secondary")] == [ids["S0"], ids["S1"]]
    assert list_boots(engine, host="elsewhere") == []


def test_boots_like_same_container_same_config_earlier(engine):
    ids = _interleaved(engine)
    other_cfg = seed_boot(9, tag="P3")
    other_cfg.config = dict(other_cfg.config, max_num_seqs="2")
    [(p3, _)] = save_boots(engine, PRIMARY, [other_cfg])
    [(p4, _)] = save_boots(engine, PRIMARY, [seed_boot(10, tag="P4")])
    assert boots_like(engine, p4) == [ids["P0"], ids["P1"], ids["P2"]]  # oldest first, no P3, no S*
    assert boots_like(engine, p4, limit=2) == [ids["P1"], ids["P2"]]
    assert boots_like(engine, p3) == []
    assert boots_like(engine, ids["S1"]) == [ids["S0"]]


def test_show_boots_is_show_boot_in_one_batch(engine):
    ids = _interleaved(engine)
    order = [ids["P2"], ids["S0"], ids["P0"], ids["S1"], ids["P1"]]
    assert show_boots(engine, order) == [show_boot(engine, i) for i in order]
    light = show_boots(engine, order, runtime=False)
    for full, lean in zip(show_boots(engine, order), light):
        assert lean["runtime"] is None
        assert {k: v for k, v in lean.items() if k != "runtime"} == {k: v for k, v in full.items() if k != "runtime"}
    assert show_boots(engine, []) == []
    with pytest.raises(RefError):
        show_boots(engine, [ids["P0"], 987654])


def test_show_boots_past_the_in_list_bound(engine, monkeypatch):
    monkeypatch.setattr(reads, "CHUNK", 2)
    ids = _interleaved(engine)
    order = sorted(ids.values())
    assert [s["boot"]["id"] for s in show_boots(engine, order)] == order
    monkeypatch.undo()
    assert show_boots(engine, order) == [show_boot(engine, i) for i in order]


def test_many_samples_stored_in_batches_in_one_transaction(engine, monkeypatch):
    monkeypatch.setattr(write, "_BATCH", 2)
    monkeypatch.setattr(records, "CHUNK_ROWS", 5)
    boot = seed_boot(0)
    boot.samples = Samples()
    for i in range(23):
        boot.samples.add(1000 + i, None, ("prompt_throughput_tps", "kv_cache_usage_pct"), [float(i), 1.5])
    [(bid, _)] = save_boots(engine, PRIMARY, [boot])
    got = [s for _, s in samples(engine, [bid])]
    assert [s.line for s in got] == list(range(1000, 1023))
    assert got[-1].values == {"prompt_throughput_tps": 22.0, "kv_cache_usage_pct": 1.5}
    assert engine.one("SELECT count(*) FROM sample_chunks WHERE boot_id = ?", (bid,))[0] == 5
    assert show_boot(engine, bid)["runtime"]["stats_lines"] == 23
    # a failure in a later batch undoes the earlier batches too (one transaction)
    bad = seed_boot(1, tag="bad")
    bad.samples = Samples()
    for i in range(19):
        bad.samples.add(2000 + i, None, ("x",), [1.0])
    real, batches = engine.executemany, []

    def failing(sql, rows):
        if "sample_chunks" in sql:
            batches.append(len(rows))
            if len(batches) > 1:
                raise RuntimeError("disk on fire")  # (after a first batch went in)
        return real(sql, rows)

    monkeypatch.setattr(engine, "executemany", failing)
    before = count_rows(engine)
    with pytest.raises(RuntimeError):
        save_boots(engine, PRIMARY, [bad])
    assert count_rows(engine) == before and batches[0] == 2


@pytest.mark.parametrize(
    "printed, value",
    [
        ("200704", 200704),
        ("0.982", 0.982),
        ("True", True),
        ("False", False),
        ("None", None),
        ("'fp8'", "fp8"),
        ("fp8", "fp8"),
        ("3.15e9", 3.15e9),
        ("-1", -1),
        ("['frank-primary']", ["frank-primary"]),
        ("{'enable_thinking': True}", {"enable_thinking": True}),
        ("(1, 1024)", [1, 1024]),
        ("/models/Qwen3.8-Flash-Next-Uncensored-FP8", "/models/Qwen3.8-Flash-Next-Uncensored-FP8"),
        ("nan", "nan"),
        ("[unclosed", "[unclosed"),
        ("1.0.3", "1.0.3"),
        (
            '{"level":3,"use_inductor":true,"local_cache_dir":null}',
            {"level": 3, "use_inductor": True, "local_cache_dir": None},
        ),
        ("DecodingConfig(backend='auto')", "DecodingConfig(backend='auto')"),
    ],
)
def test_config_values_typed_for_json(printed, value):
    assert typed_config_value(printed) == value


# ------------------------------------------------------------------ housekeeping


def test_status_check_and_prune(engine):
    save_boots(engine, PRIMARY, [seed_boot(i) for i in range(4)])
    st = housekeeping.status(engine)
    assert st["up_to_date"] and st["rows"]["boots"] == 4 and st["rows"]["samples"] == 12
    assert housekeeping.check(engine) == []
    out = housekeeping.prune(engine, keep_last=1)
    assert out == {"boots": 0, "samples": 9}
    rows = count_rows(engine)
    assert rows["samples"] == 3 and rows["boots"] == 4 and rows["metrics"] == 4 * len(seed_boot(0).metrics)
    out = housekeeping.prune(engine, keep_last=2, figures=True)
    assert out["boots"] == 2 and count_rows(engine)["boots"] == 2
    assert count_rows(engine)["metrics"] == 2 * len(seed_boot(0).metrics)


def test_check_reports_schema_drift(engine):
    engine.execute("ALTER TABLE boots ADD COLUMN stray INTEGER")
    engine.execute("DROP TABLE positions")
    problems = housekeeping.check(engine)
    assert "column boots.stray is not in the schema" in problems and "table positions is missing" in problems


def test_backup_sqlite(tmp_path):
    eng = open_store(str(tmp_path / "live.db"))
    save_boots(eng, PRIMARY, [seed_boot(0), seed_boot(1)])
    dest = housekeeping.backup(eng, str(tmp_path / "copy.db"))
    assert stat.S_IMODE(os.stat(dest).st_mode) == 0o600
    copy = open_store(dest)
    assert count_rows(copy) == count_rows(eng)
    with pytest.raises(StoreError, match="exists"):
        housekeeping.backup(eng, dest)
    for e in (eng, copy):
        e.close()


@pytest.mark.skipif(not pg_base_url(), reason="BOOTLOG_TEST_PG_URL not set")
def test_backup_refuses_postgresql():
    with pg_schema(pg_base_url()) as u:
        eng = open_store(u)
        with pytest.raises(StoreError, match="pg_dump"):
            housekeeping.backup(eng, "/tmp/never.db")
        eng.close()


# ------------------------------------------------------------------ real logs, once the parser exists

CORPUS = sorted((Path(__file__).resolve().parent.parent / "fixtures" / "logs").glob("*.log"))  # the corpus, copied


def _parse_file(path):
    envelope = pytest.importorskip("bootlog.read.envelope")
    parse_mod = pytest.importorskip("bootlog.parse.parse")
    sources = pytest.importorskip("bootlog.read.sources")
    src = sources.open_source(str(path))
    return parse_mod.parse(envelope.read(src.chunks()))


@pytest.mark.skipif(not CORPUS, reason="fixtures/logs holds no corpus log")
def test_corpus_boots_round_trip(engine):
    """Every boot parsed from the real corpus comes back from show_boot as it went in, and no two
    different boots share a fingerprint (a collision would silently drop one)."""
    total = 0
    for path in CORPUS:
        boots = _parse_file(path)
        src = SourceInfo(str(path), "file")
        saved = save_boots(engine, src, boots)
        assert [c for _, c in saved] == [True] * len(boots), f"{path.name}: a boot collided with a stored one"
        total += len(boots)
        for (bid, _), b in zip(saved, boots):
            shown = show_boot(engine, bid)
            assert shown["boot"]["status"] == b.status and shown["boot"]["failure"] == b.failure
            assert shown["boot"]["first_line"] == b.first_line and shown["boot"]["last_line"] == b.last_line
            assert shown["boot"]["started_at"] == (b.started_at.isoformat() if b.started_at else None)
            assert [(m["name"], m["value"], m["rank"], m["line"]) for m in shown["metrics"]] == [
                (m.name, m.value, m.rank, m.line) for m in _in_log_order(b.metrics) if m.value == m.value
            ]
            assert set(shown["config"]) == set(b.config)
            assert [e["kind"] for e in shown["events"]] == [e.kind for e in b.events]
            assert shown["runtime"]["stats_lines"] == len(b.samples)
            json.dumps(shown, allow_nan=False)
        assert save_boots(engine, src, boots) == [(bid, False) for bid, _ in saved]
    assert count_rows(engine)["boots"] == total


@pytest.mark.skipif(not CORPUS, reason="fixtures/logs holds no corpus log")
def test_corpus_boot_read_while_starting_is_updated_in_place(engine, tmp_path):
    """A log read at 30 %, then 60 % of its last boot, then whole (a hook or watcher during a
    deploy) stores each boot once, under its first id, with the whole read's content."""
    checked = 0
    for path in CORPUS:
        full = _parse_file(path)
        if not full or full[-1].started_at is None:
            continue
        lines = path.read_bytes().split(b"\n")
        last = full[-1]
        src = SourceInfo(f"/var/log/{path.name}", "file")  # one source name for every read
        ids = None
        for frac in (0.3, 0.6):
            cut = tmp_path / f"{path.stem}-{frac}.log"
            cut.write_bytes(
                b"\n".join(lines[: last.first_line + int((last.last_line - last.first_line) * frac)]) + b"\n"
            )
            saved = save_boots(engine, src, _parse_file(cut))
            ids = ids or [bid for bid, _ in saved]
            assert [bid for bid, _ in saved] == ids[: len(saved)], path.name
        saved = save_boots(engine, src, full)
        assert [bid for bid, _ in saved][: len(ids)] == ids, path.name
        shown = show_boot(engine, saved[-1][0])
        assert shown["boot"]["last_line"] == last.last_line and shown["boot"]["status"] == last.status
        assert len(shown["metrics"]) == len([m for m in last.metrics if m.value == m.value])
        assert len(list_boots(engine)) == checked + len(full)
        checked += len(full)
        # an old partial read arriving late never overwrites the whole one
        assert save_boots(engine, src, _parse_file(tmp_path / f"{path.stem}-0.3.log"))[-1][0] == saved[-1][0]
        assert show_boot(engine, saved[-1][0])["boot"]["last_line"] == last.last_line
    assert checked > 0


def test_prune_one_container_keeps_the_others(engine):
    ids = _interleaved(engine)  # P0 S0 P1 S1 P2
    out = housekeeping.prune(engine, keep_last=1, container="frank-primary-qwen")
    assert out == {"boots": 0, "samples": 6}  # P0 and P1 lose their samples
    assert show_boot(engine, ids["P2"])["runtime"]["stats_lines"] == 3
    assert show_boot(engine, ids["P1"])["runtime"]["stats_lines"] == 0
    assert show_boot(engine, ids["P1"])["metrics"]  # figures stay
    assert show_boot(engine, ids["S0"])["runtime"]["stats_lines"] == 3
    with pytest.raises(StoreError):
        housekeeping.prune(engine, keep_last=-1)


def test_db_path_and_upgrade(tmp_path, monkeypatch):
    monkeypatch.setenv("BOOTLOG_DB", str(tmp_path / "env.db"))
    assert housekeeping.db_path(None) == str(tmp_path / "env.db")
    assert housekeeping.db_path("postgresql+psycopg://u:secret@h/db") == "postgresql+psycopg://u:***@h/db"
    from bootlog.store.db import connect

    store = connect(None)
    assert housekeeping.upgrade(store) == (None, HEAD_REVISION)
    assert housekeeping.upgrade(store) == (HEAD_REVISION, HEAD_REVISION)
    store.close()


@given(st.text(max_size=80))
@settings(max_examples=300, deadline=None)
def test_any_printed_config_value_renders_as_json(printed):
    json.dumps(typed_config_value(printed), allow_nan=False)


_fresh = itertools.count(100)
_metric = st.builds(
    Metric,
    name=st.sampled_from(["kv_cache_tokens", "graph_capture_gib", "kv_cache_available_gib", "model_load_s"]),
    value=st.floats(allow_nan=False, allow_infinity=False, min_value=-1e15, max_value=1e15),
    unit=st.sampled_from(["tokens", "GiB", "s"]),
    rank=st.one_of(st.none(), st.integers(0, 7)),
    line=st.integers(1, 10**7),
)


@given(metrics=st.lists(_metric, max_size=30))
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_metric_values_round_trip_exactly(engine, metrics):
    # a fresh boot each example (another start time: same source+line+start would be "the same boot")
    b = replace(seed_boot(next(_fresh)), metrics=metrics)
    [(bid, _)] = save_boots(engine, PRIMARY, [b])
    got = show_boot(engine, bid)["metrics"]
    assert [(m["name"], float(m["value"]), m["rank"], m["line"]) for m in got] == [
        (m.name, m.value, m.rank, m.line) for m in _in_log_order(metrics)
    ]


def _in_log_order(metrics: list[Metric]) -> list[Metric]:
    """What show lists: by line, stably (the figures of one line keep their order), lineless last."""
    return sorted(metrics, key=lambda m: (m.line is None, m.line or 0))


def test_prev_falls_back_to_other_files_of_the_host(engine):
    a, b = SourceInfo("/logs/deploy-1.log", "file", host="h"), SourceInfo("/logs/deploy-2.log", "file", host="h")
    [(a0, _)] = save_boots(engine, a, [seed_boot(0, tag="a")])
    [(b0, _)] = save_boots(engine, b, [seed_boot(1, tag="b")])
    assert resolve_ref(engine, "last") == b0 and resolve_ref(engine, "prev") == a0
    with pytest.raises(RefError):
        resolve_ref(engine, "last~2")


def test_last_n_walks_the_same_file_then_the_hosts_other_files(engine):
    # X, Y, then X again: last~1 is X's older boot, last~2 the other file's, each N another boot
    x, y = SourceInfo("/logs/x.log", "file", host="h"), SourceInfo("/logs/y.log", "file", host="h")
    [(x0, _)] = save_boots(engine, x, [seed_boot(0, tag="x0")])
    [(y0, _)] = save_boots(engine, y, [seed_boot(1, tag="y0")])
    [(x1, _)] = save_boots(engine, x, [seed_boot(2, tag="x1")])
    assert [resolve_ref(engine, r) for r in ("last", "last~1", "last~2")] == [x1, x0, y0]
    assert resolve_ref(engine, "prev") == x0 and resolve_ref(engine, "prev~1") == y0
    with pytest.raises(RefError, match="no boot matches 'last~3'"):
        resolve_ref(engine, "last~3")


def test_prune_of_one_hosts_container_keeps_the_other_hosts(engine):
    # one container name on two hosts: each host's run of it has its own newest boots
    on = {
        h: SourceInfo("podman:frank-primary-qwen", "container", container="frank-primary-qwen", host=h)
        for h in ("hostA", "hostB")
    }
    ids = {}
    for i, (h, name) in enumerate([("hostA", "A0"), ("hostB", "B0"), ("hostA", "A1"), ("hostB", "B1")]):
        [(ids[name], _)] = save_boots(engine, on[h], [seed_boot(i, tag=name)])
    out = housekeeping.prune(engine, keep_last=1, container="frank-primary-qwen", host="hostB")
    assert out == {"boots": 0, "samples": 3}  # B0 only
    assert [show_boot(engine, ids[n])["runtime"]["stats_lines"] for n in ("A0", "B0", "A1", "B1")] == [3, 0, 3, 3]


def test_a_read_without_the_plan_keeps_the_plans_own_figures(url, tmp_path, monkeypatch):
    """hook --plan stored the plan's user-pattern figures; a later plain `ingest` of the same
    boot (the same bytes, or the boot grown since) must neither count them as missing nor
    delete them: re-ingesting adds nothing, and removes nothing either."""
    from bootlog.run.ingest import ingest
    from bootlog.judge.plan import load_plan

    root = Path(__file__).resolve().parents[1]
    plan = load_plan(str(root / "fixtures" / "plans" / "frank-primary.toml"))
    log = root / "fixtures" / "logs" / "seed" / "04-shape-g-kv-400700-no-prefix-cache.log"
    eng = open_store(url)
    store = eng

    def stored(bid):
        shown = show_boot(eng, bid)
        return (
            [(m["name"], m["value"], m["rank"]) for m in shown["metrics"]],
            [e["kind"] for e in shown["events"]],
            shown["boot"]["last_line"],
        )

    def user(metrics):
        return [m for m in metrics if m[0] in ("expert_arena_gib", "expert_arena_slots", "planner_overhead_gib")]

    # read young with the plan (the hook at ready), then whole without it (the boot ran on)
    data = log.read_bytes()
    young = tmp_path / "deploy.log"
    cut = data.index(b"Application startup complete")
    young.write_bytes(data[: data.index(b"\n", cut) + 1])
    (y,) = ingest(store, str(young), plan=plan)
    before = stored(y.id)
    assert len(user(before[0])) >= 2
    young.write_bytes(data)
    (grown,) = ingest(store, str(young))
    assert (grown.id, grown.created) == (y.id, False)
    metrics, events, last = stored(y.id)
    assert last > before[2]
    assert user(metrics) == user(before[0])  # kept

    # the same bytes again, from another path: nothing added, nothing removed
    again = tmp_path / "copy.log"
    again.write_bytes(data)
    whole = stored(y.id)
    (same,) = ingest(store, str(again))
    assert (same.id, same.created) == (y.id, False)
    assert stored(y.id) == whole
    # and what was kept is what a read of the whole boot with the plan gives
    (planned,) = ingest(store, str(young), plan=plan)
    assert planned.id == y.id and stored(y.id) == whole
    eng.close()


def test_a_read_with_a_changed_plan_rewrites_the_plans_figures(url, tmp_path):
    """A read *with* a plan owns the user-pattern rows: when its patterns no longer match, the
    figures an older plan stored go (check then says the value is missing, not a stale 17.77)."""
    from bootlog.run.ingest import ingest
    from bootlog.judge.plan import load_plan

    root = Path(__file__).resolve().parents[1]
    log = root / "fixtures" / "logs" / "seed" / "04-shape-g-kv-400700-no-prefix-cache.log"
    pattern = """[[pattern]]
name = "expert_arena_gib"
regex = '{} (?P<value>[0-9.]+) GiB'
literal = "{} "
unit = "GiB"
samples = [{{ line = "x {} 17.77 GiB", value = 17.77 }}]
"""
    a, b = tmp_path / "a.toml", tmp_path / "b.toml"
    a.write_text(pattern.format(*["expert cache"] * 3))
    b.write_text(pattern.format(*["expert arena"] * 3))
    eng = open_store(url)
    store = eng

    def arena(bid):
        return [m["value"] for m in show_boot(eng, bid)["metrics"] if m["name"] == "expert_arena_gib"]

    (first,) = ingest(store, str(log), plan=load_plan(str(a)))
    assert arena(first.id)
    (again,) = ingest(store, str(log), plan=load_plan(str(b)))
    assert again.id == first.id and arena(first.id) == []
    eng.close()
