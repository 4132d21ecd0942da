"""Plan files: TOML + env file, expansion, user patterns, and errors that name the line."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from bootlog.errors import Exit, PlanError
from bootlog.judge.plan import load_plan
from bootlog.parse.userpatterns import apply_user_patterns, user_pattern_hits
from bootlog.read.envfile import coerce, load_env
from bootlog.records import Event, Metric, Record

ROOT = Path(__file__).resolve().parent.parent

# Lines copied verbatim from the operator's frank-primary.env (seed 004): comments, quotes,
# empty values (flag absent), JSON in single quotes, a float law.
ENV_TEXT = """\
# frank-primary.env — tcclaviger RDNA4 vLLM production config (dankserver :7770).
#
FRANK_PRIMARY_CONTAINER=frank-primary-qwen
FRANK_PRIMARY_PUBLISH=7770:7770
FRANK_PRIMARY_LEGACY_CONTAINERS="frank-primary-r9v qwen-fp8"
FRANK_PRIMARY_PRECISE_MEMORY=1
FRANK_PRIMARY_MAXLEN=200704
FRANK_PRIMARY_SEQS=3
FRANK_PRIMARY_KV_BYTES=3166500000
FRANK_PRIMARY_KV_DTYPE=fp8
FRANK_PRIMARY_MNBT=2048
FRANK_PRIMARY_NO_PREFIX_CACHING=1
FRANK_PRIMARY_UTIL=0.982
FRANK_PRIMARY_CUDAGRAPH_BASE_MB=0
FRANK_PRIMARY_SPEC=
FRANK_PRIMARY_CHAT_TEMPLATE_KWARGS='{"enable_thinking": true, "preserve_thinking": true}'
export KV_FLOOR=400700   # Frank, 2026-10-03
"""

PLAN_TEXT = """\
env_file = "frank-primary.env"
env_prefix = "FRANK_PRIMARY_"

[config]
max_model_len = "${MAXLEN}"
max_num_seqs = "${SEQS}"
kv_cache_dtype = "${KV_DTYPE}"
gpu_memory_utilization = "${UTIL}"
expert_precise_memory = true
served_model_name = "${CONTAINER}-served"

[metrics.kv_cache_tokens]
min = "${KV_FLOOR}"
hard = true

[metrics.graph_capture_gib]
max = "cudagraph_estimate_gib"

[events]
oom = { max = 0, hard = true }
gdn_hip_fault = 0

[boot]
status = "ready"
boot_to_ready_s = { max = 900 }
compile_cache = "warm"

