"""Re-ingesting a grown file reads only the new part, and stores exactly what one read stores."""

from __future__ import annotations

import json

import pytest

from bootlog.run.ingest import ingest
from bootlog.store.db import open_store
from bootlog.store.reads import get_position, list_boots, show_boot
from paths import FIXTURES

LOGS = [
    "014-v0.10.2-nohup-multiboot.log",
    "020-v0.11.2-metrics-heavy.log",
    "042-v0.22.0-llm.log",
    "053-dev-build-nohup-8-boots.log",
    "seed/07-5x262144-runtime-oom.log",
    "seed/08-gdn-hip-burst-prefix-caching.log",
    "seed/09-night-ladder-4-boots.log",
]


def stored(engine) -> list[dict]:
    out = []
    for b in list_boots(engine):
        s = show_boot(engine, b["id"])
        boot = {k: v for k, v in s["boot"].items() if k not in ("id", "source")}
        events = [(e["kind"], e["line"], e["rank"], e["message"]) for e in s["events"]]
        out.append(
            {"boot": boot, "metrics": s["metrics"], "config": s["config"], "events": events, "runtime": s["runtime"]}
        )
    return sorted(out, key=lambda b: (b["boot"]["first_line"], b["boot"]["started_at"] or ""))


def grow_and_ingest(tmp_path, data: bytes, cuts: list[int]):
    log = tmp_path / "grow.log"
    engine = open_store(str(tmp_path / "inc.db"))
    done = 0
    for cut in cuts + [len(data)]:
        with open(log, "ab") as f:
            f.write(data[done:cut])
        done = cut
        ingest(engine, str(log))
    return engine, log


