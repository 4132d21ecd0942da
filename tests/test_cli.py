"""The command-line contract on real logs: ingest, list, show, refs, --db resolution, bad input."""

from __future__ import annotations

import gzip
import json
import os
import sqlite3
import stat
import subprocess
import sys

import pytest
from click.testing import CliRunner

from bootlog.cli import cli
from paths import FIXTURES

TWO_BOOTS = FIXTURES / "014-v0.10.2-nohup-multiboot.log"  # failed boot, then a ready restart
TP2 = FIXTURES / "005-v0.8.4-v1-tp2.log"


def run(db, *args, input=None):
    res = CliRunner().invoke(cli, ["--db", str(db), *args], input=input, catch_exceptions=False)
    return res


def boot_count(db) -> int:
    if not os.path.exists(db):
        return 0
    with sqlite3.connect(db) as con:
        return con.execute("select count(*) from boots").fetchone()[0]


def test_ingest_prints_one_line_per_boot_and_show_last(db_path):
    res = run(db_path, "ingest", str(TWO_BOOTS))
    assert res.exit_code == 0, res.output
    lines = [l for l in res.stdout.splitlines() if l.startswith("#")]
    assert len(lines) == 2
    assert "failed (value_error)" in lines[0] and "ready" in lines[1]
    shown = json.loads(run(db_path, "show", "last", "--json").stdout)
    assert shown["boot"]["status"] == "ready"
    assert set(shown) >= {"boot", "metrics", "config", "events", "runtime"}
    kv = [m for m in shown["metrics"] if m["name"] == "kv_cache_tokens"]
    assert [m["value"] for m in kv] == [18400] and kv[0]["unit"] == "tokens"
    assert shown["config"]["max_model_len"] == 4096  # numbers render as JSON numbers
    assert shown["config"]["enable_prefix_caching"] is True  # booleans as JSON booleans
    assert shown["runtime"]["stats_lines"] == 37
    prev = json.loads(run(db_path, "show", "prev", "--json").stdout)
    assert prev["boot"]["status"] == "failed" and prev["boot"]["failure"] == "value_error"
    assert prev["boot"]["failure_message"].startswith("ValueError: Free memory on device (13.58/15.99 GiB)")
    same = json.loads(run(db_path, "show", "last~1", "--json").stdout)
    assert same["boot"]["id"] == prev["boot"]["id"]
    text = run(db_path, "show", "last").stdout
    assert "kv_cache_tokens" in text and "18,400" in text


def test_reingest_adds_nothing(db_path, tmp_path):
    assert run(db_path, "ingest", str(TWO_BOOTS)).exit_code == 0
    before = boot_count(db_path)
    res = run(db_path, "ingest", str(TWO_BOOTS))  # same file: resumes at its end
    assert res.exit_code == 0 and "nothing new since line 419" in res.stdout
    copy = tmp_path / "copy.log"
    copy.write_bytes(TWO_BOOTS.read_bytes())
    res = run(db_path, "ingest", str(copy))  # same content elsewhere: fingerprints
    assert res.exit_code == 0 and res.stdout.count("[already stored]") == 2
    assert boot_count(db_path) == before == 2


def test_list_json_newest_last(db_path):
    run(db_path, "ingest", str(TP2), str(TWO_BOOTS))
    boots = json.loads(run(db_path, "list", "--json").stdout)
    assert [b["id"] for b in boots] == sorted(b["id"] for b in boots)
    assert len(boots) == 3
    for key in (
        "id",
        "status",
        "failure",
        "failure_message",
        "vllm_version",
        "engine",
        "model",
        "container",
        "host",
        "source",
        "started_at",
        "ready_at",
        "ended_at",
        "first_line",
        "last_line",
    ):
        assert key in boots[0]


def test_tp2_figures_per_rank(db_path):
    run(db_path, "ingest", str(TP2))
    shown = json.loads(run(db_path, "show", "last", "--json").stdout)
    ranks = sorted(m["rank"] for m in shown["metrics"] if m["name"] == "graph_capture_gib")
    assert len(ranks) == 2 and ranks[0] != ranks[1]


