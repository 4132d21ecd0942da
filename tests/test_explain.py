"""explain: every figure traced to its line and catalogue entry; unread marker lines reported."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from bootlog.cli import cli
from bootlog.run.explain import explain_log

ROOT = Path(__file__).resolve().parent.parent
GOLDEN = sorted((ROOT / "fixtures" / "logs").rglob("*.log"))

# Verbatim lines of corpus 012 (v0.10.2, ShanghaoLi0913/memory-aware_RLHF vllm.log), with the
# line that 0.10.2 prints for the KV size replaced by a wording no release has printed (a future
# vLLM): explain must show it as unread instead of dropping it.
LOG = """\
INFO 09-26 05:49:42 [__init__.py:216] Automatically detected platform cuda.
\x1b[1;36m(APIServer pid=85301)\x1b[0;0m INFO 09-26 05:49:46 [api_server.py:1896] vLLM API server version 0.10.2
\x1b[1;36m(APIServer pid=85301)\x1b[0;0m INFO 09-26 05:49:46 [utils.py:328] non-default args: {'model_tag': '/root/autodl-tmp/models/qwen/Qwen2.5-3B', 'host': '0.0.0.0', 'port': 8001, 'model': '/root/autodl-tmp/models/qwen/Qwen2.5-3B', 'max_model_len': 4096}
\x1b[1;36m(EngineCore_DP0 pid=85423)\x1b[0;0m INFO 09-26 05:50:02 [core.py:654] Waiting for init message from front-end.
\x1b[1;36m(EngineCore_DP0 pid=85423)\x1b[0;0m INFO 09-26 05:50:05 [default_loader.py:268] Loading weights took 1.88 seconds
\x1b[1;36m(EngineCore_DP0 pid=85423)\x1b[0;0m INFO 09-26 05:50:06 [gpu_model_runner.py:2392] Model loading took 5.7916 GiB and 2.139076 seconds
\x1b[1;36m(EngineCore_DP0 pid=85423)\x1b[0;0m INFO 09-26 05:50:13 [backends.py:550] Dynamo bytecode transform time: 6.87 s
\x1b[1;36m(EngineCore_DP0 pid=85423)\x1b[0;0m INFO 09-26 05:50:41 [backends.py:215] Compiling a graph for dynamic shape takes 27.35 s
\x1b[1;36m(EngineCore_DP0 pid=85423)\x1b[0;0m INFO 09-26 05:50:43 [monitor.py:34] torch.compile takes 34.22 s in total
\x1b[1;36m(EngineCore_DP0 pid=85423)\x1b[0;0m INFO 09-26 05:50:44 [gpu_worker.py:298] Available KV cache memory: 14.88 GiB
\x1b[1;36m(EngineCore_DP0 pid=85423)\x1b[0;0m INFO 09-26 05:50:44 [kv_cache_utils.py:864] KV cache pool holds 433,456 tokens
\x1b[1;36m(EngineCore_DP0 pid=85423)\x1b[0;0m INFO 09-26 05:50:44 [kv_cache_utils.py:868] Maximum concurrency for 4,096 tokens per request: 105.82x
\x1b[1;36m(APIServer pid=85301)\x1b[0;0m INFO:     Application startup complete.
\x1b[1;36m(EngineCore_DP0 pid=85423)\x1b[0;0m INFO 09-26 05:50:13 [backends.py:539] Using cache directory: /root/.cache/vllm/torch_compile_cache/805b29c3da/rank_0_0/backbone for vLLM's torch.compile
INFO 04-28 16:55:32 model_runner.py:1185] CUDA graphs can take additional 1~3 GiB memory per GPU. If you are running out of memory, consider decreasing `gpu_memory_utilization` or enforcing eager mode.
CUDA Error: out of memory at /workspace/csrc/cumem_allocator.cpp:139
"""


@pytest.fixture
def log(tmp_path) -> Path:
    p = tmp_path / "vllm.log"
    p.write_bytes(LOG.encode())
    return p


def test_figures_carry_line_pattern_and_text(log):
    report = explain_log(log)
    (boot,) = report["boots"]
    figs = {f["name"]: f for f in boot["figures"]}
    assert figs["model_load_gib"]["value"] == pytest.approx(5.7916)
    assert figs["model_load_gib"]["line"] == 6
    assert "Model loading took 5.7916 GiB" in figs["model_load_gib"]["text"]
    assert figs["max_concurrency"]["line"] == 12 and figs["max_concurrency"]["value"] == pytest.approx(105.82)
    for f in boot["figures"]:
        assert f["pattern"], f  # which catalogue entry read it
        assert f["text"] and f["line"] is not None
    assert "kv_cache_tokens" not in figs


def test_unread_marker_line_is_reported(log):
    report = explain_log(log)
    unread = {u["line"]: u for u in report["unmatched"]}
    assert 11 in unread and "KV cache" in unread[11]["marker"]  # (the catalogue literal it resembles)
    assert "KV cache pool holds 433,456 tokens" in unread[11]["text"]
    # lines the catalogue did read are not reported, nor a marker without a quantity (14),
    # nor vLLM's advice (15); a failure line nothing read always is (16, corpus 042's runtime OOM)
    assert not {6, 10, 12, 14, 15} & set(unread)
    if 16 in unread:
        assert unread[16]["marker"] == "out of memory"
    else:
        assert any(e["line"] == 16 for e in report["boots"][0]["events"])


def test_cli_explain_log_text_and_json(log):
    runner = CliRunner()
    res = runner.invoke(cli, ["explain", str(log)], catch_exceptions=False)
    assert res.exit_code == 0
    assert "line 11 [" in res.output and "KV cache pool holds" in res.output
    assert "max_concurrency = 105.82 x" in res.output
    res = runner.invoke(cli, ["explain", str(log), "--json"], catch_exceptions=False)
    data = json.loads(res.output)
    assert [u["line"] for u in data["unmatched"]][:1] == [11]


def test_cli_explain_stored_ref_shows_pattern_column(log, db_path):
    runner = CliRunner()
    res = runner.invoke(cli, ["--db", db_path, "ingest", str(log)], catch_exceptions=False)
    assert res.exit_code == 0, res.output
    res = runner.invoke(cli, ["--db", db_path, "explain", "last", "--json"], catch_exceptions=False)
    assert res.exit_code == 0, res.output
    (boot,) = json.loads(res.output)["boots"]
    in_memory = explain_log(log)["boots"][0]["figures"]
    assert [(f["name"], f["pattern"], f["line"]) for f in boot["figures"]] == [
        (f["name"], f["pattern"], f["line"]) for f in in_memory
    ]


@pytest.mark.parametrize("path", GOLDEN, ids=[p.name for p in GOLDEN])
def test_golden_logs_every_figure_is_traceable(path):
    report = explain_log(path)
    for boot in report["boots"]:
        for f in boot["figures"]:
            if f["pattern"] == "derived" or f["name"] in ("boot_to_ready_s", "kv_margin_tokens", "kv_bytes_per_token"):
                continue
            assert f["pattern"] and f["line"] is not None, f
            assert f["text"] is not None, f


def test_explain_with_plan_runs_user_patterns(tmp_path):
    plan_file = tmp_path / "p.toml"
    plan_file.write_text("""
[[pattern]]
name = "kv_pool_tokens"
regex = 'KV cache pool holds (?P<value>[\\d,]+) tokens'
unit = "tokens"
samples = [{ line = "KV cache pool holds 433,456 tokens", value = 433456 }]
""")
    log = tmp_path / "vllm.log"
    log.write_bytes(LOG.encode())
    res = CliRunner().invoke(cli, ["explain", str(log), "--plan", str(plan_file), "--json"], catch_exceptions=False)
    data = json.loads(res.output)
    (fig,) = [f for f in data["boots"][0]["figures"] if f["name"] == "kv_pool_tokens"]
    assert (fig["value"], fig["line"], fig["pattern"]) == (433456, 11, "user:kv_pool_tokens")
    assert 11 not in [u["line"] for u in data["unmatched"]]  # the user pattern read it


def test_cli_explain_missing_file_is_one_line_error(tmp_path):
    res = CliRunner().invoke(cli, ["explain", str(tmp_path / "gone.log")])
    assert res.exit_code == 1
    assert res.output.strip() == f"bootlog: no such file: {tmp_path / 'gone.log'}"


def test_a_reworded_line_is_found_by_the_catalogue_words(tmp_path):
    """A figure line in a wording no release printed (a future vLLM) is reported, whichever of
    the catalogue's entries it resembles; nothing hand-kept names it."""
    lines = LOG.splitlines()
    lines[4] = lines[4].replace("Loading weights took 1.88 seconds", "Weights loading finished in 1.88 seconds")
    lines[7] = lines[7].replace(
        "Compiling a graph for dynamic shape takes 27.35 s", "Graph compiling for dynamic shape done in 27.35 s"
    )
    p = tmp_path / "future.log"
    p.write_text("\n".join(lines) + "\n")
    unread = {u["line"]: u["marker"] for u in explain_log(p)["unmatched"]}
    assert unread.get(5) == "Loading weights took" and unread.get(8) == "Compiling a graph for"