@pytest.mark.parametrize("name", LOGS)
def test_growing_log_equals_one_read(tmp_path, name):
    data = (FIXTURES / name).read_bytes()
    n = len(data)
    # cuts anywhere: mid-line, mid-boot, before and after "Application startup complete."
    cuts = sorted({n // 7, n // 3 + 17, n // 2, (2 * n) // 3 + 5, n - 200})
    engine, log = grow_and_ingest(tmp_path, data, cuts)
    once = open_store(str(tmp_path / "once.db"))
    ingest(once, str(log))
    assert stored(engine) == stored(once)


@pytest.mark.parametrize(
    "name, text, cut_off",
    [
        # a copy cut inside the engine config line: the model it names is cut short ("Qwen2.5-7B-In")
        ("033-v0.17.0-arno-chat.log", b"with config: model='Qwen/Qwen2.5-7B-Instruct'", 9),
        # a copy cut inside the second boot's "Unknown vLLM environment variable" warnings: the half
        # name repeats the warning before it, which alone would open a boot
        ("058-rocm-rdna4-tp2-hip-oom-sweep.log", b"variable detected: VLLM_ROCM_W4A8_FP8_WMMA_MOE_VERSION", 8),
    ],
)
def test_a_copy_cut_mid_line_then_the_whole_file_stores_one_read(tmp_path, name, text, cut_off):
    data = (FIXTURES / name).read_bytes()
    at = data.rindex(text) + len(text) - cut_off  # the cut is inside a line
    log = tmp_path / "copy.log"
    log.write_bytes(data[:at])
    engine = open_store(str(tmp_path / "c.db"))
    ingest(engine, str(log))
    log.write_bytes(data)  # copied again once the server had written on
    ingest(engine, str(log))
    once = open_store(str(tmp_path / "once.db"))
    ingest(once, str(log))
    assert stored(engine) == stored(once)


@pytest.mark.parametrize(
    "name, cuts",
    [
        # read ending at line 32 inside the next boot's first lines, then past them: the boot ends at 29
        ("041-ascend-v0.21.0-agent.log", [3864, 14301, 32355]),
        # a position stored at a whole line, then a whole read ending inside one (the boot was still
        # starting): the next read must not resume from the older position and store lines twice
        ("seed/07-5x262144-runtime-oom.log", [9501, 23723, 44625]),
        # the last line completed: same lines, same counts, but its message whole now
        ("055-tpu-v7x-jax-v0.11.1rc7-oom-engine-failed.log", [6442, 18152, 30816]),
    ],
)
def test_a_log_copied_while_written_stores_one_read(tmp_path, name, cuts):
    # (cuts a random trial found: each fixture grown at 3 random bytes, re-ingested each time)
    engine, log = grow_and_ingest(tmp_path, (FIXTURES / name).read_bytes(), cuts)
    once = open_store(str(tmp_path / "once.db"))
    ingest(once, str(log))
    assert stored(engine) == stored(once)


def test_nothing_new_and_resume_offsets(tmp_path):
    data = (FIXTURES / "seed/07-5x262144-runtime-oom.log").read_bytes()
    cut = data.index(b"Application startup complete")
    cut = data.index(b"\n", cut) + 1
    engine, log = grow_and_ingest(tmp_path, data, [cut])
    from bootlog.run.ingest import default_host

    offset, head = get_position(engine, f"ingest:{default_host()}:" + str(log.resolve()))
    assert offset == len(data) and head.split(":")[2] == str(data.count(b"\n"))
    again = ingest(engine, str(log))
    assert again.up_to_date and list(again) == []


def test_runtime_lines_extend_the_ready_boot(tmp_path):
    data = (FIXTURES / "seed/07-5x262144-runtime-oom.log").read_bytes()
    cut = data.index(b"\n", data.index(b"Application startup complete")) + 1
    log = tmp_path / "g.log"
    log.write_bytes(data[:cut])
    engine = open_store(str(tmp_path / "g.db"))
    [first] = ingest(engine, str(log))
    assert first.boot.status == "ready" and not any(e.kind == "oom" for e in first.boot.events)
    with open(log, "ab") as f:
        f.write(data[cut:])
    res = ingest(engine, str(log))
    assert res.resumed_at_line == data[:cut].count(b"\n")
    assert [r.id for r in res] == [first.id] and res[0].boot.continued
    s = show_boot(engine, first.id)
    assert s["boot"]["status"] == "ready" and s["boot"]["failure"] == "oom"
    oom = [e for e in s["events"] if e["kind"] == "oom"]
    assert oom and oom[0]["rank"] == 1 and oom[0]["detail"]["requested_mib"] == 50.0


def test_rewritten_file_is_read_from_the_start(tmp_path):
    a = (FIXTURES / "005-v0.8.4-v1-tp2.log").read_bytes()
    b = (FIXTURES / "014-v0.10.2-nohup-multiboot.log").read_bytes()
    log = tmp_path / "rot.log"
    engine = open_store(str(tmp_path / "r.db"))
    log.write_bytes(a)
    ingest(engine, str(log))
    log.write_bytes(b)  # rotated: same name, other content (and longer)
    res = ingest(engine, str(log))
    assert res.resumed_at_line is None
    assert len([r for r in res if r.created]) == 2
    log.write_bytes(b[: len(b) // 3])  # truncated
    res = ingest(engine, str(log))
    assert res.resumed_at_line is None and not any(r.created for r in res)


def test_a_resumed_read_extends_this_hosts_boot_not_another_hosts(tmp_path):
    # one database for a fleet: hostB stored a later part of the same-named log first; hostA's
    # grown log must extend hostA's boot (it extended hostB's, the one reaching furthest)
    from click.testing import CliRunner

    from bootlog.cli import cli

    data = (FIXTURES / "seed/07-5x262144-runtime-oom.log").read_bytes()
    ready = data.index(b"\n", data.index(b"Application startup complete")) + 1
    db = str(tmp_path / "fleet.db")
    log = tmp_path / "vllm.log"

    def run(*a):
        res = CliRunner().invoke(cli, ["--db", db, *a], catch_exceptions=False)
        assert res.exit_code == 0, res.output
        return res.stdout

    # hostB's server booted a day earlier: its own boot (another day in every line)
    log.write_bytes(data.replace(b" 09-30 ", b" 09-29 ").replace(b" 10-01 ", b" 09-30 "))
    run("ingest", "--host", "hostB", str(log))
    log.write_bytes(data[:ready])
    run("ingest", "--host", "hostA", str(log))
    log.write_bytes(data)
    out = run("ingest", "--host", "hostA", str(log))
    assert "extended" in out
    boots = json.loads(run("list", "--json"))
    by_host = {b["host"]: b for b in boots}
    assert len(boots) == 2 and by_host["hostA"]["last_line"] == by_host["hostB"]["last_line"]
    assert (by_host["hostA"]["status"], by_host["hostA"]["failure"]) == ("ready", "oom")


def test_a_position_stored_before_positions_were_per_host_is_read_on_from(tmp_path):
    # upgrading bootlog must not cost every grown file one full read
    import sqlite3

    from click.testing import CliRunner

    from bootlog.cli import cli

    data = (FIXTURES / "seed/07-5x262144-runtime-oom.log").read_bytes()
    ready = data.index(b"\n", data.index(b"Application startup complete")) + 1
    db, log = str(tmp_path / "old.db"), tmp_path / "vllm.log"
    log.write_bytes(data[:ready])
    run = lambda *a: CliRunner().invoke(cli, ["--db", db, *a], catch_exceptions=False)  # noqa: E731
    assert run("ingest", str(log)).exit_code == 0
    with sqlite3.connect(db) as con:  # the key as earlier versions wrote it
        con.execute("UPDATE positions SET source_key = ?", ("ingest:" + str(log.resolve()),))
    log.write_bytes(data)
    res = run("ingest", str(log))
    assert res.exit_code == 0 and "read on from line" in res.stdout and "extended" in res.stdout
    assert "nothing new" in run("ingest", str(log)).stdout


def test_a_boot_read_at_ready_and_later_whole_from_another_source_is_one_boot(tmp_path):
    """The hook reads a boot the moment it is ready; hours later the same boot arrives whole from
    the log file's resumed read, the rotated .gz, stdin or an archive copy.  Its fingerprint stops
    at the ready line, so every later read finds the stored boot instead of storing it again
    (seed boots have fewer than 64 catalogue lines by then: the fingerprint moved with them)."""
    import gzip

    from bootlog.store.db import open_store
    from bootlog.store.reads import list_boots, show_boot

    data = (FIXTURES / "seed/08-gdn-hip-burst-prefix-caching.log").read_bytes()
    ready = data.index(b"\n", data.index(b"Application startup complete")) + 1
    engine = open_store(str(tmp_path / "t.db"))
    log = tmp_path / "vllm.log"
    log.write_bytes(data[:ready])
    (young,) = ingest(engine, str(log))
    log.write_bytes(data)
    res = ingest(engine, str(log))  # resumed: the stored boot is extended
    assert res.resumed_at_line is not None and [r.id for r in res] == [young.id]
    gz = tmp_path / "vllm.log.1.gz"
    gz.write_bytes(gzip.compress(data))
    copy = tmp_path / "archive.log"
    copy.write_bytes(data)
    for other in (gz, copy):
        got = ingest(engine, str(other))
        assert [(r.id, r.created) for r in got] == [(young.id, False)], other
    assert len(list_boots(engine)) == 1
    kinds = [e["kind"] for e in show_boot(engine, young.id)["events"]]
    assert kinds.count("gdn_hip_fault") >= 32  # the runtime faults are on the one boot

    # the other order: the hook's young read (another source), then the archive first seen whole
    engine2 = open_store(str(tmp_path / "t2.db"))
    hooked = tmp_path / "hooked.log"
    hooked.write_bytes(data[:ready])
    (h,) = ingest(engine2, str(hooked))
    (whole,) = ingest(engine2, str(copy))
    assert (whole.id, whole.created) == (h.id, False)
    shown = show_boot(engine2, h.id)
    assert shown["boot"]["last_line"] == data.count(b"\n")  # updated in place with the whole boot
    assert [e["kind"] for e in shown["events"]].count("gdn_hip_fault") >= 32


def test_after_a_rotation_a_resumed_read_extends_the_running_boot_not_an_old_one(tmp_path):
    """logrotate copytruncate: the file starts again with the next deploy.  The first read after
    it is whole (the head changed); a later resumed read continues the boot that read ended in,
    not the source's boot from before the rotation that reaches further (it got the new boot's
    runtime faults, and `check last` passed)."""
    old = (FIXTURES / "seed/10-cold-vs-warm-compile.log").read_bytes()
    new = (FIXTURES / "seed/08-gdn-hip-burst-prefix-caching.log").read_bytes()
    ready = new.index(b"\n", new.index(b"Application startup complete")) + 1
    assert old.count(b"\n") > new.count(b"\n")  # the old contents reach further than the new
    engine = open_store(str(tmp_path / "t.db"))
    log = tmp_path / "vllm.log"
    log.write_bytes(old)
    before = {r.id: show_boot(engine, r.id)["boot"]["last_line"] for r in ingest(engine, str(log))}
    log.write_bytes(b"")  # rotated; the cron read finds it empty
    ingest(engine, str(log))
    log.write_bytes(new[:ready])
    (running,) = ingest(engine, str(log))
    assert running.created
    log.write_bytes(new)
    res = ingest(engine, str(log))
    assert res.resumed_at_line is not None and [r.id for r in res] == [running.id]
    shown = show_boot(engine, running.id)
    assert [e["kind"] for e in shown["events"]].count("gdn_hip_fault") >= 32
    assert {i: show_boot(engine, i)["boot"]["last_line"] for i in before} == before


def test_a_file_whose_boot_was_first_stored_from_another_source_still_reads_on(tmp_path, monkeypatch):
    """The hook (or stdin, a .gz, the journal) stored the boot first; the deploy's log file then
    matches it by fingerprint.  Its later reads must still read on from the stored position,
    not re-read the whole file every time (the boot's row names the other source)."""
    import io
    import sys

    data = (FIXTURES / "seed/04-shape-g-kv-400700-no-prefix-cache.log").read_bytes()
    lines = [line + b"\n" for line in data.split(b"\n")[:-1]]  # (not splitlines: "\r" is in lines)
    assert b"Application startup complete" in lines[229]
    engine = open_store(str(tmp_path / "t.db"))
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"".join(lines[:230]))))
    (first,) = ingest(engine, "-")
    log = tmp_path / "vllm.log"
    log.write_bytes(b"".join(lines[:240]))
    (same,) = ingest(engine, str(log))
    assert (same.id, same.created) == (first.id, False)
    log.write_bytes(data)
    res = ingest(engine, str(log))
    assert res.resumed_at_line == 240 and [r.id for r in res] == [first.id]
    again = ingest(engine, str(log))
    assert again.up_to_date and again.resumed_at_line == len(lines)


def test_a_head_rewritten_during_a_resumed_read_is_stored_with_its_own_format(tmp_path, monkeypatch):
    # a resumed read stores the format it resumed with (no detection again), unless the head it
    # stores is no longer the one it resumed on: then the new head's own format
    from bootlog.run import ingest as ingest_mod
    from bootlog.run.ingest import default_host

    plain = (FIXTURES / "053-dev-build-nohup-8-boots.log").read_bytes()
    stamped = (FIXTURES / "seed/07-5x262144-runtime-oom.log").read_bytes()[:4096]
    cut = plain.index(b"\n", len(plain) // 2) + 1
    engine, log = grow_and_ingest(tmp_path, plain[:cut], [])
    key = f"ingest:{default_host()}:" + str(log.resolve())
    assert get_position(engine, key)[1].split(":")[3] == "plain"
    with open(log, "ab") as f:
        f.write(plain[cut:])
    ingest(engine, str(log))  # the head as it was: resumed, stored as plain
    assert get_position(engine, key)[1].split(":")[3] == "plain"
    with open(log, "ab") as f:
        f.write(plain[cut:])
    real = ingest_mod.read_boots

    def parse_then_rewrite(*a, **k):
        out = real(*a, **k)
        with open(log, "r+b") as f:  # (same length: the offsets stay)
            f.write(stamped)
        return out

    monkeypatch.setattr(ingest_mod, "read_boots", parse_then_rewrite)
    assert ingest(engine, str(log)).resumed_at_line is not None
    assert get_position(engine, key)[1].split(":")[3] == "podman_ts"
