"""bootlog.read.podman against real podman 4.3.1 (private store, see tests/podman_util.py)."""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest

from bootlog.read import podman
from bootlog.errors import SourceError
from podman_util import Boot, all_at_once, fixture_log, wait_exit

STAMP = re.compile(rb"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{9}Z ", re.M)


# ------------------------------------------------------------------ time spellings (no podman)


def test_parse_time_reads_every_spelling_podman_prints():
    # verbatim from podman.md: inspect's Go spelling, events' RFC 3339, logs' 9-digit Z stamp
    go = podman.parse_time("2026-11-29 14:25:24.814971381 +0000 UTC")
    rfc = podman.parse_time("2026-11-29T14:25:24.814971381Z")
    assert go == rfc
    assert podman.parse_time("2026-11-29T15:41:51.18114491Z") == rfc - 814971381 + 181144910 + 10**9 * (
        (15 - 14) * 3600 + (41 - 25) * 60 + (51 - 24)
    )
    assert podman.parse_time("2026-11-29T14:25:24.814971381+01:00") == rfc - 3600 * 10**9
    assert podman.parse_time("0001-01-01T00:00:00Z") is None
    assert podman.format_time(rfc) == "2026-11-29T14:25:24.814971381Z"
    assert podman.parse_time(podman.format_time(rfc + 1)) == rfc + 1


def test_cursor_round_trips_through_its_text_form():
    cur = podman.Cursor(1764426324814971381, 3)
    assert podman.Cursor.decode(cur.encode()) == cur
    assert podman.Cursor.decode(None) == podman.Cursor()


# ------------------------------------------------------------------ errors


def test_missing_binary_is_one_clear_error(monkeypatch):
    monkeypatch.setenv("PATH", "/nonexistent")
    monkeypatch.delenv("BOOTLOG_PODMAN", raising=False)
    with pytest.raises(SourceError, match=r"^podman not found on PATH$"):
        list(podman.logs("anything"))
    monkeypatch.setenv("BOOTLOG_PODMAN", "/opt/none/podman")
    with pytest.raises(SourceError, match=r"^podman \(/opt/none/podman\) not found on PATH$"):
        podman.inspect("anything")


def test_missing_container_is_one_clear_error(podman_ready):
    for call in (
        lambda: list(podman.logs("bl-no-such-ctr")),
        lambda: podman.inspect("bl-no-such-ctr"),
        lambda: podman.read_new("bl-no-such-ctr", podman.Cursor()),
    ):
        with pytest.raises(SourceError, match=r"^no such container: bl-no-such-ctr$"):
            call()


# ------------------------------------------------------------------ logs


def test_logs_merge_stdout_and_stderr_in_time_order(replayer):
    boot = Boot()
    for i in range(3):
        boot.out(f"out {i}\n".encode()).sleep(0.05).err(f"err {i}\n".encode()).sleep(0.05)
    name = replayer.start([boot.exit(0)], attach=True)
    data = b"".join(podman.logs(name))
    lines = data.splitlines()
    assert [STAMP.sub(b"", ln) for ln in lines] == [b"out 0", b"err 0", b"out 1", b"err 1", b"out 2", b"err 2"]
    stamps = [podman.ts_ns(podman.TS_RE.match(ln)) for ln in lines]
    assert stamps == sorted(stamps)
    assert b"".join(podman.logs(name, timestamps=False)) == b"out 0\nerr 0\nout 1\nerr 1\nout 2\nerr 2\n"


def test_logs_give_back_a_corpus_log_byte_for_byte(replayer):
    log = fixture_log("022-v0.13.0-oom-engine-failed.log").read_bytes()
    # plus a 20 KB line: conmon splits it into 8 KiB P records, each stamped by `logs -t`
    long_line = b"long:" + b"A" * 20000 + b":END\n"
    name = replayer.start([all_at_once(log + long_line, exit_code=1)], attach=True)
    stamped = b"".join(podman.logs(name))
    assert len(STAMP.findall(stamped)) == log.count(b"\n") + 1
    assert b"".join(podman.logs(name, timestamps=False)) == log + long_line


