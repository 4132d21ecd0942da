"""Every start of the process is its own boot, in real podman (issue 30): a replayed restart, a
crash loop under --restart=on-failure:N, watch across restarts, a run that prints no start line."""

from __future__ import annotations

import json
import re
import time

from click.testing import CliRunner

from bootlog.read import podman
from bootlog.cli import cli
from podman_util import Boot, all_at_once, fixture_log, run_podman, runtime_oom, wait_exit

SMALL = "012-v0.10.2-v1-small.log"  # v0.10.2, ready
OOM = "022-v0.13.0-oom-engine-failed.log"  # v0.13.0, fails: CUDA OOM loading weights


def run(db, *args):
    return CliRunner().invoke(cli, ["--db", str(db), *args], catch_exceptions=False)


def listed(db, name):
    return json.loads(run(db, "list", "--container", name, "--json").stdout)


def test_a_replayed_restart_is_a_second_boot_the_hook_diffs_against_the_first(replayer, db_path):
    # `podman restart` of a replay prints the same lines again: it was "first boot, nothing to
    # diff" (both runs one fingerprint, one boot)
    name = replayer.start([all_at_once(fixture_log(SMALL).read_bytes())])
    first = json.loads(run(db_path, "hook", "--container", name, "--poll", "0.2", "--format", "json").stdout)
    run_podman("restart", "-t", "0", name)
    res = run(db_path, "hook", "--container", name, "--poll", "0.2", "--format", "json")
    second = json.loads(res.stdout)
    assert res.exit_code == 0, res.output
    assert second["boot"]["id"] != first["boot"]["id"] and second["prev"] == first["boot"]["id"]
    assert second["diff"] is not None and second["diff"]["summary"]["drift"] == 0
    assert [b["id"] for b in listed(db_path, name)] == [first["boot"]["id"], second["boot"]["id"]]


def test_a_crash_loop_under_on_failure_stores_one_failed_boot_per_start(replayer, db_path):
    # --restart=on-failure:2 and a start that fails the same way each time: three starts, three
    # identical logs; it was one boot and no crash loop
    name = replayer.start([all_at_once(fixture_log(OOM).read_bytes(), exit_code=3)], restart="on-failure:2")
    deadline = time.monotonic() + 30
    while not (podman.state(name).restart_count == 2 and not podman.state(name).running):
        assert time.monotonic() < deadline, "podman did not restart it twice"
        time.sleep(0.2)
    assert run(db_path, "ingest", "--container", name).exit_code == 0
    boots = listed(db_path, name)
    assert [(b["status"], b["failure"]) for b in boots] == [("failed", "oom")] * 3
    shown = json.loads(run(db_path, "show", "last", "--json").stdout)
    (loop,) = [e for e in shown["events"] if e["kind"] == "crash_loop"]
    assert loop["detail"]["failed_starts"] == 3, loop


def test_watch_across_a_restart_files_each_run_under_its_own_boot(replayer, db_path):
    # each run boots, then its engine dies serving once the test opens its gate; the second
    # run's boot and death were filed under the first boot
    log = fixture_log(SMALL).read_bytes()
    died = runtime_oom(
        b"\x1b[1;36m(EngineCore_DP0 pid=85423)\x1b[0;0m ",
        b"09-26 05:58:00",
        b"\x1b[1;36m(APIServer pid=85301)\x1b[0;0m ",
    )
    name = replayer.start(
        [Boot().out(log).gate("die1").out(died).hold(), Boot().out(log).gate("die2").out(died).hold()]
    )

    def watch_once(code: int = 0) -> list[str]:
        res = run(db_path, "watch", "--container", name, "--once")
        assert res.exit_code == code, res.output  # (4 once it stored a death: cron hears of it)
        return [
            ln.split(f"podman:{name} ", 1)[1]
            for ln in res.stdout.splitlines()
            if not re.search(r" boot #\d+ (DRIFT|VIOLATION|FAILED): ", ln)
        ]

    def settle(deaths: int) -> None:  # (the replay's next part is written a moment after the gate)
        deadline = time.monotonic() + 15
        while b"".join(podman.logs(name)).count(b"died unexpectedly") < deaths:
            assert time.monotonic() < deadline
            time.sleep(0.1)

    deadline = time.monotonic() + 15
    while not any("boot_ready" in ln for ln in watch_once()):
        assert time.monotonic() < deadline
        time.sleep(0.2)
    replayer.open_gate(name, "die1")
    settle(1)
    assert [ln.split(" line")[0].split(":")[0] for ln in watch_once(4)] == [
        "boot #1 traceback",
        "boot #1 oom",
        "boot #1 boot_died",
    ]
    run_podman("restart", "-t", "0", name)
    deadline = time.monotonic() + 15
    while True:
        got = watch_once()
        if any("boot_ready" in ln for ln in got):
            break
        assert time.monotonic() < deadline
        time.sleep(0.2)
    assert got[0].startswith("boot #2 boot_started") and all(ln.startswith("boot #2 ") for ln in got), got
    replayer.open_gate(name, "die2")
    settle(2)
    assert [ln.split(" line")[0].split(":")[0] for ln in watch_once(4)] == [
        "boot #2 traceback",
        "boot #2 oom",
        "boot #2 boot_died",
    ]
    assert [(b["id"], b["status"], b["failure"]) for b in listed(db_path, name)] == [
        (1, "ready", "oom"),
        (2, "ready", "oom"),
    ]  # one boot per start, no phantom incomplete one


