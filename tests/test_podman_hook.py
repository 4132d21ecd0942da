"""`bootlog hook` against real podman: containers replaying corpus logs as a vLLM server would."""

from __future__ import annotations

import json
import os
import re
import threading
import time

from click.testing import CliRunner

from bootlog.read import podman
from bootlog.cli import cli
from bootlog.read.envelope import clean
from bootlog.run.ingest import read_records
from bootlog.read.sources import container_source
from podman_util import Boot, all_at_once, fixture_log, until_ready, wait_exit

SMALL = "012-v0.10.2-v1-small.log"  # v0.10.2, ready, KV 433,456 tokens / 105.82x
OOM = "022-v0.13.0-oom-engine-failed.log"  # v0.13.0, fails: CUDA OOM loading weights (270 MiB)


def hook(db, name, *args):
    return CliRunner().invoke(
        cli,
        ["--db", str(db), "hook", "--container", name, "--poll", "0.2", "--timeout", "60", *args],
        catch_exceptions=False,
    )


def second_boot(log: bytes) -> bytes:
    """The same server booted again: new pids and times (as a real restart prints), and a KV
    cache 13,356 tokens (3.1 %) smaller at the same config: a capacity drift, beyond the 1 % a KV
    cache the engine sized by measuring memory may move."""
    return (
        log.replace(b"pid=85301", b"pid=91301")
        .replace(b"pid=85423", b"pid=91423")
        .replace(b"09-26 05:", b"09-26 07:")
        .replace(b"433,456 tokens", b"420,100 tokens")
    )


def test_hook_waits_for_a_slow_boot_and_reports_it_ready(replayer, db_path):
    log = fixture_log(SMALL).read_bytes()
    head, rest = until_ready(log)
    # 1.5 s of boot written in pieces; the server then keeps running
    name = replayer.start([Boot().slowly(head, pieces=4, pause=0.5).out(rest).hold()])
    res = hook(db_path, name, "--format", "json")
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    assert out["verdict"] == "OK" and out["boot"]["status"] == "ready"
    assert out["boot"]["container"] == name
    assert out["figures"]["kv_cache_tokens"] == 433456
    assert out["figures"]["max_concurrency"] == 105.82
    # it waited for the end of the boot: the stored boot reaches the startup line
    assert out["boot"]["last_line"] >= head.count(b"\n")
    assert any("nothing to diff against" in n for n in out["notes"])


def test_hook_reports_a_failed_boot_with_its_root_cause(replayer, db_path):
    name = replayer.start([all_at_once(fixture_log(OOM).read_bytes(), exit_code=1)])
    res = hook(db_path, name)
    assert res.exit_code == 4, res.output
    first, cause = res.stdout.splitlines()[:2]
    assert first.startswith(f"bootlog hook: FAILED: {name} boot #1 failed (oom)")
    assert cause.split()[:2] == ["root", "cause"]
    assert "CUDA out of memory. Tried to allocate 270.00 MiB" in cause
    assert "Engine core initialization failed" not in cause  # the wrapper is not the cause


def test_hook_reports_the_new_boot_of_a_restarted_container_and_diffs_it(replayer, db_path):
    log = fixture_log(SMALL).read_bytes()
    name = replayer.start([all_at_once(log, exit_code=0), Boot().slowly(second_boot(log), pieces=3, pause=0.3).hold()])
    wait_exit(name)
    replayer.restart(name)
    res = hook(db_path, name, "--format", "json")
    out = json.loads(res.stdout)
    assert res.exit_code == 3, res.output  # drift: KV tokens moved at an unchanged config
    assert out["boot"]["status"] == "ready"
    assert out["figures"]["kv_cache_tokens"] == 420100  # the new boot, not the one before
    assert out["prev"] is not None and out["prev"] != out["boot"]["id"]
    kv = [f for f in out["diff"]["findings"] if f["key"] == "kv_cache_tokens"]
    assert kv and kv[0]["verdict"] == "drift" and (kv[0]["old"], kv[0]["new"]) == (433456, 420100)

    md = hook(db_path, name, "--format", "markdown")
    assert md.exit_code == 3
    assert "MEASURED on the live deploy: KV cache 420,100 tokens" in md.stdout
    # running the hook again stores nothing new
    listed = json.loads(CliRunner().invoke(cli, ["--db", db_path, "list", "--json"]).stdout)
    assert len(listed) == 2