def test_stdin_and_gzip(db_path, tmp_path):
    gz = tmp_path / "log.gz"
    gz.write_bytes(gzip.compress(TP2.read_bytes()))
    assert run(db_path, "ingest", str(gz)).exit_code == 0
    assert boot_count(db_path) == 1
    res = run(db_path, "ingest", "-", input=TP2.read_bytes())
    assert res.exit_code == 0 and "already stored" in res.stdout


def test_bad_ref_is_one_line(db_path):
    run(db_path, "ingest", str(TP2))
    res = run(db_path, "show", "prev")
    assert res.exit_code == 1
    assert len(res.stderr.strip().splitlines()) == 1 and "Traceback" not in res.output


@pytest.mark.parametrize(
    "make, code, says",
    [
        (lambda p: p / "missing.log", 1, "missing.log"),
        (lambda p: p, 1, "directory"),
    ],
)
def test_unreadable_inputs(db_path, tmp_path, make, code, says):
    res = run(db_path, "ingest", str(make(tmp_path)))
    assert res.exit_code == code
    err = res.stderr.strip().splitlines()
    assert len(err) == 1 and says in err[0] and "Traceback" not in res.output


@pytest.mark.parametrize(
    "content",
    [
        b"",
        bytes(range(256)) * 4000,  # binary garbage
        b"\xff\xfe caf\xe9 \x00\x00 not utf-8\n" * 100,
        b"2024-01-01 nginx: GET / 200\n" * 1000,  # another program's log
    ],
)
def test_no_vllm_boot(db_path, tmp_path, content):
    f = tmp_path / "other.log"
    f.write_bytes(content)
    res = run(db_path, "ingest", str(f))
    assert res.exit_code == 0, res.output
    assert f"no vLLM boot found in {f}" in res.stdout
    assert boot_count(db_path) == 0


