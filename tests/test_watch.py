"""`bootlog watch`: incremental, restart-safe following of a real podman container and of a
growing file."""

from __future__ import annotations

import json
import sqlite3
import sys
import threading
import time

import pytest
from click.testing import CliRunner

from bootlog.read import podman
from bootlog.cli import cli
from podman_util import Boot, fixture_log, run_podman, runtime_oom, until_ready, wait_exit
from test_podman_hook import SMALL, second_boot

MULTI = "014-v0.10.2-nohup-multiboot.log"  # two boots: failed (value_error), then ready

# 012's own process prefixes, so the appended OOM reads as that server's EngineCore/APIServer
OOM_012 = runtime_oom(
    b"\x1b[1;36m(EngineCore_DP0 pid=85423)\x1b[0;0m ", b"09-26 05:58:00", b"\x1b[1;36m(APIServer pid=85301)\x1b[0;0m "
)


def watch(db, *args, input=None):
    return CliRunner().invoke(
        cli, ["--db", str(db), "watch", "--poll", "0.2", *args], catch_exceptions=False, input=input
    )


def rows(db, sql):
    with sqlite3.connect(db) as con:
        return con.execute(sql).fetchall()


def wait_for_log(name: str, needle: bytes, timeout: float = 20) -> None:
    deadline = time.monotonic() + timeout
    while needle not in b"".join(podman.logs(name)):
        assert time.monotonic() < deadline, f"{needle!r} never appeared in {name}'s log"
        time.sleep(0.1)


def test_watch_once_stores_boots_and_runtime_oom_on_the_right_boot(replayer, db_path):
    log = fixture_log(SMALL).read_bytes()
    head, rest = until_ready(log)
    name = replayer.start(
        [
            Boot().out(head).out(rest).gate("oom").out(OOM_012).exit(1),  # ready, then dies at runtime
            Boot().out(second_boot(log)).hold(),  # the restart
        ]
    )
    wait_for_log(name, b"Application startup complete.")

    first = watch(db_path, "--container", name, "--once")
    assert first.exit_code == 0, first.output
    lines = first.stdout.splitlines()
    assert any(" boot #1 boot_started line 1:" in ln for ln in lines)
    assert any(" boot #1 boot_ready" in ln for ln in lines)
    assert not any(" oom " in ln for ln in lines)  # not written yet

    replayer.open_gate(name, "oom")
    wait_exit(name)
    second = watch(db_path, "--container", name, "--once")
    oom = [ln for ln in second.stdout.splitlines() if " oom " in ln]
    assert len(oom) == 1 and " boot #1 oom " in oom[0] and "Tried to allocate 50.00 MiB" in oom[0]
    assert "boot_started" not in second.stdout  # boot #1 was announced already
    # the engine died serving: the endpoint is down, said once as its own event
    died = [ln for ln in second.stdout.splitlines() if " boot_died" in ln]
    assert len(died) == 1 and " boot #1 boot_died: torch.OutOfMemoryError" in died[0]

    replayer.restart(name)
    wait_for_log(name, b"420,100 tokens")
    third = watch(db_path, "--container", name, "--once")
    assert " boot #2 boot_started" in third.stdout and " boot #2 boot_ready" in third.stdout
    assert " boot #1 " not in third.stdout

    # a fourth run (a restarted watch) finds nothing new and stores nothing twice
    again = watch(db_path, "--container", name, "--once")
    assert again.exit_code == 0 and again.stdout == ""
    assert rows(db_path, "select count(*) from boots") == [(2,)]
    events = rows(db_path, "select b.id, e.kind from events e join boots b on b.id = e.boot_id where e.kind = 'oom'")
    assert events == [(1, "oom")]
    shown = json.loads(CliRunner().invoke(cli, ["--db", db_path, "show", "1", "--json"]).stdout)
    oom_ev = [e for e in shown["events"] if e["kind"] == "oom"][0]
    assert oom_ev["detail"]["requested_mib"] == 50.0 and oom_ev["detail"]["free_mib"] == 0.0
    assert oom_ev["line"] > shown["boot"]["first_line"]
    assert shown["runtime"]["stats_lines"] == log.count(b"Avg prompt throughput") == 4
    assert shown["runtime"]["max"]["prefix_cache_hit_rate_pct"] == 47.4
    kv = {
        r[0]: r[1]
        for r in rows(
            db_path,
            "select b.id, m.value from metrics m join boots b on b.id = m.boot_id where m.name = 'kv_cache_tokens'",
        )
    }
    assert kv == {1: 433456, 2: 420100}