def test_hook_reports_the_failed_boot_even_when_the_engine_restarts_the_container(replayer, db_path):
    from bootlog.run.hook import run_hook, to_json
    from bootlog.store.db import open_store

    oom = fixture_log(OOM).read_bytes()
    cut = oom.index(b"Traceback")
    # the boot dies only once the hook is waiting (the gate); podman's restart policy then
    # starts the next boot on its own, as systemd's Restart=always does
    name = replayer.start(
        [Boot().out(oom[:cut]).gate("die").out(oom[cut:]).exit(1), all_at_once(fixture_log(SMALL).read_bytes())],
        restart="on-failure:1",
    )
    waiting = threading.Event()
    result = {}

    def run():
        result["r"] = run_hook(open_store(db_path), name, poll=0.2, timeout=60, progress=lambda msg: waiting.set())

    t = threading.Thread(target=run, daemon=True)
    t.start()
    assert waiting.wait(30), "the hook never started waiting"
    replayer.open_gate(name, "die")
    t.join(60)
    out = to_json(result["r"])
    assert out["exit"] == 4, out
    assert out["boot"]["status"] == "failed" and out["boot"]["failure"] == "oom"
    assert out["boot"]["vllm_version"] == "0.13.0"  # the deploy's boot, not the restart after it
    deadline = time.monotonic() + 15
    while podman.state(name).restart_count < 1:  # the scenario really happened
        assert time.monotonic() < deadline, "podman never restarted the container"
        time.sleep(0.2)


def test_hook_times_out_with_one_clear_line(replayer, db_path):
    head, _ = until_ready(fixture_log(SMALL).read_bytes())
    name = replayer.start([Boot().out(head[: head.index(b"GPU KV cache size")]).hold()])
    res = CliRunner().invoke(
        cli, ["--db", db_path, "hook", "--container", name, "--poll", "0.2", "--timeout", "1.5"], catch_exceptions=False
    )
    assert res.exit_code == 1
    assert res.stderr == f"bootlog: timed out after 1.5 s waiting for {name} to finish booting\n"
    assert res.stdout == ""
    # with --format json, stdout still answers (a script parses it); the line stays on stderr
    res = CliRunner().invoke(
        cli,
        ["--db", db_path, "hook", "--container", name, "--poll", "0.2", "--timeout", "1.5", "--format", "json"],
        catch_exceptions=False,
    )
    assert res.exit_code == 1 and res.stderr.startswith("bootlog: timed out after 1.5 s")
    out = json.loads(res.stdout)
    assert (out["verdict"], out["outcome"], out["exit"], out["container"]) == ("TIMEOUT", "timeout", 1, name)
    assert out["notes"][0].startswith("timed out") and out["notes"][1].startswith("last seen: ")


def test_hook_on_a_missing_container_is_one_clear_line(podman_ready, db_path):
    res = hook(db_path, "bl-never-created")
    assert res.exit_code == 1
    assert res.stderr == "bootlog: no such container: bl-never-created\n"


def test_hook_without_podman_on_path_is_one_clear_line(db_path, monkeypatch):
    monkeypatch.setenv("PATH", os.devnull)
    monkeypatch.delenv("BOOTLOG_PODMAN", raising=False)
    res = hook(db_path, "anything")
    assert res.exit_code == 1
    assert res.stderr == "bootlog: podman not found on PATH\n"


def test_hook_holds_the_boot_to_its_plan(replayer, db_path, tmp_path):
    plan = tmp_path / "small.toml"
    plan.write_text("[config]\nmax_model_len = 4096\n\n[metrics.kv_cache_tokens]\nmin = 500000\nhard = true\n")
    name = replayer.start([all_at_once(fixture_log(SMALL).read_bytes())])
    res = hook(db_path, name, "--plan", str(plan), "--format", "json")
    assert res.exit_code == 4, res.output  # a hard floor missed: 433,456 < 500,000
    out = json.loads(res.stdout)
    assert out["verdict"] == "VIOLATION" and out["boot"]["status"] == "ready"
    by_key = {f["key"]: f for f in out["check"]["findings"]}
    assert by_key["kv_cache_tokens"]["verdict"] == "violation"
    assert by_key["max_model_len"]["verdict"] == "same"
    text = hook(db_path, name, "--plan", str(plan))
    assert text.exit_code == 4 and "kv_cache_tokens" in text.stdout

    plan.write_text("[config]\nmax_model_len = 4096\n\n[metrics.kv_cache_tokens]\nmin = 400000\n")
    assert hook(db_path, name, "--plan", str(plan)).exit_code == 0


