"""`bootlog watch --once` as cron runs it: the exit code says what it stored (0 nothing wrong, 3
drift, 4 a failed boot / an engine that died serving / state faults / a hard plan miss), a
gdn_hip fault burst is one line, and `--plan` stores and judges the plan's own figures."""

from __future__ import annotations

import json
import re

from click.testing import CliRunner

from bootlog.cli import cli
from paths import FIXTURES

ENGINE = FIXTURES / "engine"
SEED = FIXTURES / "seed"
PLAN = FIXTURES.parent / "plans" / "frank-primary.toml"


def run(db, *args):
    return CliRunner().invoke(cli, ["--db", str(db), *args], catch_exceptions=False)


def once(db, path, *more):
    return run(db, "watch", "--file", str(path), "--once", *more)


def test_a_gdn_burst_is_one_line_and_a_failed_deploy(db_path):
    log = SEED / "08-gdn-hip-burst-prefix-caching.log"
    text = log.read_bytes().decode()  # (read_text would turn a lone \r into a line break)
    # read by hand: 32 fault lines (heads 3 and 8 of slot 42), then the report-cap line
    faults = [n for n, ln in enumerate(text.split("\n"), 1) if "[gdn_hip] ERROR gdn_decode_r" in ln]
    assert len(faults) == 32 and "report limit (32) reached" in text
    assert {m for m in re.findall(r"slot=(\d+) head=(\d+)", text)} == {("42", "3"), ("42", "8")}
    res = once(db_path, log)
    assert res.exit_code == 4, res.output
    burst = [ln for ln in res.stdout.splitlines() if " gdn_hip_fault" in ln]
    assert len(burst) == 1, burst
    assert burst[0].endswith(
        f"boot #1 gdn_hip_fault line {faults[0]}: 32 faults, slot 42, heads 3 and 8, "
        f"report cap reached (32) (lines {faults[0]}-{faults[-1] + 1})"
    )
    assert "boot #1 FAILED: 32 gdn_hip state fault(s)" in res.stdout
    # every fault is stored all the same (the summary is only what is printed)
    shown = json.loads(run(db_path, "show", "1", "--json").stdout)
    assert sum(e["kind"] == "gdn_hip_fault" for e in shown["events"]) == 32
    # the next cron run: nothing new, nothing said, exit 0
    again = once(db_path, log)
    assert (again.exit_code, again.stdout) == (0, "")


def test_exit_codes_mean_what_diff_and_check_say(db_path, tmp_path):
    cases = [  # (log, exit code, the word) — each read by hand in fixtures/logs/engine/README.md
        (ENGINE / "e01-v0.32.0-cpu-cold-requests-sigterm.log", 0, None),  # a clean SIGTERM stop
        (ENGINE / "e02-v0.32.0-cpu-warm-engine-core-killed.log", 4, "FAILED"),  # died serving, exit 0
        (ENGINE / "e05-v0.32.0-cpu-fail-max-model-len.log", 4, "FAILED"),  # a failed start
        (FIXTURES / "042-v0.22.0-llm.log", 3, "DRIFT"),  # an OOM the server went on after
    ]
    for log, code, word in cases:
        res = once(tmp_path / f"{log.stem}.db", log)
        assert res.exit_code == code, (log.name, res.output)
        said = [ln for ln in res.stdout.splitlines() if re.search(r" boot #\d+ (FAILED|DRIFT|VIOLATION)", ln)]
        assert (said[0].split(" boot #1 ")[1].split(":")[0] if said else None) == word, said


def test_cron_sees_the_death_when_it_is_stored_not_again(db_path, tmp_path):
    # e02: ready, three requests, then `kill -9` of the EngineCore (the process exited 0)
    data = (ENGINE / "e02-v0.32.0-cpu-warm-engine-core-killed.log").read_bytes()
    ready = data.index(b"Application startup complete.")
    cut = data.index(b"\n", ready) + 1
    log = tmp_path / "nohup.out"
    log.write_bytes(data[:cut])
    first = once(db_path, log)
    assert first.exit_code == 0 and "boot_ready" in first.stdout, first.output
    with open(log, "ab") as f:
        f.write(data[cut:])
    second = once(db_path, log)
    assert second.exit_code == 4, second.output
    assert "boot #1 boot_died: [shutdown] MPClient: engine core exited unexpectedly" in second.stdout
    assert "boot #1 FAILED: the engine died serving (engine_died)" in second.stdout
    third = once(db_path, log)
    assert (third.exit_code, third.stdout) == (0, "")