def test_watch_follows_a_container_live_across_a_restart(replayer, db_path, tmp_path):
    from bootlog.store.db import open_store
    from bootlog.run.watch import ContainerTail
    from bootlog.run.watch import watch as follow

    log = fixture_log(SMALL).read_bytes()
    head, rest = until_ready(log)
    name = replayer.start(
        [
            Boot().slowly(head, pieces=3, pause=0.3).out(rest).sleep(0.5).out(OOM_012).exit(1),
            Boot().slowly(second_boot(log), pieces=2, pause=0.3).hold(),
        ]
    )
    seen: list[str] = []
    stop = threading.Event()
    events_file = tmp_path / "events.jsonl"
    hook_cmd = f"{sys.executable} -c \"import sys; open({str(events_file)!r}, 'a').write(sys.stdin.read() + chr(10))\""

    def run():
        follow(
            open_store(db_path), ContainerTail(name), poll=0.2, emit=seen.append, stop=stop.is_set, on_event=hook_cmd
        )

    t = threading.Thread(target=run, daemon=True)
    t.start()
    try:
        wait_exit(name)
        replayer.restart(name)
        deadline = time.monotonic() + 30
        while not any(" boot #2 boot_ready" in s for s in seen):
            assert time.monotonic() < deadline and t.is_alive(), seen
            time.sleep(0.1)
    finally:
        stop.set()
        t.join(10)
    kinds = [[w.rstrip(":") for w in s.split(" boot #", 1)[1].split()[:2]] for s in seen]
    assert ["1", "boot_started"] in kinds and ["1", "oom"] in kinds and ["1", "boot_ready"] in kinds
    assert ["2", "boot_started"] in kinds and ["2", "oom"] not in kinds
    assert len(seen) == len(set(seen))  # each event once
    stored = rows(db_path, "select id, first_line from boots order by id")
    assert [r[0] for r in stored] == [1, 2] and stored[0][1] == 1
    # --on-event got every event as JSON on stdin
    got = [json.loads(ln) for ln in events_file.read_text().splitlines()]
    assert [(g["boot_id"], g["kind"]) for g in got] == [(int(k[0]), k[1]) for k in kinds]
    assert all(g["container"] == name for g in got)


def test_each_event_is_delivered_once_across_a_container_restart_between_watches(replayer, db_path, tmp_path):
    # watch stopped, the container restarted by its unit, watch started again: boot 1's events
    # (started, ready, the runtime OOM) were delivered before and are not delivered again
    log = fixture_log(SMALL).read_bytes()
    name = replayer.start([Boot().out(log).out(OOM_012).exit(1), Boot().out(second_boot(log)).hold()])
    wait_exit(name)
    events = tmp_path / "events.jsonl"
    cmd = f"{sys.executable} -c \"import sys; open({str(events)!r}, 'a').write(sys.stdin.read() + chr(10))\""
    first = watch(db_path, "--container", name, "--once", "--on-event", cmd)
    assert " boot #1 oom" in first.stdout
    replayer.restart(name)
    wait_for_log(name, b"420,100 tokens")
    second = watch(db_path, "--container", name, "--once", "--on-event", cmd)
    assert " boot #2 boot_started" in second.stdout and " boot #1 " not in second.stdout
    assert watch(db_path, "--container", name, "--once", "--on-event", cmd).stdout == ""
    got = [json.loads(ln) for ln in events.read_text().splitlines()]
    keys = [(g["boot_id"], g["kind"], g["line"], g["rank"]) for g in got]
    assert len(keys) == len(set(keys)) and {k[0] for k in keys} == {1, 2}