def test_choose_run_picks_the_run_current_when_the_hook_started():
    from bootlog.run.hook import choose_run
    from bootlog.read.podman import parse_time as t

    # docs/podman.md's event log of one container booted three times (init ... died, per boot)
    inits = [
        t("2026-11-29 14:25:25.090368717 +0000 UTC"),
        t("2026-11-29 14:25:27.007160616 +0000 UTC"),
        t("2026-11-29 14:25:28.871698942 +0000 UTC"),
    ]
    died = [
        t("2026-11-29 14:25:25.114639218 +0000 UTC"),
        t("2026-11-29 14:25:27.102891544 +0000 UTC"),
        t("2026-11-29 14:25:28.891209877 +0000 UTC"),
    ]
    during_second = t("2026-11-29T14:25:27.05Z")
    run = choose_run(inits, died, during_second)
    assert (run.since, run.until, run.ended_before) == (inits[1], inits[2], False)
    between = t("2026-11-29T14:25:26Z")  # first boot dead, second not started: wait for it
    assert choose_run(inits, died, between).since == inits[1]
    late = t("2026-11-29T14:30:00Z")  # everything over: the last run, marked as ended before
    run = choose_run(inits, died, late)
    assert (run.since, run.until, run.ended_before) == (inits[2], None, True)
    running = choose_run(inits, died[:2], late)  # third boot still running
    assert (running.since, running.until, running.ended_before) == (inits[2], None, False)


def test_hook_started_before_the_container_exists_waits_for_it(replayer, db_path):
    """Right after `systemctl restart` the unit's `podman run` may not have created it yet."""
    from bootlog.run.hook import run_hook
    from bootlog.store.db import open_store

    name = "bl-late-" + os.urandom(4).hex()
    said: list[str] = []
    missing = threading.Event()
    result = {}

    def progress(msg: str) -> None:
        said.append(msg)
        if "does not exist" in msg:
            missing.set()

    def run():
        result["r"] = run_hook(open_store(db_path), name, poll=1.5, timeout=60, progress=progress)

    t = threading.Thread(target=run, daemon=True)
    t.start()
    assert missing.wait(30)
    replayer.start([all_at_once(fixture_log(SMALL).read_bytes())], name=name)
    t.join(60)
    assert result["r"].exit == 0 and result["r"].show["boot"]["status"] == "ready", said


def test_a_tty_container_gives_the_same_figures_and_config_as_the_file(replayer, db_path, tmp_path):
    # `podman run -t`: the output passes a pseudo-terminal, whose reads stop at 4095 bytes, so
    # conmon cuts long lines into P records well short of its 8 KiB buffer and `podman logs -t`
    # stamps each continuation mid-line (docs/podman.md); those lines must be joined again
    log = fixture_log(SMALL).read_bytes()
    name = replayer.start([all_at_once(log, exit_code=0)], tty=True)
    wait_exit(name)
    stamped = b"".join(podman.logs(name))
    assert re.search(rb"[^\n]\d{4}-\d\d-\d\dT[\d:.]+Z ", stamped), "no P continuation in this run"
    # every line comes back whole (where conmon cut them differs from run to run)
    recs, _ = read_records(container_source(name), every=True)
    assert [r.text for r in recs] == [clean(line) for line in log.split(b"\n")[:-1]]
    run = CliRunner()
    got = run.invoke(cli, ["--db", str(db_path), "ingest", "--container", name], catch_exceptions=False)
    assert got.exit_code == 0, got.output
    shown = json.loads(run.invoke(cli, ["--db", str(db_path), "show", "last", "--json"]).stdout)
    plain = tmp_path / "plain.db"
    assert run.invoke(cli, ["--db", str(plain), "ingest", str(fixture_log(SMALL))]).exit_code == 0
    want = json.loads(run.invoke(cli, ["--db", str(plain), "show", "last", "--json"]).stdout)
    # (boot_to_ready_s differs: the container's stamps are podman's, all within milliseconds)
    figures = lambda doc: [m for m in doc["metrics"] if m["name"] != "boot_to_ready_s"]  # noqa: E731
    assert figures(shown) == figures(want)
    assert shown["config"] == want["config"]
    assert {"torch_compile_s", "kv_cache_tokens"} <= {m["name"] for m in shown["metrics"]}


