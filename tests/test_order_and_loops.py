"""What the trial found about order and restarts: boots are in the order they started (whatever
order the files were given or stored in), saved container logs join the container's history,
and failed starts in a row are one crash loop."""

from __future__ import annotations

import json
import shutil

from click.testing import CliRunner

from bootlog.cli import cli
from paths import FIXTURES
from podman_util import fixture_log, wait_exit, all_at_once

SEED = FIXTURES / "seed"


def run(db, *args):
    return CliRunner().invoke(cli, ["--db", str(db), *args], catch_exceptions=False)


def shown(db, ref):
    return json.loads(run(db, "show", ref, "--json").stdout)


def test_last_is_the_latest_started_boot_whatever_the_file_order(db_path, tmp_path):
    # a fresh copy: every file has the same mtime, names sort shape D … shape G … cold/warm
    for f in SEED.glob("*.log"):
        shutil.copy(f, tmp_path / f.name)
    files = sorted(str(p) for p in tmp_path.glob("*.log"))
    assert run(db_path, "ingest", *files).exit_code == 0
    last, prev = shown(db_path, "last"), shown(db_path, "prev")
    # shape G (started 10-05) is the newest deploy; the gdn_hip burst (10-04) the one before
    assert last["boot"]["source"].endswith("04-shape-g-kv-400700-no-prefix-cache.log")
    assert last["boot"]["started_at"].startswith("2026-10-05")
    assert prev["boot"]["source"].endswith("08-gdn-hip-burst-prefix-caching.log")
    starts = [b["started_at"] for b in json.loads(run(db_path, "list", "--json").stdout)]
    assert starts == sorted(starts)  # newest last

    # an older log stored afterwards does not become `last`
    db2 = tmp_path / "two.db"
    run(db2, "ingest", str(tmp_path / "04-shape-g-kv-400700-no-prefix-cache.log"))
    run(db2, "ingest", str(tmp_path / "01-shape-d-fp8-200704x3.log"))
    assert shown(db2, "last")["boot"]["source"].endswith("04-shape-g-kv-400700-no-prefix-cache.log")
    assert shown(db2, "prev")["boot"]["source"].endswith("01-shape-d-fp8-200704x3.log")


def test_saved_container_logs_join_the_container_history(db_path):
    files = [str(SEED / "01-shape-d-fp8-200704x3.log"), str(SEED / "04-shape-g-kv-400700-no-prefix-cache.log")]
    res = run(db_path, "ingest", "--container", "frank-primary-qwen", *files)
    assert res.exit_code == 0, res.output
    boots = json.loads(run(db_path, "list", "--container", "frank-primary-qwen", "--json").stdout)
    assert len(boots) == 2 and {b["container"] for b in boots} == {"frank-primary-qwen"}
    assert all(shown(db_path, str(b["id"]))["deploy"] is None for b in boots)  # a file has no engine to ask
    diff = run(db_path, "diff", "last", "prev", "--json")
    assert json.loads(diff.stdout)["b"] == boots[0]["id"]


def test_two_failed_starts_in_a_row_are_a_crash_loop(db_path):
    run(db_path, "ingest", str(SEED / "05-util-1.00-crash-loop.log"))
    first, last = shown(db_path, "prev"), shown(db_path, "last")
    assert first["boot"]["status"] == last["boot"]["status"] == "failed"
    [loop] = [e for e in last["events"] if e["kind"] == "crash_loop"]
    assert loop["detail"]["failed_starts"] == 2 and loop["detail"]["boots"] == [first["boot"]["id"], last["boot"]["id"]]
    assert 60 < loop["detail"]["span_s"] < 120  # 16:52:57 -> 16:54:15
    assert not [e for e in first["events"] if e["kind"] == "crash_loop"]  # on the last boot of the loop
    text = run(db_path, "show", "last").stdout
    assert "crash loop     2 failed starts in a row over 1.3 min" in text.splitlines()[10]
    assert "failed (crash loop: 2 starts)" in run(db_path, "history").stdout
    d = json.loads(run(db_path, "diff", "last", "prev", "--json").stdout)
    assert any(f["key"] == "crash_loop" and f["verdict"] == "new" for f in d["findings"])


def test_failed_attempts_at_other_settings_are_no_crash_loop(db_path):
    # the night ladder: 262144 fails, 245760 fails 13 min later, then 237568 comes up
    run(db_path, "ingest", str(SEED / "09-night-ladder-4-boots.log"))
    for b in json.loads(run(db_path, "list", "--json").stdout):
        assert not [e for e in shown(db_path, str(b["id"]))["events"] if e["kind"] == "crash_loop"]


def test_a_container_restarted_by_its_policy_is_a_crash_loop_with_its_restart_count(replayer, db_path):
    oom = fixture_log("022-v0.13.0-oom-engine-failed.log").read_bytes()
    again = oom.replace(b"pid=", b"pid=9")  # a second start prints other pids
    name = replayer.start([all_at_once(oom, exit_code=1), all_at_once(again, exit_code=1)], restart="on-failure:1")
    wait_exit(name)
    for _ in range(50):  # until the policy's restart has run and exited too
        import time

        from bootlog.read import podman

        st = podman.state(name)
        if st.restart_count >= 1 and not st.running:
            break
        time.sleep(0.2)
    res = run(db_path, "ingest", "--container", name)
    assert res.exit_code == 0, res.output
    last = shown(db_path, "last")
    [loop] = [e for e in last["events"] if e["kind"] == "crash_loop"]
    assert loop["detail"]["failed_starts"] == 2 and loop["detail"]["restart_count"] == 1
    assert last["deploy"]["restart_count"] == 1 and last["deploy"]["exit_code"] == 1


def test_systemd_s_restart_counter_in_the_unit_journal_is_the_loop_s_restart_count(db_path, tmp_path):
    # the UTIL 1.00 crash loop as `journalctl -u frank-primary -o short-iso` shows it: the
    # container's lines, and systemd's own between the two starts
    from datetime import datetime

    lines = (SEED / "05-util-1.00-crash-loop.log").read_text().splitlines()
    out = []
    for i, line in enumerate(lines):
        ts, msg = line.split(" ", 1)
        stamp = f"{datetime.fromisoformat(ts[:26]):%Y-%m-%dT%H:%M:%S}+0000 vm"
        out.append(f"{stamp} frank-primary-qwen[2345]: {msg}")
        if i + 1 < len(lines) and "Engine core initialization failed" in line and "09:53:59" in lines[i + 1]:
            out.append(f"{stamp} systemd[1]: frank-primary.service: Main process exited, code=exited, status=1/FAILURE")
            out.append(f"{stamp} systemd[1]: frank-primary.service: Scheduled restart job, restart counter is at 1.")
    journal = tmp_path / "frank-primary.journal"
    journal.write_text("\n".join(out) + "\n")
    assert run(db_path, "ingest", str(journal)).exit_code == 0
    [loop] = [e for e in shown(db_path, "last")["events"] if e["kind"] == "crash_loop"]
    assert loop["detail"]["restart_count"] == 1 and loop["detail"]["failed_starts"] == 2
    assert "restart count 1" in run(db_path, "show", "last").stdout