@pytest.mark.parametrize("batch", [8 << 20, 2048])  # one read, and many small batches
def test_watch_file_matches_a_plain_ingest_and_survives_restarts(tmp_path, db_path, monkeypatch, batch):
    import bootlog.run.watch

    monkeypatch.setattr(bootlog.run.watch, "BATCH", batch)
    log = fixture_log(MULTI).read_bytes()
    path = tmp_path / "server.log"
    lines = log.split(b"\n")
    cut1, cut2 = len(lines) // 3, 2 * len(lines) // 3
    path.write_bytes(b"\n".join(lines[:cut1]) + b"\n")
    out = [watch(db_path, "--file", str(path), "--once").stdout]
    with open(path, "ab") as f:
        f.write(b"\n".join(lines[cut1:cut2]) + b"\n")
    out.append(watch(db_path, "--file", str(path), "--once").stdout)
    with open(path, "ab") as f:
        f.write(b"\n".join(lines[cut2:]))
    out.append(watch(db_path, "--file", str(path), "--once").stdout)
    out.append(watch(db_path, "--file", str(path), "--once").stdout)
    assert out[-1] == ""
    watched = rows(db_path, "select status, failure, first_line, last_line from boots order by id")

    ref = str(tmp_path / "ref.db")
    assert CliRunner().invoke(cli, ["--db", ref, "ingest", str(path)]).exit_code == 0
    assert watched == rows(ref, "select status, failure, first_line, last_line from boots order by id")
    for sql in (
        "select b.first_line, e.kind, e.line, e.message from events e join boots b on b.id = e.boot_id "
        "order by 1, 3, 2",
        "select b.first_line, m.name, m.value, m.line from metrics m join boots b on b.id = m.boot_id order by 1, 4, 2",
        "select sum(n) from sample_chunks",
    ):
        assert rows(db_path, sql) == rows(ref, sql)
    assert [w[0] for w in watched] == ["failed", "ready"]
    text = "".join(out)
    assert text.count("boot_started") == 2 and text.count("boot_failed") == 1
    assert "value_error" in text


@pytest.mark.parametrize(
    "name, cuts",
    [
        # two servers in one nohup.out: the older one (line 207) finishes starting after the newer
        # one (line 236) began; a re-read from the newer one's start alone left the older one
        # "incomplete" and gave its later lines to the newer one, stored ready instead of failed
        ("053-dev-build-nohup-8-boots.log", [40085, 75759, 84326]),
        # the file cut inside its first line: the half line was counted, every line after was off by one
        ("048-v0.25.1-dgx-spark-engine-failed.log", [59, 4334, 28555]),
    ],
)
def test_watch_of_a_file_copied_at_random_bytes_stores_one_ingest(tmp_path, db_path, name, cuts):
    # (cuts a random trial found: fixtures grown at 3 random bytes, `watch --once` after each)
    data = fixture_log(name).read_bytes()
    path = tmp_path / "server.log"
    done = 0
    for cut in cuts + [len(data)]:
        with open(path, "ab") as f:
            f.write(data[done:cut])
        done = cut
        watch(db_path, "--file", str(path), "--once")
    ref = str(tmp_path / "ref.db")
    assert CliRunner().invoke(cli, ["--db", ref, "ingest", str(path)]).exit_code == 0
    for sql in (
        "select status, failure, first_line, last_line, ready_at from boots order by first_line",
        "select b.first_line, e.kind, e.line from events e join boots b on b.id = e.boot_id order by 1, 3, 2",
        "select b.first_line, m.name, m.value, m.line from metrics m join boots b on b.id = m.boot_id order by 1, 4, 2",
    ):
        assert rows(db_path, sql) == rows(ref, sql)


def test_watch_errors_are_one_clear_line(podman_ready, db_path, tmp_path):
    res = watch(db_path, "--container", "bl-never-created", "--once")
    assert (res.exit_code, res.stderr) == (1, "bootlog: no such container: bl-never-created\n")
    res = watch(db_path, "--file", str(tmp_path / "nope.log"), "--once")
    assert res.exit_code == 1 and res.stderr.startswith("bootlog: no such file: ")
    res = watch(db_path, "--once")
    assert res.exit_code == 2


def test_watch_follows_a_container_recreated_under_the_same_name(replayer, db_path):
    """The operator's deploy: `podman rm -f NAME` then `podman run --name NAME` (a new log)."""
    log = fixture_log(SMALL).read_bytes()
    name = replayer.start([Boot().out(log).hold()])
    wait_for_log(name, b"Application startup complete.")
    first = watch(db_path, "--container", name, "--once")
    assert " boot #1 boot_ready" in first.stdout
    run_podman("rm", "-f", "-t", "0", name)
    replayer.names.remove(name)
    replayer.start([Boot().out(second_boot(log)).hold()], name=name)
    wait_for_log(name, b"Application startup complete.")
    second = watch(db_path, "--container", name, "--once")
    assert " boot #2 boot_started" in second.stdout and " boot #1 " not in second.stdout
    assert watch(db_path, "--container", name, "--once").stdout == ""
    kv = rows(
        db_path,
        "select b.id, m.value from metrics m join boots b on b.id = m.boot_id "
        "where m.name = 'kv_cache_tokens' order by b.id",
    )
    assert kv == [(1, 433456), (2, 420100)]