def test_since_is_exclusive_and_until_bounds(replayer):
    name = replayer.start(
        [Boot().out(b"one\n").sleep(0.3).out(b"two\n").sleep(0.3).out(b"three\n").exit(0)], attach=True
    )
    lines = b"".join(podman.logs(name)).splitlines()
    t2 = podman.ts_ns(podman.TS_RE.match(lines[1]))
    assert b"".join(podman.logs(name, since=t2, timestamps=False)) == b"three\n"
    assert b"".join(podman.logs(name, since=t2 - 1, timestamps=False)) == b"two\nthree\n"
    assert b"".join(podman.logs(name, until=t2, timestamps=False)) == b"one\n"


def test_read_new_polls_a_growing_log_without_loss_or_duplicates(replayer):
    log = fixture_log("012-v0.10.2-v1-small.log").read_bytes()
    name = replayer.start([Boot().slowly(log, pieces=4, pause=0.4).exit(0), Boot().out(b"second boot line\n").exit(0)])
    got, cursor, polls = b"", podman.Cursor(), 0
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        st = podman.state(name)
        new, cursor = podman.read_new(name, cursor, final=not st.running)
        got += new
        polls += 1
        if not st.running:
            break
        time.sleep(0.1)
    assert polls > 3  # it really polled a growing log
    replayer.restart(name)
    wait_exit(name)
    new, cursor = podman.read_new(name, cursor, final=True)
    got += new
    assert STAMP.sub(b"", got) == log + b"second boot line\n"
    # a poll with nothing new returns nothing and keeps the cursor
    assert podman.read_new(name, cursor, final=True) == (b"", cursor)


# ------------------------------------------------------------------ inspect, events


def test_inspect_state_and_events_mark_each_boot(replayer):
    name = replayer.start([all_at_once(b"boot one\n", exit_code=3), all_at_once(b"boot two\n", exit_code=0)])
    t0 = time.time_ns() - 5 * 10**9
    assert wait_exit(name) == 3
    first = podman.state(name)
    assert (first.running, first.exit_code, first.status) == (False, 3, "exited")
    replayer.restart(name)
    wait_exit(name)
    second = podman.state(name)
    assert second.id == first.id and second.exit_code == 0
    assert second.started_at > first.started_at
    info = podman.inspect(name)
    assert info["Id"] == second.id and info["State"]["Status"] == "exited"

    evs = podman.events(name, since=t0)
    inits = [e["time_ns"] for e in evs if e["status"] == "init"]
    dieds = [e["time_ns"] for e in evs if e["status"] == "died"]
    assert len(inits) == 2 and len(dieds) == 2
    # docs/podman.md: every record of boot N is later than boot N's init and boot N-1's died
    lines = b"".join(podman.logs(name)).splitlines()
    stamps = [podman.ts_ns(podman.TS_RE.match(ln)) for ln in lines]
    assert inits[0] < stamps[0] < dieds[0] < inits[1] < stamps[1] < dieds[1]
    assert b"".join(podman.logs(name, since=inits[1], timestamps=False)) == b"boot two\n"