[[pattern]]
name = "expert_arena_gib"
regex = 'arena (?P<value>[\\d.]+) GiB'
unit = "GiB"
samples = [{ line = "MEASURED on the live deploy: arena 17.77 GiB / 7,762 slots", value = 17.77 }]
"""


def write_plan(tmp_path: Path, plan: str = PLAN_TEXT, env: str = ENV_TEXT) -> Path:
    (tmp_path / "frank-primary.env").write_text(env)
    p = tmp_path / "frank-primary.toml"
    p.write_text(plan)
    return p


def test_env_file_reads_the_operators_lines(tmp_path):
    (tmp_path / "e.env").write_text(ENV_TEXT)
    env = load_env(tmp_path / "e.env")
    assert env["FRANK_PRIMARY_MAXLEN"] == 200704
    assert env["FRANK_PRIMARY_UTIL"] == 0.982
    assert env["FRANK_PRIMARY_SPEC"] is None  # "unset == the flag is absent"
    assert env["FRANK_PRIMARY_LEGACY_CONTAINERS"] == "frank-primary-r9v qwen-fp8"
    assert env["FRANK_PRIMARY_CHAT_TEMPLATE_KWARGS"] == '{"enable_thinking": true, "preserve_thinking": true}'
    assert env["FRANK_PRIMARY_PUBLISH"] == "7770:7770"
    assert env["KV_FLOOR"] == 400700  # `export ` and an inline comment


def test_coerce():
    assert [coerce(s) for s in ("1", "0.982", "true", "False", "", "fp8", "1e9")] == [
        1,
        0.982,
        True,
        False,
        None,
        "fp8",
        1e9,
    ]


def test_plan_expands_prefixed_and_plain_names(tmp_path):
    plan = load_plan(write_plan(tmp_path))
    assert plan.config["max_model_len"] == 200704
    assert plan.config["max_num_seqs"] == 3
    assert plan.config["kv_cache_dtype"] == "fp8"
    assert plan.config["gpu_memory_utilization"] == 0.982
    assert plan.config["served_model_name"] == "frank-primary-qwen-served"  # text substitution
    assert plan.metrics["kv_cache_tokens"].min == 400700 and plan.metrics["kv_cache_tokens"].hard
    assert plan.metrics["graph_capture_gib"].max == "cudagraph_estimate_gib"
    assert plan.events["gdn_hip_fault"].max == 0 and not plan.events["gdn_hip_fault"].hard
    assert plan.events["oom"].hard
    assert plan.boot == {"status": "ready", "compile_cache": "warm"}
    assert plan.boot_metrics["boot_to_ready_s"].max == 900
    assert [p.name for p in plan.patterns] == ["expert_arena_gib"]


def _error(tmp_path, plan_text: str, env: str = ENV_TEXT) -> PlanError:
    with pytest.raises(PlanError) as info:
        load_plan(write_plan(tmp_path, plan_text, env))
    assert info.value.exit == Exit.ERROR
    return info.value


def test_bad_toml_names_the_line(tmp_path):
    err = _error(tmp_path, "[config]\nmax_model_len = 200704\nbroken = \n")
    assert "line 3" in str(err)


def test_unknown_figure_names_line_and_key(tmp_path):
    err = _error(tmp_path, "[metrics.kv_cache_tokens]\nmin = 1\n\n[metrics.kv_tokens]\nmin = 400700\n")
    assert "line 4" in str(err) and "kv_tokens" in str(err)
    assert err.data["key"] == "kv_tokens"


def test_user_pattern_name_is_a_known_figure(tmp_path):
    plan = load_plan(write_plan(tmp_path, PLAN_TEXT + "\n[metrics.expert_arena_gib]\nmin = 17.0\n"))
    assert plan.metrics["expert_arena_gib"].min == 17.0


def test_unknown_event_kind(tmp_path):
    err = _error(tmp_path, "[events]\noom = 0\nhip_fault = 0\n")
    assert "hip_fault" in str(err) and "line 3" in str(err)


def test_undefined_variable(tmp_path):
    err = _error(
        tmp_path,
        'env_file = "frank-primary.env"\nenv_prefix = "FRANK_PRIMARY_"\n[config]\nmax_model_len = "${MAX_LEN}"\n',
    )
    assert "MAX_LEN" in str(err) and "FRANK_PRIMARY_MAX_LEN" in str(err)


def test_regex_that_does_not_compile(tmp_path):
    err = _error(
        tmp_path,
        "[[pattern]]\nname = \"arena\"\nregex = 'arena (?P<value>[\\d.]+ GiB'\nsamples = ['arena 17.77 GiB']\n",
    )
    assert "does not compile" in str(err) and "arena" in str(err)


def test_regex_that_fails_its_own_sample(tmp_path):
    err = _error(
        tmp_path,
        "[[pattern]]\nname = \"arena\"\nregex = 'arena (?P<value>[\\d.]+) GiB'\n"
        "samples = [{ line = 'arena 17.77 GiB', value = 17.5 }]\n",
    )
    assert "gives 17.77" in str(err) and "line 2" in str(err)
    err = _error(
        tmp_path, "[[pattern]]\nname = \"arena\"\nregex = 'arena (?P<value>[\\d.]+) GiB'\nsamples = ['slots 7,762']\n"
    )
    assert "does not match" in str(err)


def test_figure_pattern_needs_value_group(tmp_path):
    err = _error(
        tmp_path, "[[pattern]]\nname = \"arena\"\nregex = 'arena [\\d.]+ GiB'\nsamples = ['arena 17.77 GiB']\n"
    )
    assert "(?P<value>" in str(err)


def test_runaway_regex_is_stopped_at_load(tmp_path):
    sample = "a" * 3000 + "!"
    started = time.monotonic()
    err = _error(
        tmp_path, f"[[pattern]]\nname = \"bad\"\nevent = \"warning\"\nregex = '(a|aa)+$'\nsamples = ['{sample}']\n"
    )
    assert "timed out" in str(err)
    assert time.monotonic() - started < 5


def test_user_pattern_hits_and_apply(tmp_path):
    plan = load_plan(
        write_plan(
            tmp_path,
            PLAN_TEXT
            + """