def test_a_boot_watched_while_starting_is_the_boot_the_hook_reports(replayer, db_path):
    """watch stores a boot early (its fingerprint still moving); the hook must update that
    boot, not store a second copy."""
    log = fixture_log(SMALL).read_bytes()
    cut = log.index(b"GPU KV cache size")
    name = replayer.start([Boot().out(log[:cut]).gate("rest").out(log[cut:]).hold()])
    wait_for_log(name, b"Initializing a V1 LLM engine")
    early = watch(db_path, "--container", name, "--once")
    assert " boot #1 boot_started" in early.stdout and "boot_ready" not in early.stdout
    replayer.open_gate(name, "rest")
    res = CliRunner().invoke(
        cli, ["--db", db_path, "hook", "--container", name, "--poll", "0.2", "--format", "json"], catch_exceptions=False
    )
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout)["boot"]["id"] == 1
    later = watch(db_path, "--container", name, "--once")
    assert "boot_started" not in later.stdout
    assert rows(db_path, "select id, status from boots") == [(1, "ready")]


def test_on_event_failures_are_reported_on_stderr_and_watch_goes_on(tmp_path, db_path):
    path = tmp_path / "server.log"
    path.write_bytes(fixture_log(SMALL).read_bytes())
    res = watch(db_path, "--file", str(path), "--once", "--on-event", f"{sys.executable} -c 'raise SystemExit(7)'")
    assert res.exit_code == 0
    assert " boot #1 boot_ready" in res.stdout  # every event still printed and stored
    errs = res.stderr.splitlines()
    assert errs and all(e.startswith("bootlog: on-event command ") and "exited 7" in e for e in errs)
    assert len(errs) == len(res.stdout.splitlines())


def test_watch_file_starts_over_on_a_rotated_or_truncated_file(tmp_path, db_path):
    log = fixture_log(SMALL).read_bytes()
    path = tmp_path / "server.log"
    path.write_bytes(log)
    assert " boot #1 boot_ready" in watch(db_path, "--file", str(path), "--once").stdout
    path.write_bytes(second_boot(log)[:1000])  # truncated in place and rewritten (shorter)
    assert " boot #2 boot_started line 1:" in watch(db_path, "--file", str(path), "--once").stdout
    path.rename(tmp_path / "server.log.1")  # rotated: a new file, longer than the old position
    third = second_boot(log).replace(b"pid=91301", b"pid=93301").replace(b"09-26 07:", b"09-26 08:")
    fourth = second_boot(log).replace(b"pid=91301", b"pid=94301").replace(b"09-26 07:", b"09-26 09:")
    path.write_bytes(third + fourth)
    out = watch(db_path, "--file", str(path), "--once").stdout
    assert out.count("boot_started line ") == 2 and " line 1:" in out
    assert rows(db_path, "select count(*) from boots") == [(4,)]


def test_live_watch_follows_a_file_through_rotation(tmp_path, db_path):
    from bootlog.store.db import open_store
    from bootlog.run.watch import FileTail
    from bootlog.run.watch import watch as follow

    log = fixture_log(SMALL).read_bytes()
    path = tmp_path / "server.log"
    path.write_bytes(log)
    seen: list[str] = []
    stop = threading.Event()
    t = threading.Thread(
        target=lambda: follow(open_store(db_path), FileTail(str(path)), poll=0.1, emit=seen.append, stop=stop.is_set),
        daemon=True,
    )
    t.start()

    def wait_for(text: str) -> None:
        deadline = time.monotonic() + 20
        while not any(text in s for s in seen):
            assert time.monotonic() < deadline and t.is_alive(), seen
            time.sleep(0.05)

    try:
        wait_for(" boot #1 boot_ready")
        path.rename(tmp_path / "server.log.1")
        path.write_bytes(second_boot(log) + b"\n" * len(log))  # longer than the old position
        wait_for(" boot #2 boot_ready")
    finally:
        stop.set()
        t.join(10)
    assert any(" boot #2 boot_started line 1:" in s for s in seen)
    assert rows(db_path, "select id, first_line from boots order by id") == [(1, 1), (2, 1)]


