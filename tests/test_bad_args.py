"""Mistakes a user makes in arguments and plan files: each is one clear line and a meaningful
exit code, never an internal error, and never a silent fallback (real fixture log 012)."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from bootlog.cli import cli
from paths import FIXTURES

LOG = FIXTURES / "012-v0.10.2-v1-small.log"


def run(db, *args):
    return CliRunner().invoke(cli, ["--db", str(db), *args], catch_exceptions=False)


@pytest.fixture
def stored(db_path):
    assert run(db_path, "ingest", str(LOG)).exit_code == 0
    return db_path


@pytest.mark.parametrize(
    "content, says",
    [
        (b"\xff\xfe[tolerance]\n", "not UTF-8"),
        (b'[tolerance]\nmin_pct = "a"\n', "[tolerance] min_pct: expected a number"),
        (b"config = 5\n", "config: expected a table"),
        (b'[metrics.kv_cache_tokens]\nmin = 1\nhard = "false"\n', "expected true or false"),
        (b"[metrics.kv_cache_tokens]\nmin = [1]\n", "min: expected a number or a figure/config name"),
    ],
)
def test_a_plan_of_the_wrong_shape_is_a_plan_error(stored, tmp_path, content, says):
    plan = tmp_path / "p.toml"
    plan.write_bytes(content)
    r = run(stored, "check", "last", "--plan", str(plan))
    assert r.exit_code == 1, r.output
    assert "internal error" not in r.stderr and says in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize(
    "ref, says, code",
    [
        ("99999999999999999999", "no boot with id", 1),  # well formed, names no stored boot: as a missing file
        ("last~99999999999999999999", "no boot matches", 1),
        ("\u00b2", "not a boot reference", 2),  # spelt as no REF at all: a usage error (README's exit codes)
        ("\uff11", "not a boot reference", 2),  # a fullwidth 1 is no id 1
        ("lsat", "not a boot reference", 2),
        # over Python's 4,300-digit int limit: "internal error: ValueError: Exceeds the limit"
        ("1" * 5000, "not a boot reference: '111111111111111111111111111111'… (5,000 characters)", 2),
        ("last~" + "9" * 5000, "not a boot reference: 'last~9999999999999999999999999'… (5,005 characters)", 2),
        ("prev~" + "9" * 5000, "not a boot reference", 2),
    ],
)
def test_odd_boot_references_are_one_line_errors(stored, tmp_path, ref, says, code):
    plan = tmp_path / "ok.toml"
    plan.write_text("[metrics.kv_cache_tokens]\nmin = 1\n")
    for cmd in (["show", ref], ["diff", ref, "last"], ["check", ref, "--plan", str(plan)], ["explain", ref]):
        r = run(stored, *cmd)
        assert r.exit_code == code and says in r.stderr and "internal error" not in r.stderr, (cmd, r.stderr)
        assert len(r.stderr.splitlines()) == 1 and len(r.stderr) < 200  # (one short line, whatever the REF)


def test_the_cli_contract_gives_a_bad_ref_the_code_bootlog_exits_with():
    from paths import ROOT

    table = (ROOT / "docs" / "cli.md").read_text().split("## Exit codes", 1)[1].split("\n\n", 1)[0]
    usage = next(row for row in table.splitlines() if row.startswith("| 2 |"))
    error = next(row for row in table.splitlines() if row.startswith("| 1 |"))
    assert "REF" in usage and "last~N" in usage and "names no stored boot" in error


@pytest.mark.parametrize("content", ["", "# nothing yet\n", "[tolerance]\nk = 2\n", "[boot]\nhard = true\n"])
def test_a_plan_that_holds_no_expectation_is_a_plan_error(stored, tmp_path, content):
    plan = tmp_path / "empty.toml"
    plan.write_text(content)
    for cmd in (["check", "last"], ["diff"], ["report"]):
        r = run(stored, *cmd, "--plan", str(plan))
        assert r.exit_code == 1, (cmd, r.output)
        assert "holds no expectation" in r.stderr and len(r.stderr.strip().splitlines()) == 1
    # ingest --plan only runs its patterns: nothing to judge, nothing said
    assert run(stored, "ingest", str(FIXTURES / "012-v0.10.2-v1-small.log"), "--plan", str(plan)).exit_code == 0


def test_an_env_file_given_as_the_plan_says_so(stored):
    env = FIXTURES.parent / "plans" / "frank-primary.env"
    r = run(stored, "check", "last", "--plan", str(env))
    assert r.exit_code == 1
    assert "reads like an env file" in r.stderr and 'env_file = "frank-primary.env"' in r.stderr, r.stderr


def test_hook_json_mode_answers_a_bad_plan_on_stdout(db_path, tmp_path):
    plan = tmp_path / "bad.toml"
    plan.write_text("x = [\n")
    r = run(db_path, "hook", "--container", "c1", "--plan", str(plan), "--format", "json")
    assert r.exit_code == 1
    got = json.loads(r.stdout)
    assert got["verdict"] == "ERROR" and "bad TOML" in got["notes"][0]


def test_an_empty_db_is_a_usage_error_not_the_default_database(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("XDG_DATA_HOME", raising=False)
    r = CliRunner().invoke(cli, ["--db", "", "ingest", str(LOG)])
    assert r.exit_code == 2 and "--db is empty" in r.output
    assert not (tmp_path / ".local").exists()


def test_a_relative_xdg_data_home_is_ignored(tmp_path, monkeypatch):
    from bootlog.store.where import default_path

    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("XDG_DATA_HOME", "rel/data")
    assert default_path() == str(tmp_path / ".local" / "share" / "bootlog" / "bootlog.db")
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "abs"))
    assert default_path() == str(tmp_path / "abs" / "bootlog" / "bootlog.db")


def test_a_hard_bound_naming_what_the_boot_lacks_is_a_violation(stored, tmp_path):
    plan = tmp_path / "s.toml"
    # a vLLM argument this boot's log never printed: nothing to hold the figure to
    plan.write_text('[metrics.kv_cache_tokens]\nmin = "kv_cache_memory_bytes"\nhard = true\n')
    r = run(stored, "check", "last", "--plan", str(plan))
    assert r.exit_code == 4 and "kv_cache_memory_bytes" in r.stdout and "cannot be checked" in r.stdout
    plan.write_text('[metrics.kv_cache_tokens]\nmin = "kv_cache_memory_bytes"\n')  # soft: too little to say
    assert run(stored, "check", "last", "--plan", str(plan)).exit_code == 0
    plan.write_text('[metrics.kv_cache_tokens]\nmin = "max_model_len"\nhard = true\n')  # the real key
    assert run(stored, "check", "last", "--plan", str(plan)).exit_code == 0
    # a misspelt key is the plan's mistake, said at load with the key it meant
    plan.write_text('[metrics.kv_cache_tokens]\nmin = "max_model_lenn"\nhard = true\n')
    r = run(stored, "check", "last", "--plan", str(plan))
    assert r.exit_code == 1 and "did you mean max_model_len?" in r.output


def test_a_plan_event_names_the_builtin_warning_of_a_boot_stored_without_the_plan(db_path, tmp_path):
    # the seed's "expert-offload-mem … exceeds MemAvailable at plan time" is a built-in warning
    # (what: offload_exceeds_memavailable) and a [[pattern]] event of frank-primary.toml: a boot
    # ingested or watched without --plan must not pass `offload_exceeds_memavailable = {max = 0}`
    src = FIXTURES / "seed" / "04-shape-g-kv-400700-no-prefix-cache.log"
    lines = src.read_text().split("\n")
    stamp = lines[185].split(" ", 1)[0]
    lines.insert(186, f"{stamp} expert-offload-mem \u2026 exceeds MemAvailable at plan time")
    log = tmp_path / "mem.log"
    log.write_text("\n".join(lines))
    assert run(db_path, "ingest", str(log)).exit_code == 0
    plan = FIXTURES.parent / "plans" / "frank-primary.toml"
    r = run(db_path, "check", "last", "--plan", str(plan), "--json")
    got = [f for f in json.loads(r.stdout)["findings"] if f["key"] == "offload_exceeds_memavailable"]
    assert [(f["new"], f["verdict"]) for f in got] == [(1, "violation")]
    assert r.exit_code == 4


def test_explain_of_a_stored_boot_with_a_plan_says_the_plan_cannot_apply(stored):
    plan = FIXTURES.parent / "plans" / "frank-primary.toml"
    r = run(stored, "explain", "last", "--plan", str(plan))
    assert r.exit_code == 2 and "re-ingest" in r.output
    assert run(stored, "explain", str(LOG), "--plan", str(plan)).exit_code == 0  # a log file: applied


def test_a_plan_may_bound_a_warning_by_what_it_warns_of(stored, tmp_path):
    plan = tmp_path / "w.toml"
    plan.write_text("[events]\narg_overridden = { max = 0, hard = true }\ngeneration_config_override = { max = 5 }\n")
    r = run(stored, "check", "last", "--plan", str(plan), "--json")
    assert r.exit_code == 0, r.output
    keys = {f["key"]: f["verdict"] for f in json.loads(r.stdout)["findings"]}
    assert keys["arg_overridden"] == "same" and keys["generation_config_override"] == "same"
    plan.write_text("[events]\narg_overridn = { max = 0 }\n")  # a typo is still one error line
    r = run(stored, "check", "last", "--plan", str(plan))
    assert r.exit_code == 1 and "unknown event kind 'arg_overridn'" in r.stderr


@pytest.mark.parametrize(
    "args",
    [
        ("check", "last", "--plan", ""),
        ("diff", "last", "last", "--plan", "  "),
        ("ingest", str(LOG), "--plan", ""),
        ("hook", "--container", "x", "--plan", ""),
    ],
)
def test_an_empty_plan_is_a_usage_error_not_a_run_without_it(stored, args):
    # `--plan "$PLAN"` with PLAN unset: check crashed, diff and hook reported OK unchecked
    r = run(stored, *args)
    assert r.exit_code == 2, r.output
    assert "--plan" in r.stderr and "is empty" in r.stderr


@pytest.mark.parametrize(
    "plan_text, says",
    [
        (None, "not a regular file"),  # --plan /dev/zero
        ('env_file = "/dev/urandom"\n', "not a regular file"),
        ("[metrics.kv_cache_tokens]\nmin = nan\n", "finite number"),
        ("[metrics.kv_cache_tokens]\napprox = inf\n", "finite number"),
        ("[events]\noom = -1\n", "cannot be negative"),
    ],
)
def test_a_plan_that_is_a_device_or_holds_nan_is_one_line(stored, tmp_path, plan_text, says):
    plan = "/dev/zero"
    if plan_text is not None:
        plan = tmp_path / "p.toml"
        plan.write_text(plan_text)
    r = run(stored, "check", "last", "--plan", str(plan))
    assert r.exit_code == 1, r.output
    assert says in r.stderr and len(r.stderr.strip().splitlines()) == 1


def test_a_fifo_plan_does_not_block(stored, tmp_path):
    import os

    fifo = tmp_path / "plan.fifo"
    os.mkfifo(fifo)
    r = run(stored, "check", "last", "--plan", str(fifo))
    assert r.exit_code == 1 and "not a regular file" in r.stderr


@pytest.mark.parametrize(
    "args",
    [
        ("hook", "--container", "x", "--timeout", "nan"),
        ("hook", "--container", "x", "--poll", "nan"),
        ("watch", "--file", str(LOG), "--poll", "nan"),
    ],
)
def test_nan_seconds_are_a_usage_error(db_path, args):
    r = run(db_path, *args)
    assert r.exit_code == 2 and "finite number of seconds" in r.stderr, r.output


@pytest.mark.parametrize("tool, name", [("xz", "xz"), ("bzip2", "bzip2"), ("zstd", "zstd")])
def test_a_log_compressed_other_than_gzip_is_said_so(db_path, tmp_path, tool, name):
    import shutil
    import subprocess

    if shutil.which(tool) is None:
        pytest.skip(f"{tool} not installed")
    packed = subprocess.run([tool, "-c"], input=LOG.read_bytes(), capture_output=True, check=True).stdout
    path = tmp_path / "vllm.log.packed"
    path.write_bytes(packed)
    for r in (
        run(db_path, "ingest", str(path)),
        CliRunner().invoke(cli, ["--db", db_path, "ingest", "-"], input=packed),
    ):
        assert r.exit_code == 1, r.output
        assert f"{name}-compressed" in r.stderr and f"{tool} -dc" in r.stderr


def test_a_foreign_sqlite_file_with_a_table_named_like_ours_is_left_alone(tmp_path):
    import sqlite3

    other = tmp_path / "app.db"
    con = sqlite3.connect(other)
    con.execute("CREATE TABLE sources (url TEXT)")
    con.commit()
    con.close()
    before = other.read_bytes()
    for args in (("list",), ("ingest", str(LOG))):
        r = run(other, *args)
        assert r.exit_code == 1 and "is not a bootlog database" in r.stderr, r.output
    assert other.read_bytes() == before


def test_an_output_that_cannot_be_written_is_one_line(stored):
    r = run(stored, "report", "-o", "/dev/full")
    assert r.exit_code == 1, r.output
    assert "internal error" not in r.stderr and "No space left on device" in r.stderr


def test_watch_refuses_a_compressed_file_it_cannot_follow(db_path, tmp_path):
    import gzip

    gz = tmp_path / "vllm.log.gz"
    gz.write_bytes(gzip.compress(LOG.read_bytes()))
    r = run(db_path, "watch", "--once", "--file", str(gz))
    assert r.exit_code == 1, r.output  # (it stored nothing and said nothing, exit 0)
    assert "gzip-compressed" in r.stderr and f"bootlog ingest {gz}" in r.stderr


def test_explain_of_a_ref_spelling_is_the_stored_boot_even_beside_such_a_file(stored, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "last").write_text("")
    (tmp_path / "1").write_text("")
    for ref in ("last", "1"):
        r = run(stored, "explain", ref, "--json")
        assert r.exit_code == 0, r.output
        assert json.loads(r.stdout)["boots"], ref  # the stored boot, not the empty file
    r = run(stored, "explain", "./last", "--json")
    assert r.exit_code == 0 and json.loads(r.stdout)["boots"] == []
