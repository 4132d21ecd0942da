"""The verdicts on what the real engine printed (fixtures/logs/engine: captures of vLLM 0.32 and
0.28 on CPU, see its README), in seconds: what the engine tier proves against live servers, kept
in the ordinary suite.  Expected values are read off the logs by eye (line numbers in comments)."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from bootlog.cli import cli

ENGINE = Path(__file__).resolve().parent.parent / "fixtures" / "logs" / "engine"
COLD = ENGINE / "e01-v0.32.0-cpu-cold-requests-sigterm.log"
WARM_KILLED = ENGINE / "e02-v0.32.0-cpu-warm-engine-core-killed.log"
PODMAN_AUTO = ENGINE / "e11-v0.32.0-cpu-podman-auto-kv-engine-core-killed.log"


def run(db: Path, *args: str):
    return CliRunner().invoke(cli, ["--db", str(db), *args], catch_exceptions=False)


def head(src: Path, lines: int, dest: Path) -> Path:
    """The log as a hook reads it when the boot is ready: its first `lines` lines."""
    dest.write_bytes(b"".join(src.read_bytes().splitlines(keepends=True)[:lines]))
    return dest


def test_warm_reboot_at_ready_is_no_drift_and_the_clean_stop_before_it_no_fault(tmp_path):
    db = tmp_path / "b.db"
    warm = head(WARM_KILLED, 99, tmp_path / "warm.log")  # line 99: Application startup complete.
    assert run(db, "ingest", str(COLD)).exit_code == 0
    assert run(db, "ingest", str(warm)).exit_code == 0
    res = run(db, "diff", "last", "prev", "--json")
    d = json.loads(res.stdout)
    assert res.exit_code == 0, res.stdout
    assert d["summary"]["drift"] == 0 and d["summary"]["violations"] == 0
    # e01 line 128: the EngineDeadError printed while SIGTERM stopped it is no traceback to count
    assert not [f for f in d["findings"] if f["key"] == "traceback" and f["verdict"] == "drift"]
    # e02 line 46: "Compiling model again due to a load failure from …, reason: 'function' object
    # has no attribute 'finalize_loading'" — said, with its reason, and not called drift
    [miss] = [f for f in d["findings"] if f["key"] == "compile_cache_miss"]
    assert (miss["old"], miss["new"], miss["verdict"]) == (0, 1, "new")
    assert "'function' object has no attribute 'finalize_loading'" in miss["why"]


def test_the_same_boot_read_again_after_its_engine_died_fails_diff_and_check(tmp_path):
    db = tmp_path / "b.db"
    log = tmp_path / "warm.log"
    assert run(db, "ingest", str(COLD)).exit_code == 0
    head(WARM_KILLED, 99, log)
    assert run(db, "ingest", str(log)).exit_code == 0
    log.write_bytes(WARM_KILLED.read_bytes())  # the file grew: the engine core was killed (line 105)
    again = run(db, "ingest", str(log))
    assert again.exit_code == 0 and "engine_died" in again.stdout, again.stdout
    b = json.loads(run(db, "show", "last", "--json").stdout)["boot"]
    assert (b["status"], b["failure"], b["ended"]) == ("ready", "engine_died", "died")
    assert b["failure_message"] == "[shutdown] MPClient: engine core exited unexpectedly; starting cleanup"
    res = run(db, "diff", "last", "prev")
    assert res.exit_code == 4 and "died serving (engine_died)" in res.stdout, res.stdout
    plan = tmp_path / "p.toml"
    plan.write_text("[config]\nmax_model_len = 2048\n")
    assert run(db, "check", "last", "--plan", str(plan)).exit_code == 4


def auto_sized(kv_gib: str, non_kv_gib: str, tokens: str) -> bytes:
    """e11 (a KV pool the engine sized itself, line 51-52) with other measured figures, as the
    next boot of the same container prints them."""
    return (
        PODMAN_AUTO.read_bytes()
        .replace(b"Auto set (5.21/23.54) GiB", b"Auto set (" + kv_gib.encode() + b"/23.54) GiB")
        .replace(b"0.67 GiB memory was consumed", non_kv_gib.encode() + b" GiB memory was consumed")
        .replace(b"CPU KV cache size: 10,928,640 tokens", b"CPU KV cache size: " + tokens.encode() + b" tokens")
        .replace(b"2026-12-06T03:0", b"2026-12-06T04:0")
    )


def test_a_measured_kv_pool_moves_with_the_memory_it_was_measured_from(tmp_path):
    db = tmp_path / "b.db"
    nxt = tmp_path / "next.log"
    assert run(db, "ingest", "--container", "tiny", str(PODMAN_AUTO)).exit_code == 0
    # 0.08 GiB more non-KV memory: 0.08 GiB less KV (167,772 tokens at 512 B/token, 1.5 %)
    nxt.write_bytes(auto_sized("5.13", "0.75", "10,760,868"))
    assert run(db, "ingest", "--container", "tiny", str(nxt)).exit_code == 0
    d = json.loads(run(db, "diff", "last", "prev", "--json").stdout)
    [kv] = [f for f in d["findings"] if f["key"] == "kv_cache_tokens"]
    assert kv["verdict"] == "changed" and "non-KV memory use: 0.67 → 0.75 GiB" in kv["why"], kv


def test_a_measured_kv_pool_that_moves_without_a_reason_is_drift(tmp_path):
    db = tmp_path / "b.db"
    nxt = tmp_path / "next.log"
    assert run(db, "ingest", "--container", "tiny", str(PODMAN_AUTO)).exit_code == 0
    # the same share and non-KV use, 3 % fewer tokens: nothing the log shows explains it
    nxt.write_bytes(auto_sized("5.21", "0.67", "10,600,781"))
    assert run(db, "ingest", "--container", "tiny", str(nxt)).exit_code == 0
    res = run(db, "diff", "last", "prev", "--json")
    [kv] = [f for f in json.loads(res.stdout)["findings"] if f["key"] == "kv_cache_tokens"]
    assert kv["verdict"] == "drift" and "more than the ±1%" in kv["why"], kv
    # ... while 0.05 % (the tier's identical boots: 5,426,432 -> 5,429,376) is the measurement
    nxt.write_bytes(auto_sized("5.21", "0.67", "10,934,569"))
    db2 = tmp_path / "c.db"
    run(db2, "ingest", "--container", "tiny", str(PODMAN_AUTO))
    run(db2, "ingest", "--container", "tiny", str(nxt))
    res = run(db2, "diff", "last", "prev", "--json")
    [kv] = [f for f in json.loads(res.stdout)["findings"] if f["key"] == "kv_cache_tokens"]
    assert kv["verdict"] == "changed" and "kv_cache_sized_by: measured" in kv["why"], kv
    assert res.exit_code == 4  # (the engine died serving in e11: a failed boot whatever the KV says)