[[pattern]]
name = "expert_offload_exceeds"
event = "warning"
literal = "exceeds MemAvailable"
regex = 'expert-offload-mem (?P<gib>[\\d.]+) GiB exceeds MemAvailable'
samples = ['WARNING 10-05 08:00:01 [expert_plan.py:88] expert-offload-mem 120 GiB exceeds MemAvailable at plan time']
""",
        )
    )
    hits = user_pattern_hits(plan, "(Worker_TP1 pid=7) INFO expert arena 17.52 GiB / 7,653 slots")
    assert len(hits) == 1 and isinstance(hits[0], Metric)
    assert (hits[0].name, hits[0].value, hits[0].unit, hits[0].pattern) == (
        "expert_arena_gib",
        17.52,
        "GiB",
        "user:expert_arena_gib",
    )
    assert hits[0].line is None  # one line in: the caller numbers it

    recs = [
        Record(lineno=10, text="INFO expert arena 17.77 GiB / 7,762 slots"),
        Record(lineno=11, text="nothing here"),
        Record(lineno=12, text="WARNING expert-offload-mem 120 GiB exceeds MemAvailable at plan time"),
    ]
    rows = apply_user_patterns(plan, recs)
    assert [(type(r).__name__, r.line) for r in rows] == [("Metric", 10), ("Event", 12)]
    assert isinstance(rows[1], Event) and rows[1].kind == "warning" and rows[1].detail == {"gib": "120"}


# a regex that backtracks catastrophically on "7xxxx...x" (no "y"), yet matches its sample
SLOW_PLAN = """
[[pattern]]
name = "slow"
regex = '^(?P<value>\\d+)(x+x+)+y'
samples = [{ line = '7xxy', value = 7 }]
"""


def test_user_pattern_timeout_at_ingest_skips_the_line(tmp_path):
    plan = load_plan(write_plan(tmp_path, SLOW_PLAN))
    started = time.monotonic()
    assert user_pattern_hits(plan, "7" + "x" * 5000) == []
    assert time.monotonic() - started < 5


def test_a_runaway_pattern_is_dropped_after_three_lines(tmp_path, capsys):
    # 0.25 s on every matching line of a big log is hours: after 3 runaways it is used no more
    plan = load_plan(write_plan(tmp_path, SLOW_PLAN))
    for _ in range(20):
        assert user_pattern_hits(plan, "7" + "x" * 5000) == []
    assert plan.patterns[0].timeouts == 3  # (not 20: the other 17 lines never ran it)
    err = capsys.readouterr().err
    assert err.count("plan pattern 'slow' ran past 0.25 s on 3 lines") == 1
    assert user_pattern_hits(plan, "7xxy") == []  # dropped, even where it would match


def test_shipped_plan_loads():
    plan_file = ROOT / "fixtures" / "plans" / "frank-primary.toml"
    if not plan_file.exists():
        pytest.skip("fixtures/plans/frank-primary.toml not composed yet")
    plan = load_plan(plan_file)
    assert plan.config["max_model_len"] == 200704
    assert "kv_cache_tokens" in plan.metrics


def test_env_values_refer_to_earlier_keys_like_the_shell(tmp_path):
    (tmp_path / "e.env").write_text(
        "FRANK_PRIMARY_CACHE_DIR=/home/dank/.cache/frank-primary\n"
        'FRANK_PRIMARY_VLLM_CACHE="${FRANK_PRIMARY_CACHE_DIR}/vllm"\n'
        "FRANK_PRIMARY_LITERAL='${FRANK_PRIMARY_CACHE_DIR}'\n"
    )
    env = load_env(tmp_path / "e.env")
    assert env["FRANK_PRIMARY_VLLM_CACHE"] == "/home/dank/.cache/frank-primary/vllm"
    assert env["FRANK_PRIMARY_LITERAL"] == "${FRANK_PRIMARY_CACHE_DIR}"


def test_undefined_variable_names_its_line(tmp_path):
    err = _error(
        tmp_path,
        'env_file = "frank-primary.env"\nenv_prefix = "FRANK_PRIMARY_"\n'
        '[config]\nmax_num_seqs = 3\nmax_model_len = "${MAX_LEN}"\n',
    )
    assert "line 5" in str(err) and err.data["line"] == 5


def test_bad_env_line(tmp_path):
    err = _error(tmp_path, 'env_file = "frank-primary.env"\n', env=ENV_TEXT + "this is not an assignment\n")
    assert "not KEY=VALUE" in str(err) and f"line {ENV_TEXT.count(chr(10)) + 1}" in str(err)


def test_user_regex_keeps_its_dollar_and_braces(tmp_path):
    plan = load_plan(
        write_plan(
            tmp_path,
            """