def test_a_boot_still_starting_is_not_held_to_the_plan_yet(db_path, tmp_path):
    data = (SEED / "04-shape-g-kv-400700-no-prefix-cache.log").read_bytes()
    cut = data.index(b"\n", data.index(b"GPU KV cache size")) + 1
    log = tmp_path / "vllm.log"
    log.write_bytes(data[:cut])
    res = once(db_path, log, "--plan", str(PLAN))
    assert res.exit_code == 0, res.output  # (incomplete: no "status must be ready" miss yet)


def test_watch_plan_stores_the_plans_own_figures_and_judges_them(db_path, tmp_path):
    # seed 04 (shape G) meets the shipped plan; its expert arena figures come from [[pattern]]s
    log = SEED / "04-shape-g-kv-400700-no-prefix-cache.log"
    text = log.read_text()
    assert "expert cache 17.77 GiB / 7,762 slots" in text  # (the line the patterns read)
    res = once(db_path, log, "--plan", str(PLAN))
    shown = json.loads(run(db_path, "show", "last", "--json").stdout)
    user = {m["name"]: m["value"] for m in shown["metrics"] if m["name"].startswith("expert_arena")}
    assert user == {"expert_arena_gib": 17.77, "expert_arena_slots": 7762}
    check = run(db_path, "check", "last", "--plan", str(PLAN))
    assert res.exit_code == check.exit_code, (res.output, check.output)
    # a plan asking for more than the log says: a hard miss, exit 4, said in one line
    strict = tmp_path / "strict.toml"
    (tmp_path / "frank-primary.env").write_bytes((PLAN.parent / "frank-primary.env").read_bytes())
    strict.write_text(
        PLAN.read_text().replace(
            "[metrics.expert_arena_slots]                 # shape G measured 7,762 slots\nmin = 7762",
            "[metrics.expert_arena_slots]\nmin = 8000\nhard = true",
        )
    )
    assert "min = 8000" in strict.read_text()
    res2 = once(tmp_path / "strict.db", log, "--plan", str(strict))
    assert res2.exit_code == 4, res2.output
    assert re.search(r"boot #1 VIOLATION: plan: [1-9]\d* violation", res2.stdout), res2.stdout


def test_no_plan_file_is_one_line(db_path, tmp_path):
    res = CliRunner().invoke(
        cli,
        [
            "--db",
            db_path,
            "watch",
            "--file",
            str(ENGINE / "e01-v0.32.0-cpu-cold-requests-sigterm.log"),
            "--once",
            "--plan",
            str(tmp_path / "nope.toml"),
        ],
    )
    assert res.exit_code in (1, 2) and "Traceback" not in res.output


def test_a_new_boot_is_judged_against_the_one_before_it_as_the_hook_does(db_path, tmp_path):
    # e01 again an hour later with a KV pool 64 tokens smaller at the same settings: capacity
    # drift (exit 3), as `diff last prev` says it
    e01 = (ENGINE / "e01-v0.32.0-cpu-cold-requests-sigterm.log").read_bytes()
    assert e01.count(b"CPU KV cache size: 131,072 tokens") == 1
    again = (
        e01.replace(b"12-06 02:", b"12-06 03:")
        .replace(b"12-06 03:0", b"12-06 04:0")
        .replace(b"CPU KV cache size: 131,072 tokens", b"CPU KV cache size: 131,008 tokens")
    )
    log = tmp_path / "nohup.out"
    log.write_bytes(e01)
    assert once(db_path, log).exit_code == 0
    with open(log, "ab") as f:
        f.write(again)
    res = once(db_path, log)
    diff = run(db_path, "diff", "last", "prev")
    assert res.exit_code == diff.exit_code == 3, (res.output, diff.output)
    assert re.search(r"boot #2 DRIFT: against #1: 0 violation\(s\), [1-9]\d* drift", res.stdout), res.stdout


def test_a_crash_loop_read_at_once_says_50_verdicts_then_counts(db_path, tmp_path):
    # 60 failed starts (e05 again and again, a minute apart): exit 4, 50 verdict lines, one count
    e05 = (ENGINE / "e05-v0.32.0-cpu-fail-max-model-len.log").read_bytes()
    assert e05.count(b"12-06 03:13:") > 3 and b"12-06 04:" not in e05
    log = tmp_path / "loop.log"
    log.write_bytes(
        b"".join(e05.replace(b"12-06 03:13:", f"12-06 {4 + i // 60:02d}:{i % 60:02d}:".encode()) for i in range(60))
    )
    res = once(db_path, log)
    assert res.exit_code == 4, res.output
    said = [ln for ln in res.stdout.splitlines() if " FAILED: boot failed: value_error" in ln]
    assert len(said) == 50 and said[0].startswith(f"{log} boot #1 FAILED")
    assert res.stdout.splitlines()[-1] == f"{log} boots #51-#60: … and 10 more not OK (bootlog list)"