def test_read_batches_cut_a_long_log_at_line_ends_and_lose_nothing(replayer):
    log = fixture_log("022-v0.13.0-oom-engine-failed.log").read_bytes()
    name = replayer.start([all_at_once(log, exit_code=0)], attach=True)
    whole, end = podman.read_new(name, podman.Cursor(), final=True)
    batches = list(podman.read_batches(name, podman.Cursor(), final=True, batch=4096))
    assert len(batches) > 5
    assert all(data.endswith(b"\n") for data, _ in batches[:-1])
    assert b"".join(data for data, _ in batches) == whole
    assert batches[-1][1] == end
    # resuming from any batch's cursor gives exactly the rest
    for i in (0, len(batches) // 2):
        rest, _ = podman.read_new(name, batches[i][1], final=True)
        assert rest == b"".join(data for data, _ in batches[i + 1 :])


def test_a_stream_ending_without_newline_is_not_glued_to_the_other(replayer):
    # docs/podman.md's restart sample: each boot ends stdout with a partial line, then writes stderr
    boots = [
        Boot().out(f"boot up {i}\n".encode()).out(b"tail-no-newline").sleep(0.05).err(b"boot err\n").exit(0)
        for i in range(2)
    ]
    name = replayer.start(boots, attach=True)
    replayer.restart(name)
    wait_exit(name)
    text = b"".join(podman.logs(name, timestamps=False))
    # podman itself glues stdout's partial line to the next stdout record (the next boot's
    # first line; that line sorts by its first stamp); the last partial line is followed by a
    # stderr record, which starts a line of its own instead of being glued to it
    assert text == b"boot up 0\ntail-no-newlineboot up 1\nboot err\ntail-no-newline\nboot err\n"


# ------------------------------------------------------------------ an engine that hangs


def _hanging_engine(tmp_path, monkeypatch, body: str):
    """A stand-in engine: `body` (sh) runs for every command; its sleeps note their pids."""
    script = tmp_path / "podman"
    script.write_text(f"#!/bin/sh\n{body}\n")
    script.chmod(0o755)
    monkeypatch.setenv("BOOTLOG_PODMAN", str(script))
    monkeypatch.delenv("BOOTLOG_PODMAN_ARGS", raising=False)
    return tmp_path / "pids"


def _alive(pids_file) -> list[int]:
    import os

    alive = []
    for pid in map(int, pids_file.read_text().split()):
        try:
            os.kill(pid, 0)
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (ProcessLookupError, FileNotFoundError):
            continue
        if state != "Z":  # (a killed orphan stays a zombie until init reaps it)
            alive.append(pid)
    return alive


def test_a_hanging_engine_is_stopped_at_the_hooks_timeout(tmp_path, monkeypatch):
    # a held storage lock: every podman command hangs (here with a child process of its own)
    from click.testing import CliRunner

    from bootlog.cli import cli

    pids = _hanging_engine(tmp_path, monkeypatch, f"sleep 30 & echo $! >> {tmp_path}/pids; wait")
    t0 = time.monotonic()
    res = CliRunner().invoke(
        cli, ["--db", str(tmp_path / "h.db"), "hook", "--container", "c", "--timeout", "2", "--poll", "0.2"]
    )
    took = time.monotonic() - t0
    assert res.exit_code == 1, res.output
    assert took < 10
    assert "did not answer within 2 s" in res.output and len(res.output.strip().splitlines()) == 1
    time.sleep(0.2)
    assert _alive(pids) == []  # the engine's own children were stopped with it


def test_logs_that_stall_are_stopped(tmp_path, monkeypatch):
    pids = _hanging_engine(
        tmp_path,
        monkeypatch,
        f'printf "2026-11-29T14:25:19.320146538Z hi\\n"; sleep 30 & echo $! >> {tmp_path}/pids; wait',
    )
    monkeypatch.setattr(podman, "STALL_S", 1.0)
    t0 = time.monotonic()
    with pytest.raises(SourceError, match="logs c wrote nothing for 1 s"):
        list(podman.logs("c"))
    assert time.monotonic() - t0 < 6
    time.sleep(0.2)
    assert _alive(pids) == []


@pytest.mark.parametrize("name", ["--latest", "-v", "--help", "a b", "", "x;touch y"])
def test_a_name_the_engine_would_read_as_an_option_is_refused(tmp_path, monkeypatch, name):
    # `podman logs --timestamps --latest` would read the newest container's log, stored as "--latest"
    ran = _hanging_engine(tmp_path, monkeypatch, f"echo called >> {tmp_path}/pids")
    for call in (lambda: list(podman.logs(name)), lambda: podman.inspect(name), lambda: podman.events(name, since=0)):
        with pytest.raises(SourceError, match=r"^not a container name: "):
            call()
    assert not ran.exists()  # the engine never ran