[[pattern]]
name = "arena_slots"
regex = '(?P<value>\\d{1,3}(?:,\\d{3})*) slots \\(\\d+\\.\\d+ MiB each\\)$'
unit = "slots"
samples = [{ line = "expert cache 17.77 GiB / 7,762 slots (2.344 MiB each)", value = 7762 }]
""",
        )
    )
    assert plan.patterns[0].source.endswith(r"each\)$")


def test_an_empty_env_value_in_a_flag_or_tolerance_means_the_default(tmp_path):
    # STRICT= and TOL= in the env file are unset: hard is false, tol its default, as before
    plan = load_plan(
        write_plan(
            tmp_path,
            'env_file = "frank-primary.env"\n'
            '[metrics.kv_cache_tokens]\nmin = 1000\nhard = "${STRICT}"\n'
            'tol = "${TOL}"\n',
            env=ENV_TEXT + "STRICT=\nTOL=\n",
        )
    )
    ex = plan.metrics["kv_cache_tokens"]
    assert ex.hard is False and ex.tol == 0.01
    err = _error(tmp_path, '[metrics.kv_cache_tokens]\nmin = 1000\nhard = "yes"\n')
    assert "expected true or false" in str(err)


def test_a_plans_own_patterns_run_on_a_boot_stored_without_the_plan(tmp_path):
    # shape G was ingested without --plan: check --plan reads its lines again for the plan's
    # [[pattern]]s; once the file is gone their figures and events are "?", never a pass
    import json as _json
    import shutil

    from click.testing import CliRunner

    from bootlog.cli import cli
    from paths import FIXTURES

    log = tmp_path / "shape-g.log"
    shutil.copy(FIXTURES / "seed" / "04-shape-g-kv-400700-no-prefix-cache.log", log)
    plan = FIXTURES.parent / "plans" / "frank-primary.toml"
    db = str(tmp_path / "p.db")

    def check():
        res = CliRunner().invoke(cli, ["--db", db, "check", "last", "--plan", str(plan), "--json"])
        return res.exit_code, {f["key"]: f for f in _json.loads(res.stdout)["findings"]}

    assert CliRunner().invoke(cli, ["--db", db, "ingest", str(log)]).exit_code == 0
    code, by = check()
    assert by["expert_arena_gib"]["new"] == 17.77 and by["expert_arena_gib"]["verdict"] == "same"
    assert by["expert_arena_slots"]["new"] == 7762
    assert by["offload_exceeds_memavailable"]["verdict"] == "same"  # looked for, not seen
    log.unlink()
    code, by = check()
    for key in ("expert_arena_gib", "expert_arena_slots"):
        assert by[key]["verdict"] == "insufficient_history"
        assert by[key]["why"].startswith("source no longer readable")
    # a hard bound on a pattern's event that was never looked for is not met
    assert by["offload_exceeds_memavailable"]["verdict"] == "violation" and code == 4
    assert "source no longer readable" in by["offload_exceeds_memavailable"]["why"]
    text = CliRunner().invoke(cli, ["--db", db, "check", "last", "--plan", str(plan)]).stdout
    assert "? expert_arena_gib" in text


def test_diff_and_the_report_read_a_plans_own_patterns_on_both_boots(tmp_path):
    # shapes F and G stored without --plan: `diff --plan` read the plan's patterns on the new
    # boot only, so the arena F printed too was "new" (None -> 17.77); both sides read alike
    import json as _json
    import re as _re

    from click.testing import CliRunner

    from bootlog.cli import cli
    from paths import FIXTURES

    plan = str(FIXTURES.parent / "plans" / "frank-primary.toml")
    db = str(tmp_path / "p.db")
    for name in ("03-shape-f-mnbt2048-graph-pinned.log", "04-shape-g-kv-400700-no-prefix-cache.log"):
        assert CliRunner().invoke(cli, ["--db", db, "ingest", str(FIXTURES / "seed" / name)]).exit_code == 0
    res = CliRunner().invoke(cli, ["--db", db, "diff", "last", "prev", "--plan", plan, "--json"])
    by = {f["key"]: f for f in _json.loads(res.stdout)["findings"]}
    assert (by["expert_arena_gib"]["old"], by["expert_arena_gib"]["new"]) == (17.52, 17.77)
    assert (by["expert_arena_slots"]["old"], by["expert_arena_slots"]["new"]) == (7653, 7762)
    assert by["planner_overhead_gib"]["verdict"] == "same"
    page = CliRunner().invoke(cli, ["--db", db, "report", "--plan", plan]).stdout
    diff_table = page.split("Latest boot against the one before", 1)[1].split("</table>", 1)[0]
    assert "expert_arena_gib" in diff_table and not _re.search(r"expert_arena_gib</td><td>None", diff_table)