def test_a_run_that_prints_no_start_line_is_a_boot_of_its_own(replayer, db_path):
    # the second start crashes at import: a bare traceback, no banner, no vLLM prefix.  Only the
    # engine's init/died events say it is another run; it was filed under the first boot
    crash = (
        b"Traceback (most recent call last):\n"
        b'  File "/usr/local/bin/vllm", line 5, in <module>\n'
        b"    from vllm.entrypoints.cli.main import main\n"
        b"ImportError: libcuda.so.1: cannot open shared object file: No such file or directory\n"
    )
    name = replayer.start([all_at_once(fixture_log(SMALL).read_bytes(), exit_code=0), Boot().err(crash).exit(1)])
    wait_exit(name)
    replayer.restart(name)
    wait_exit(name)
    assert run(db_path, "ingest", "--container", name).exit_code == 0
    boots = listed(db_path, name)
    assert [(b["status"], b["failure"] is None) for b in boots] == [("ready", True), ("failed", False)]
    assert boots[1]["failure_message"].startswith("ImportError: libcuda.so.1")
    assert run(db_path, "diff").exit_code == 4


def test_the_exit_code_is_stored_when_the_run_ends(replayer, db_path):
    # the seeds' lesson: the engine died serving, the API server exited 0, so on-failure never
    # fired.  The hook stores the boot at ready (the run goes on: no exit code yet); watch and
    # ingest store the code once the run has ended, and keep it after the next run began
    log = fixture_log(SMALL).read_bytes()
    died = runtime_oom(
        b"\x1b[1;36m(EngineCore_DP0 pid=85423)\x1b[0;0m ",
        b"09-26 05:58:00",
        b"\x1b[1;36m(APIServer pid=85301)\x1b[0;0m ",
    )
    # (its last lines a moment before the exit: the watch reads them while the run still goes
    # on, and nothing after; the exit alone must reach the store)
    name = replayer.start([Boot().out(log).gate("die").out(died).sleep(1.0).exit(0), all_at_once(log)])
    hooked = json.loads(run(db_path, "hook", "--container", name, "--poll", "0.2", "--format", "json").stdout)
    assert hooked["deploy"]["exit_code"] is None and hooked["deploy"]["status"] == "running"
    # a watch that follows the run from before its end to after it (it asked the engine once per
    # boot: the running state stayed stored)
    import threading

    from bootlog.store.db import open_store
    from bootlog.run.watch import ContainerTail, watch

    done, said = threading.Event(), []
    t = threading.Thread(
        target=watch,
        args=(open_store(db_path), ContainerTail(name)),
        kwargs={"poll": 0.2, "emit": said.append, "stop": done.is_set},
        daemon=True,
    )
    t.start()
    deadline = time.monotonic() + 15
    time.sleep(0.5)  # (its first reads: the boot the hook stored, nothing new to say)
    replayer.open_gate(name, "die")
    assert wait_exit(name) == 0
    while not any("boot_died" in ln for ln in said):
        assert time.monotonic() < deadline, said
        time.sleep(0.1)
    time.sleep(0.6)  # (a few polls after the exit)
    done.set()
    t.join(15)
    first = json.loads(run(db_path, "show", "1", "--json").stdout)
    assert (first["boot"]["failure"], first["deploy"]["exit_code"]) == ("oom", 0)
    assert first["deploy"]["image"] == hooked["deploy"]["image"]  # (the hook's context kept)
    replayer.restart(name)  # (as systemd's Restart=always would)
    deadline = time.monotonic() + 15
    while len(listed(db_path, name)) < 2:
        assert run(db_path, "ingest", "--container", name).exit_code == 0
        assert time.monotonic() < deadline
        time.sleep(0.2)
    first = json.loads(run(db_path, "show", "1", "--json").stdout)
    assert first["deploy"]["exit_code"] == 0 and first["deploy"]["status"] in ("exited", "stopped")