@pytest.mark.parametrize("cut", [252, 253, 300])
def test_watch_keeps_a_logo_boot_whose_first_line_holds_no_literal(tmp_path, db_path, cut):
    # a v0.15+ boot starts at the logo's empty first line, which the scanner never keeps: the
    # watch position must still be the boot's own, so the runtime OOM after ready lands on it
    from paths import FIXTURES

    lines = (FIXTURES / "seed" / "07-5x262144-runtime-oom.log").read_bytes().split(b"\n")
    path = tmp_path / "server.log"
    path.write_bytes(b"\n".join(lines[:cut]) + b"\n")
    out = watch(db_path, "--file", str(path), "--once").stdout
    with open(path, "ab") as f:
        f.write(b"\n".join(lines[cut:]))
    out += watch(db_path, "--file", str(path), "--once").stdout
    ref = str(tmp_path / "ref.db")
    assert CliRunner().invoke(cli, ["--db", ref, "ingest", str(path)]).exit_code == 0
    sql = "select status, failure, first_line, last_line, vllm_version from boots order by id"
    assert rows(db_path, sql) == rows(ref, sql) and len(rows(ref, sql)) == 1
    assert rows(db_path, sql)[0][:2] == ("ready", "oom")
    assert out.count("boot_started") == 1 and out.count("boot_died") == 1


def test_on_event_json_has_no_nan(tmp_path, db_path):
    # a fault line printed with limit=nan (the fork prints the float as it is): the event reaches
    # the --on-event command as strict JSON, the figure as null, as show --json stores it
    from paths import FIXTURES

    log = tmp_path / "nan.log"
    log.write_bytes(
        (FIXTURES / "016-v0.11.0-energy.log").read_bytes()
        + b"[gdn_hip] ERROR gdn_decode_r: state out of ssm-cache range: max|S|=0 with non-finite "
        b"values (slot=42 head=3 limit=nan) fault #1\n"
    )
    out = tmp_path / "ev.jsonl"
    cmd = f"{sys.executable} -c \"import sys; open({str(out)!r}, 'a').write(sys.stdin.read() + '\\n')\""
    # (exit 4: a gdn_hip state fault is a failed deploy, verdict.py)
    assert watch(db_path, "--file", str(log), "--once", "--on-event", cmd).exit_code == 4
    text = out.read_text()
    assert "NaN" not in text and "Infinity" not in text
    evs = [json.loads(x) for x in text.splitlines() if x.strip()]
    fault = [e for e in evs if e.get("kind") == "gdn_hip_fault"]
    assert fault and fault[0]["detail"].get("limit", None) is None


def test_watch_prints_a_boots_events_in_log_order(tmp_path, db_path):
    # seed 08: ready at line 231, the gdn_hip burst hours later: read in one batch, ready first
    from paths import FIXTURES

    res = watch(db_path, "--file", str(FIXTURES / "seed" / "08-gdn-hip-burst-prefix-caching.log"), "--once")
    kinds = [line.split(" boot #1 ", 1)[1].split()[0].rstrip(":") for line in res.stdout.splitlines()]
    assert kinds.index("boot_ready") < kinds.index("gdn_hip_fault")
    # (the burst of 32 is one line: test_watch_once.py)
    assert kinds[0] == "boot_started" and kinds.count("gdn_hip_fault") == 1


def test_two_hosts_watching_the_same_path_keep_their_own_positions(tmp_path, db_path):
    # one database for a fleet: hostB's watch of /var/log/vllm.log is not hostA's
    log = tmp_path / "vllm.log"
    log.write_bytes(fixture_log(SMALL).read_bytes())
    assert watch(db_path, "--file", str(log), "--once", "--host", "hostA").exit_code == 0
    out = watch(db_path, "--file", str(log), "--once", "--host", "hostB").stdout
    assert "boot_started" in out  # (read from its own start: it resumed at hostA's end, silent)
    keys = sorted(k for (k,) in rows(db_path, "select source_key from positions where source_key like 'watch:%'"))
    assert len(keys) == 2 and keys[0].endswith("|host:hostA") and keys[1].endswith("|host:hostB")


def test_a_watch_position_stored_before_hosts_counted_still_resumes(tmp_path, db_path):
    log = tmp_path / "vllm.log"
    log.write_bytes(fixture_log(SMALL).read_bytes())
    assert "boot_started" in watch(db_path, "--file", str(log), "--once").stdout
    with sqlite3.connect(db_path) as con:  # the key as earlier versions wrote it
        con.execute(
            "UPDATE positions SET source_key = substr(source_key, 1, instr(source_key, '|host:') - 1) "
            "WHERE source_key LIKE 'watch:%'"
        )
    with open(log, "ab") as f:
        f.write(OOM_012)
    out = watch(db_path, "--file", str(log), "--once").stdout
    assert "boot_started" not in out and "boot_died" in out