def test_hook_judges_a_failed_boot_of_a_container_removed_when_it_exits(replayer, db_path):
    # `run --rm`: the container is gone by the time the hook would read its log again; the hook
    # judges and stores what it read of the run (it said "no such container", exit 1)
    log = fixture_log(OOM).read_bytes()
    cut = log.index(b"\n", len(log) // 3) + 1
    # (the last lines a second before the exit: with --rm, what the hook has not read by the
    # exit is gone with the container, and such a boot is judged from what was read)
    # (2 s each: a loaded machine's podman calls take a second or more, and the hook must
    # first see the container before it is gone)
    name = replayer.start([Boot().out(log[:cut]).sleep(2.0).out(log[cut:]).sleep(2.0).exit(1)], rm=True)
    res = hook(db_path, name)
    assert res.exit_code == 4, res.output
    assert res.stdout.startswith(f"bootlog hook: FAILED: {name} boot #1 failed (oom)")
    listed = json.loads(CliRunner().invoke(cli, ["--db", str(db_path), "list", "--json"]).stdout)
    assert [(b["status"], b["failure"], b["container"]) for b in listed] == [("failed", "oom", name)]


def test_hook_fails_a_boot_whose_engine_died_right_after_ready(replayer, db_path):
    # the README: a ready boot whose engine then died is a failed deploy, first boot or not
    from podman_util import runtime_oom

    log = fixture_log(SMALL).read_bytes()
    died = runtime_oom(
        b"\x1b[1;36m(EngineCore_DP0 pid=85423)\x1b[0;0m ",
        b"09-26 05:58:00",
        b"\x1b[1;36m(APIServer pid=85301)\x1b[0;0m ",
    )
    name = replayer.start([all_at_once(log + died, exit_code=1)])
    res = hook(db_path, name, "--format", "json")
    assert res.exit_code == 4, res.output
    out = json.loads(res.stdout)
    assert out["verdict"] == "FAILED" and out["boot"]["status"] == "ready" and out["boot"]["failure"] == "oom"


def test_a_run_that_printed_no_vllm_line_is_not_judged_by_an_earlier_boot():
    # the run died before any vLLM line: the newest stored boot is the previous run's, and
    # quoting its figures as "MEASURED on the live deploy" would be false
    from types import SimpleNamespace

    from bootlog.run import hook as h

    earlier = SimpleNamespace(boot=SimpleNamespace(fingerprint="abc", started_at=None))
    assert h._match([earlier], None) is None
    assert h._match([earlier], SimpleNamespace(fingerprint="zzz", started_at=None)) is earlier


def test_hook_diffs_with_this_hosts_last_boot_and_the_plans_tolerance(replayer, db_path, tmp_path):
    """A fleet shares one database: the hook's previous boot is this host's run of the unit, not
    another host's; and its diff judges timings with the plan's [tolerance], as `diff --plan`."""
    from podman_util import run_podman

    log = fixture_log(SMALL).read_bytes()

    def boot(k: int, compile_s: str = "34.22") -> Boot:
        run = (
            log.replace(b"pid=85301", b"pid=9%d301" % k)
            .replace(b"pid=85423", b"pid=9%d423" % k)
            .replace(b"09-26 05:", b"09-2%d 05:" % k)
            .replace(b"takes 34.22 s", compile_s.encode().join([b"takes ", b" s"]))
        )
        return Boot().out(run).hold()

    name = replayer.start([boot(1), boot(2), boot(3), boot(4), boot(5, "68.44")])

    def next_boot() -> None:  # systemd restarting the unit: stop, start (the log goes on)
        run_podman("stop", "-t", "0", name)
        replayer.restart(name)

    def hooked(*args) -> dict:
        res = hook(db_path, name, "--format", "json", *args)
        return {"code": res.exit_code, **json.loads(res.stdout)}

    first = hooked()
    assert first["code"] == 0 and first["prev"] is None
    next_boot()
    # host B's run of the same unit lands in the shared database
    other = CliRunner().invoke(cli, ["--db", db_path, "ingest", "--container", name, "--host", "hostB", "--json"])
    assert other.exit_code == 0, other.output
    (b_id,) = [b["id"] for b in json.loads(other.stdout) if b["created"]]
    next_boot()
    third = hooked()
    assert third["prev"] == first["boot"]["id"] != b_id  # this host's boot before, not host B's
    assert third["code"] == 0
    next_boot()
    assert hooked()["code"] == 0
    next_boot()
    # compile 34.22 s three times here, now 68.44 s: drift at the default 20 %
    slow = hooked()
    assert slow["code"] == 3
    (tc,) = [f for f in slow["diff"]["findings"] if f["key"] == "torch_compile_s"]
    assert tc["verdict"] == "drift" and "over 3 boots" in tc["why"]
    plan = tmp_path / "loose.toml"
    plan.write_text('[tolerance]\nmin_pct = 400.0\n\n[boot]\nstatus = "ready"\n')  # (a plan holds an expectation)
    loose = hooked("--plan", str(plan))
    (tc,) = [f for f in loose["diff"]["findings"] if f["key"] == "torch_compile_s"]
    assert tc["verdict"] == "changed" and "within" in tc["why"]
    assert loose["code"] == 0
    # the same two boots through `diff --plan` agree
    d = CliRunner().invoke(cli, ["--db", db_path, "diff", "last", "prev", "--container", name, "--plan", str(plan)])
    assert d.exit_code == 0, d.output


def test_hook_says_at_once_that_a_container_never_started(replayer, db_path):
    # `podman run` of a command the runtime cannot exec exits 127 and leaves the container
    # "created" (events: create, cleanup); waiting for it only burnt the whole timeout (issue 29)
    from podman_util import IMAGE, run_podman

    name = f"bl-never-{os.urandom(3).hex()}"
    replayer.names.append(name)
    done = run_podman("run", "-d", "--name", name, "--network=none", IMAGE, "/no/such/vllm", "serve", check=False)
    assert done.returncode == 127, done.stderr
    t0 = time.monotonic()
    res = hook(db_path, name)
    assert time.monotonic() - t0 < 10 and res.exit_code == 4, res.output
    [line] = res.output.strip().splitlines()
    assert "never started" in line and name in line


SEED = os.path.join(os.path.dirname(__file__), "..", "fixtures", "logs", "seed")


def test_hook_without_a_plan_fails_a_boot_that_printed_gdn_hip_state_faults(replayer, db_path):
    # seed 08: ready, then the 32-fault burst (48 happened) and the report cap; without --plan
    # the hook said "OK", exit 0.  A fault burst is the engine serving from corrupted state.
    from podman_util import unstamped

    with open(os.path.join(SEED, "08-gdn-hip-burst-prefix-caching.log"), "rb") as f:
        log = unstamped(f.read())
    name = replayer.start([all_at_once(log)])
    res = hook(db_path, name, "--format", "json")
    assert res.exit_code == 4, res.output
    out = json.loads(res.stdout)
    assert out["verdict"] == "FAILED" and out["boot"]["status"] == "ready" and out["boot"]["failure"] is None
    assert out["why"] == [
        "32 gdn_hip state fault(s) (report limit reached: later faults are silent): "
        "the engine serves from corrupted state"
    ]
    text = hook(db_path, name).stdout.splitlines()
    assert text[0].startswith(f"bootlog hook: FAILED: {name} boot #1 ready")
    assert text[1].split(None, 1) == ["why", out["why"][0]]


def test_hook_on_a_container_that_already_exited_says_no_new_boot_started(replayer, db_path, monkeypatch):
    # the run ended before the hook began and none followed: the earlier run's boot was
    # reported "OK" as if it were this deploy's
    from bootlog.run import hook as h

    name = replayer.start([all_at_once(fixture_log(SMALL).read_bytes(), exit_code=0)])
    wait_exit(name)
    monkeypatch.setattr(h, "RECENT_EXIT_NS", 0)  # (as if it had ended minutes ago)
    res = CliRunner().invoke(
        cli,
        ["--db", db_path, "hook", "--container", name, "--timeout", "3", "--format", "json"],
        catch_exceptions=False,
    )
    assert res.exit_code == 1, res.output
    assert re.fullmatch(
        rf"bootlog: no new boot of {name} started: its last run ended with exit code 0 "
        rf"\d+ s before the hook started; the latest boot is #1 \(ready, started [^)]+\)\n",
        res.stderr,
    ), res.stderr
    out = json.loads(res.stdout)
    assert (out["verdict"], out["outcome"], out["exit"]) == ("NO_NEW_BOOT", "no_new_boot", 1)


def test_hook_fails_a_start_the_argument_parser_refused(replayer, db_path):
    # `vllm serve … --expert-precise-memroy`: argparse prints usage and the error on stderr and
    # exits 2 before the hook's first look (a start that dies at once is still the deploy's)
    usage = (
        b"usage: vllm serve [model_tag] [options]\nvllm serve: error: unrecognized arguments: --expert-precise-memroy\n"
    )
    name = replayer.start([Boot().err(usage).exit(2)])
    res = hook(db_path, name, "--format", "json")
    assert res.exit_code == 4, res.output
    out = json.loads(res.stdout)
    assert (out["verdict"], out["boot"]["status"], out["boot"]["failure"]) == ("FAILED", "failed", "bad_args")
    assert out["boot"]["failure_message"] == "vllm serve: error: unrecognized arguments: --expert-precise-memroy"