def test_truncated_gzip_keeps_what_came_before_the_cut_and_a_cut_before_any_boot_stores_nothing(db_path, tmp_path):
    run(db_path, "ingest", str(TP2))
    data = gzip.compress(TWO_BOOTS.read_bytes())
    bad = tmp_path / "cut.log.gz"
    bad.write_bytes(data[: len(data) // 2])
    res = run(db_path, "ingest", str(bad))
    assert res.exit_code == 0 and "Traceback" not in res.output
    assert "truncated gzip: stopped at line" in res.stderr
    assert boot_count(db_path) == 3  # the failed boot, and the restart up to the cut (incomplete)
    head = tmp_path / "head.log.gz"
    head.write_bytes(data[:40])
    res = run(db_path, "ingest", str(head))
    assert res.exit_code == 1 and "truncated" in res.stderr.lower() and "Traceback" not in res.output
    assert boot_count(db_path) == 3


def test_huge_line(db_path, tmp_path):
    f = tmp_path / "huge.log"
    f.write_bytes(b"x" * (10 * 2**20) + b"\n" + TP2.read_bytes())
    res = run(db_path, "ingest", str(f))
    assert res.exit_code == 0, res.output
    assert boot_count(db_path) == 1


def test_missing_podman_and_container(db_path, tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))  # no podman anywhere
    res = run(db_path, "ingest", "--container", "frank-primary-qwen")
    assert res.exit_code == 1 and "podman" in res.stderr and "Traceback" not in res.output
    fake = tmp_path / "podman"
    fake.write_text(
        "#!/bin/sh\necho 'Error: no container with name or ID \"nope\" found: no such container' >&2\nexit 125\n"
    )
    fake.chmod(0o755)
    res = run(db_path, "ingest", "--container", "nope")
    assert res.exit_code == 1 and "nope" in res.stderr and len(res.stderr.strip().splitlines()) == 1


def test_usage_errors_exit_2(db_path):
    assert run(db_path, "ingest").exit_code == 2
    assert run(db_path, "frobnicate").exit_code == 2


def test_db_resolution(tmp_path, monkeypatch):
    env_db = tmp_path / "env.db"
    monkeypatch.setenv("BOOTLOG_DB", str(env_db))
    res = CliRunner().invoke(cli, ["ingest", str(TP2)], catch_exceptions=False)
    assert res.exit_code == 0 and boot_count(env_db) == 1
    assert stat.S_IMODE(os.stat(env_db).st_mode) == 0o600
    monkeypatch.delenv("BOOTLOG_DB")
    res = CliRunner().invoke(cli, ["ingest", str(TP2)], catch_exceptions=False)
    assert res.exit_code == 0
    assert boot_count(tmp_path / "xdg" / "bootlog" / "bootlog.db") == 1


def test_installed_entry_point_runs_from_another_directory(tmp_path):
    # the console script must find its migrations wherever it runs from
    db = tmp_path / "x.db"
    p = subprocess.run(
        [sys.executable, "-m", "bootlog.cli", "--db", str(db), "ingest", str(TP2)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert p.returncode == 0, p.stderr
    assert boot_count(db) == 1


def test_every_command_has_help():
    runner = CliRunner()
    root = runner.invoke(cli, ["--help"])
    assert root.exit_code == 0
    for name in cli.list_commands(None):
        res = runner.invoke(cli, [name, "--help"])
        assert res.exit_code == 0 and "Usage:" in res.output, name
        assert len(res.output.splitlines()) > 3, name


def test_db_in_a_missing_directory_is_an_error_not_a_new_database(tmp_path):
    target = tmp_path / "typo" / "bootlog.db"
    res = CliRunner().invoke(cli, ["--db", str(target), "list"], catch_exceptions=False)
    assert res.exit_code == 1 and f"no database at {target}" in res.stderr
    res = CliRunner().invoke(
        cli, ["--db", str(target), "ingest", str(FIXTURES / "012-v0.10.2-v1-small.log")], catch_exceptions=False
    )
    assert res.exit_code == 1 and "does not exist" in res.stderr
    assert not target.parent.exists()


def test_plan_patterns_apply_in_the_single_read_even_from_stdin(db_path):
    # stdin can be read only once: the plan's own patterns must run in the same pass
    seed = FIXTURES / "seed" / "04-shape-g-kv-400700-no-prefix-cache.log"
    plan = FIXTURES.parent / "plans" / "frank-primary.toml"
    res = run(db_path, "ingest", "-", "--plan", str(plan), input=seed.read_bytes())
    assert res.exit_code == 0, res.output
    shown = json.loads(run(db_path, "show", "last", "--json").stdout)
    user = {m["name"]: m["value"] for m in shown["metrics"] if m["name"].startswith("expert_arena")}
    assert user == {"expert_arena_gib": 17.77, "expert_arena_slots": 7762}


def test_a_boot_whose_engine_died_serving_fails_diff_and_check(db_path, tmp_path):
    # seed 07: ready, then a request OOMs rank 1 and the engine dies (status stays "ready",
    # failure "oom"); against shape G (seed 04) it is "the boot failed": exit 4, not drift's 3
    seed = FIXTURES / "seed"
    for name in ("04-shape-g-kv-400700-no-prefix-cache.log", "07-5x262144-runtime-oom.log"):
        got = run(db_path, "ingest", str(seed / name))
        assert got.exit_code == 0
    assert got.stdout.startswith("#2     ready (oom) ")  # the ingest line says so, as list does
    res = run(db_path, "diff", "2", "1", "--json")
    assert res.exit_code == 4, res.output
    status = [f for f in json.loads(res.stdout)["findings"] if f["key"] == "status"]
    assert [(f["verdict"], f["new"]) for f in status] == [("violation", "ready")]
    assert status[0]["why"].startswith("the engine died serving (oom): ")
    # the same for check, with a plan that says nothing about events or status
    plan = tmp_path / "bare.toml"
    plan.write_text("[config]\nmax_num_seqs = 5\n")
    res = run(db_path, "check", "2", "--plan", str(plan))
    assert res.exit_code == 4, res.output
    assert "engine died serving" in res.stdout


def test_a_json_flag_from_the_env_file_is_checked_as_a_value(db_path, tmp_path):
    # seed: "--default-chat-template-kwargs enables enable_thinking + preserve_thinking", one of
    # the flags a rollback silently dropped.  The env file holds JSON ({"enable_thinking": true,
    # ...}), the log a Python dict ({'enable_thinking': True, ...}): equal; gone: a violation
    plan = FIXTURES.parent / "plans" / "frank-primary.toml"
    log = FIXTURES / "seed" / "04-shape-g-kv-400700-no-prefix-cache.log"
    text = log.read_text()
    entry = "'default_chat_template_kwargs': {'enable_thinking': True, 'preserve_thinking': True}, "
    assert text.count(entry) == 1
    dropped = tmp_path / "04-dropped.log"
    dropped.write_text(text.replace(entry, ""))
    for path, verdict, code in ((log, "same", 0), (dropped, "violation", 4)):
        db = tmp_path / f"{path.stem}.db"
        assert run(db, "ingest", str(path)).exit_code == 0
        res = run(db, "check", "last", "--plan", str(plan), "--json")
        assert res.exit_code == code, res.output
        (row,) = [f for f in json.loads(res.stdout)["findings"] if f["key"] == "default_chat_template_kwargs"]
        assert row["verdict"] == verdict, row


def test_a_change_inside_compilation_config_is_named_and_checkable(tmp_path):
    # seed: "the piecewise cudagraph ladder must contain num_speculative_tokens + 1"
    # (cudagraph_capture_sizes, inside compilation_config, printed with enum members)
    log = FIXTURES / "seed" / "04-shape-g-kv-400700-no-prefix-cache.log"
    text = log.read_text()
    assert text.count("'cudagraph_capture_sizes': [1, 2, 4]") == 1
    wider = tmp_path / "04-wider.log"
    wider.write_text(text.replace("'cudagraph_capture_sizes': [1, 2, 4]", "'cudagraph_capture_sizes': [1, 4, 8, 12]"))
    db = tmp_path / "c.db"
    assert run(db, "ingest", str(log), str(wider)).exit_code == 0
    res = run(db, "diff", "--json")
    config = [
        (f["key"], f["old"], f["new"])
        for f in json.loads(res.stdout)["findings"]
        if f["section"] == "config" and f["verdict"] != "same"
    ]
    assert config == [("compilation_config.cudagraph_capture_sizes", [1, 2, 4], [1, 4, 8, 12])]
    plan = tmp_path / "ladder.toml"
    plan.write_text(
        '[config]\ncudagraph_capture_sizes = [1, 2, 4]\n"compilation_config.max_cudagraph_capture_size" = 4\n'
    )
    assert run(db, "check", "1", "--plan", str(plan)).exit_code == 0
    res = run(db, "check", "2", "--plan", str(plan), "--json")
    assert res.exit_code == 4
    rows = {f["key"]: f["verdict"] for f in json.loads(res.stdout)["findings"]}
    assert rows["cudagraph_capture_sizes"] == "violation"
    assert rows["compilation_config.max_cudagraph_capture_size"] == "same"


@pytest.mark.parametrize("cmd", [("diff",), ("check", "--plan", "x.toml")])
def test_json_and_markdown_together_is_a_usage_error(db_path, cmd):
    res = run(db_path, *cmd, "--json", "--markdown")
    assert res.exit_code == 2 and "choose --json or --markdown, not both" in res.output


def test_a_fifo_path_is_read_once_like_stdin(db_path, tmp_path):
    # `bootlog ingest <(zcat x.gz)`: a FIFO has no size and cannot be opened twice (it hung on a
    # second open, or read nothing)
    import threading

    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    data = TWO_BOOTS.read_bytes()

    def write() -> None:
        with open(fifo, "wb") as f:
            f.write(data)

    threading.Thread(target=write, daemon=True).start()
    res = run(db_path, "ingest", str(fifo))
    assert res.exit_code == 0, res.output
    assert [l.split()[1] for l in res.stdout.splitlines() if l.startswith("#")] == ["failed", "ready"]
    assert boot_count(db_path) == 2


def test_odd_inputs_are_one_line_not_internal_errors(db_path, tmp_path):
    # a file name that is not UTF-8 (stored with \xNN escapes, and resumed like any other)
    odd = os.path.join(os.fsencode(tmp_path), b"caf\xe9.log")
    with open(odd, "wb") as f:
        f.write(TP2.read_bytes())
    name = os.fsdecode(odd)
    res = run(db_path, "ingest", name)
    assert res.exit_code == 0 and "[new]" in res.stdout, res.output
    assert "nothing new" in run(db_path, "ingest", name).stdout
    listed = json.loads(run(db_path, "list", "--json").stdout)
    assert listed[-1]["source"].endswith("caf\\xe9.log")
    # a journal line whose __REALTIME_TIMESTAMP is past year 9999: no time, the line still counts
    lines = TP2.read_text().splitlines()
    journal = tmp_path / "j.json"
    journal.write_text(
        "\n".join(
            json.dumps(
                {
                    "MESSAGE": line,
                    "__REALTIME_TIMESTAMP": "9" * 25 if i == 0 else str(1_700_000_000_000_000 + i),
                    "PRIORITY": "6",
                }
            )
            for i, line in enumerate(lines)
        )
        + "\n"
    )
    res = run(tmp_path / "j.db", "ingest", str(journal))
    assert res.exit_code == 0 and "[new]" in res.stdout, res.output


def test_one_unreadable_input_of_several_skips_it_and_stores_the_others(db_path, tmp_path):
    bad = tmp_path / "cut.log.gz"
    bad.write_bytes(gzip.compress((FIXTURES / "015-v0.11.0-l4.log").read_bytes())[:300])  # truncated
    paths = [
        str(FIXTURES / "012-v0.10.2-v1-small.log"),
        str(tmp_path / "missing.log"),
        str(bad),
        str(FIXTURES / "015-v0.11.0-l4.log"),
    ]
    r = run(db_path, "ingest", "--json", *paths)
    assert r.exit_code == 1
    got = json.loads(r.stdout)  # what was stored, as JSON, though two inputs failed
    assert [b["source"].rsplit("/", 1)[-1] for b in got] == ["012-v0.10.2-v1-small.log", "015-v0.11.0-l4.log"]
    assert boot_count(db_path) == 2
    assert "missing.log" in r.stderr and "2 of 4 inputs could not be read" in r.stderr
    # alone, an unreadable input is the plain error it was
    r = run(db_path, "ingest", str(tmp_path / "missing.log"))
    assert r.exit_code == 1 and r.stdout == "" and "skipped" not in r.stderr


def test_ingest_of_rotated_logs_stores_the_oldest_first(db_path, tmp_path):
    """`bootlog ingest vllm.log*` gives the newest file first; boots are numbered as stored and
    last/prev follow the numbers, so the files go in the order they were written."""
    import gzip
    import os

    seed = FIXTURES / "seed"
    files = [
        (tmp_path / "vllm.log", (seed / "04-shape-g-kv-400700-no-prefix-cache.log").read_bytes()),
        (tmp_path / "vllm.log.1", (seed / "03-shape-f-mnbt2048-graph-pinned.log").read_bytes()),
        (tmp_path / "vllm.log.2.gz", gzip.compress((seed / "01-shape-d-fp8-200704x3.log").read_bytes())),
    ]
    for age, (path, data) in enumerate(files):
        path.write_bytes(data)
        os.utime(path, (1_800_000_000 - age * 86400,) * 2)
    res = run(db_path, "ingest", *[str(p) for p, _ in files])
    assert res.exit_code == 0, res.output
    last = json.loads(run(db_path, "show", "last", "--json").stdout)["boot"]
    prev = json.loads(run(db_path, "show", "prev", "--json").stdout)["boot"]
    assert last["source"].endswith("vllm.log") and prev["source"].endswith("vllm.log.1")


def test_files_that_quote_log_lines_store_no_boot_and_never_become_last(db_path):
    """The seeds' README quotes `GPU KV cache size: 1,350,182 tokens` in its tables and the
    operator's env file quotes `'expert_precise_memory': True in non-default args`: both were
    stored as incomplete boots (v?, KV 1,350,182; a gdn_hip fault) and became `last`."""
    from pathlib import Path

    g = FIXTURES / "seed" / "04-shape-g-kv-400700-no-prefix-cache.log"
    assert run(db_path, "ingest", str(g)).exit_code == 0
    quoting = [
        FIXTURES / "seed" / "README.md",
        FIXTURES.parent / "plans" / "frank-primary.env",
        *sorted(Path("/work/shared/seeds").glob("004_*.txt")),
    ]
    for path in quoting:
        res = run(db_path, "ingest", str(path))
        assert res.exit_code == 0 and res.stdout == f"no vLLM boot found in {path}\n", res.output
    assert boot_count(db_path) == 1
    assert json.loads(run(db_path, "show", "last", "--json").stdout)["boot"]["vllm_version"].startswith("0.22.1")


USAGE_ERROR = (
    "2026-10-06T15:02:11.204417311Z usage: vllm serve [model_tag] [options]\n"
    "2026-10-06T15:02:11.204417311Z vllm serve: error: unrecognized arguments: --expert-precise-memroy\n"
)


def test_a_run_line_argparse_refuses_is_a_failed_start_that_is_stored(db_path, tmp_path):
    """Shape G, then a redeploy with a misspelt flag: argparse exits 2 before vLLM prints a line
    of its own.  It was "no vLLM boot found", exit 0, nothing stored: it is a failed start."""
    log = tmp_path / "frank-primary-qwen.log"
    log.write_bytes(
        (FIXTURES / "seed" / "04-shape-g-kv-400700-no-prefix-cache.log").read_bytes() + USAGE_ERROR.encode()
    )
    res = run(db_path, "ingest", "--container", "frank-primary-qwen", str(log))
    assert res.exit_code == 0, res.output
    lines = res.stdout.splitlines()
    assert len(lines) == 2 and lines[0].split()[1] == "ready" and lines[1].split()[1:3] == ["failed", "(bad_args)"]
    shown = json.loads(run(db_path, "show", "last", "--json").stdout)["boot"]
    assert (shown["status"], shown["failure"]) == ("failed", "bad_args")
    assert shown["failure_message"] == "vllm serve: error: unrecognized arguments: --expert-precise-memroy"
    assert run(db_path, "diff").exit_code == 4  # the deploy failed
    alone = tmp_path / "alone.log"
    alone.write_text(USAGE_ERROR)
    res = run(db_path, "ingest", str(alone))
    assert res.exit_code == 0 and "failed (bad_args)" in res.stdout, res.output


def test_seqs2_root_cause_keeps_the_line_that_says_why(db_path):
    # torch's ConstraintViolationError says what went wrong on its second, indented line
    assert run(db_path, "ingest", str(FIXTURES / "seed" / "06-seqs2-constraint-violation.log")).exit_code == 0
    shown = json.loads(run(db_path, "show", "last", "--json").stdout)
    assert "specialized it to be a constant (3)" in shown["boot"]["failure_message"]
    tb = [e for e in shown["events"] if e["kind"] == "traceback" and e["message"].startswith("torch.fx")]
    assert tb and all("constant (3)" in e["detail"]["exception_more"][0] for e in tb)
    text = run(db_path, "show", "last").stdout.splitlines()
    at = next(i for i, ln in enumerate(text) if ln.startswith("  root cause"))
    assert "ConstraintViolationError" in text[at] and "constant (3)" in text[at + 1]