def _boot_rows(db) -> list[tuple]:
    return rows(db, "select status, failure, vllm_version, first_line, last_line from boots order by id")


def test_a_file_emptied_and_written_past_the_old_offset_between_polls_is_read_from_its_top(tmp_path, db_path):
    # `: > nohup.out` and a restart writing more than was read before the next poll (logrotate's
    # copytruncate with a fast writer): the size alone says nothing; the head says it is another
    # file (a bogus failed boot of version ? "at line 100" was stored, the new boot never)
    from bootlog.store.db import open_store
    from bootlog.run.watch import FileTail
    from bootlog.run.watch import watch as follow

    first, second = fixture_log(SMALL).read_bytes(), fixture_log(MULTI).read_bytes()
    assert len(second) > len(first)
    path = tmp_path / "nohup.out"
    path.write_bytes(first)
    polls = 0

    def stop() -> bool:
        nonlocal polls
        polls += 1
        if polls == 2:
            with open(path, "r+b") as f:
                f.truncate(0)
            with open(path, "ab") as f:
                f.write(second)
        return polls > 3

    follow(open_store(db_path), FileTail(str(path)), poll=0.01, emit=lambda _: None, stop=stop)
    want = tmp_path / "want.db"
    for data, name in ((first, "a.log"), (second, "b.log")):
        (tmp_path / name).write_bytes(data)
        # (MULTI's first boot failed at start: exit 4, as cron should hear of it)
        assert watch(want, "--file", str(tmp_path / name), "--once").exit_code == (0 if data is first else 4)
    assert _boot_rows(db_path) == _boot_rows(want)
    assert [r[0] for r in _boot_rows(db_path)] == ["ready", "failed", "ready"]


@pytest.mark.parametrize("kind", ["fifo", "/dev/zero"])
def test_watch_of_a_fifo_or_a_device_is_one_line_not_a_hang(tmp_path, db_path, kind):
    # a FIFO with no writer waited forever in open(); /dev/zero was read without end (and held:
    # memory grew with it): neither is a log file that grows, with an offset to come back to
    import os

    path = "/dev/zero" if kind == "/dev/zero" else str(tmp_path / "pipe")
    if kind == "fifo":
        os.mkfifo(path)
    t0 = time.monotonic()
    res = subprocess_watch(db_path, path)
    assert time.monotonic() - t0 < 10
    assert res.returncode == 1 and res.stderr.decode().strip() == (
        f"bootlog: {path} is not a regular file: watch --file follows a log file that grows; read a pipe or a "
        f"device once with: bootlog ingest {path}"
    )


def subprocess_watch(db_path, path):
    import subprocess

    return subprocess.run(
        [sys.executable, "-m", "bootlog.cli", "--db", str(db_path), "watch", "--once", "--file", path],
        capture_output=True,
        timeout=20,
    )


def test_a_child_an_on_event_command_leaves_running_does_not_stall_watch(tmp_path, db_path):
    # `sh -c "sleep 30 & exit 0"`: watch waited for the grandchild to close the stderr pipe it
    # inherited, up to the 60 s timeout per event; only the command itself is waited for now
    path = tmp_path / "server.log"
    path.write_bytes(fixture_log(SMALL).read_bytes())
    got = tmp_path / "events.jsonl"
    cmd = f"sh -c 'cat >> {got}; sleep 4 & exit 0'"
    t0 = time.monotonic()
    res = watch(db_path, "--file", str(path), "--once", "--on-event", cmd)
    took = time.monotonic() - t0
    assert res.exit_code == 0 and res.stderr == ""
    n = len(res.stdout.splitlines())
    assert n >= 2 and got.read_text().count('{"boot_id": ') == n  # every event handed over
    assert took < 3, took


def test_an_on_event_command_that_hangs_is_stopped_with_what_it_started(tmp_path, db_path, monkeypatch):
    from bootlog.run import watch as w

    monkeypatch.setattr(w, "ON_EVENT_TIMEOUT_S", 0.5)
    marker = tmp_path / "late"
    said: list[str] = []
    t0 = time.monotonic()
    w._run_hook_cmd(f"sh -c '(sleep 1; touch {marker}) & sleep 30'", {"kind": "x"}, said.append)
    assert time.monotonic() - t0 < 1
    assert said == ["on-event command 'sh' failed: still running after 0.5 s: stopped"]
    time.sleep(1.5 - (time.monotonic() - t0))
    assert not marker.exists()  # its child was stopped with it
