"""The server's own /metrics (server_metrics.py), read from the real text a vLLM 0.32.0 CPU server
served (fixtures/metrics/), checked against prometheus_client's parser and the server's own log."""

from __future__ import annotations

import json
import math
import re

import pytest
from click.testing import CliRunner
from prometheus_client.parser import text_string_to_metric_families

import test_probe as tp
from bootlog.measure import server_metrics
from bootlog.cli import cli
from paths import FIXTURES

METRICS = FIXTURES.parent / "metrics"
TEXT = (METRICS / "vllm-0.32.0-cpu.txt").read_text()
LOG = METRICS / "vllm-0.32.0-cpu.log"


def reference(text: str) -> list[tuple[str, dict, float]]:
    return [(s.name, s.labels, s.value) for fam in text_string_to_metric_families(text) for s in fam.samples]


def test_every_sample_reads_as_prometheus_client_reads_it():
    mine = list(server_metrics.samples(TEXT))
    assert len(mine) == 430 and mine == reference(TEXT)


def test_escaped_label_values_and_odd_lines():
    text = (
        '# HELP x y\nvllm:cache_config_info{a="q\\"uote}, b=\\"1\\"",b="back\\\\slash",c="new\\nline"} 1.0\n'
        'vllm:num_preemptions_total{engine="0"} 2.0 1700000000\n'
        'vllm:num_preemptions_total{engine="1"} NaN\n'
    )
    got, ref = list(server_metrics.samples(text)), reference(text)
    assert got[:2] == ref[:2] and len(got) == len(ref) == 3 and math.isnan(got[2][2]) and math.isnan(ref[2][2])
    assert got[0][1] == {"a": 'q"uote}, b="1"', "b": "back\\slash", "c": "new\nline"}
    assert got[1] == ("vllm:num_preemptions_total", {"engine": "0"}, 2.0)
    # a line no parser reads is skipped, never an exception
    assert list(server_metrics.samples('vllm:x{a="1} 2\nvllm:y{a=1} 3\n{} 4\nvllm:z 5\n')) == [("vllm:z", {}, 5.0)]


def test_the_figures_are_the_servers_and_agree_with_its_log():
    server = server_metrics.read(TEXT)
    ref = reference(TEXT)
    info = next(labels for name, labels, _ in ref if name == "vllm:cache_config_info")

    def total(name: str) -> float:
        return sum(v for n, _, v in ref if n == name)

    assert server.figures == {
        "metrics_num_gpu_blocks": int(info["num_gpu_blocks"]),  # 1024
        "metrics_block_size": int(info["block_size"]),  # 128
        "metrics_kv_cache_tokens": 131072,
        "metrics_requests": total("vllm:request_success_total"),  # 3 (finished_reason="length")
        "metrics_prompt_tokens": total("vllm:prompt_tokens_total"),  # 18
        "metrics_generation_tokens": total("vllm:generation_tokens_total"),  # 48 = 3 x 16
        "metrics_num_preemptions": total("vllm:num_preemptions_total"),  # 0
    }
    assert server.figures["metrics_generation_tokens"] == 48 and server.cache_dtype == info["cache_dtype"] == "auto"
    # the server's own log says the same pool (read by hand: "CPU KV cache size: 131,072 tokens")
    said = re.search(r"KV cache size: ([\d,]+) tokens", LOG.read_text()).group(1)
    assert int(said.replace(",", "")) == server.figures["metrics_kv_cache_tokens"]


def test_a_disagreement_with_the_log_is_one_line_each_and_a_drift_verdict(db_path, tmp_path):
    from bootlog.records import Metric
    from bootlog.store.db import open_store
    from bootlog.store.write import add_measured
    from bootlog.judge.verdict import boot_problem

    assert CliRunner().invoke(cli, ["--db", db_path, "ingest", str(LOG)]).exit_code == 0

    def show() -> dict:
        return json.loads(CliRunner().invoke(cli, ["--db", db_path, "show", "last", "--json"]).stdout)

    server = server_metrics.read(TEXT)
    store = open_store(db_path)
    add_measured(
        store,
        1,
        [Metric(n, v, server_metrics.FIGURES[n][0], pattern="measured:metrics") for n, v in server.figures.items()],
    )
    assert server_metrics.kv_disagreement(show()) is None and boot_problem(show()) is None
    assert server_metrics.dtype_disagreement(server, show()) is None
    other = server_metrics.read(
        TEXT.replace('num_gpu_blocks="1024"', 'num_gpu_blocks="1000"').replace(
            'cache_dtype="auto"', 'cache_dtype="fp8\u202e"'
        )
    )
    add_measured(
        store,
        1,
        [Metric(n, v, server_metrics.FIGURES[n][0], pattern="measured:metrics") for n, v in other.figures.items()],
    )
    store.close()
    said = "/metrics says 1,000 blocks x 128 tokens = 128,000 KV cache tokens; the log says 131,072 (kv_cache_tokens)"
    assert server_metrics.kv_disagreement(show()) == said
    assert boot_problem(show()) == (3, said)  # DRIFT, in every command that judges the boot
    bare = tmp_path / "bare.toml"
    bare.write_text('[boot]\nstatus = "ready"\n')
    check = CliRunner().invoke(cli, ["--db", db_path, "check", "last", "--plan", str(bare)])
    assert check.exit_code == 3 and "128,000 KV cache tokens" in check.stdout, check.output
    dtype = server_metrics.dtype_disagreement(other, show())
    assert dtype.startswith("/metrics says cache_dtype fp8") and dtype.endswith("the log says auto")
    assert "\u202e" not in dtype  # (the server's text, escaped)


def test_the_hook_measures_the_saved_text_from_a_local_server(monkeypatch):
    # the probe's stand-in server answering /metrics with the real text
    from bootlog.run.hook import measure

    monkeypatch.setattr(tp, "METRICS_TEXT", TEXT)
    stub = tp.Stub()
    with tp.serve(stub) as url:
        got = measure(url, served_name=None, tokens=0, gpu_smi="none", timeout=10)
    assert [p for _, p, _ in stub.requests] == ["/health", "/v1/models", "/metrics"]
    stored = {m.name: (m.value, m.unit, m.pattern) for m in got["metrics"] if m.name.startswith("metrics_")}
    assert stored["metrics_kv_cache_tokens"] == (131072, "tokens", "measured:metrics")
    assert stored["metrics_requests"][0] == 3 and stored["metrics_num_preemptions"][0] == 0
    assert got["problems"] == [] and got["notes"] == []


def test_no_metrics_route_is_a_note_not_a_finding(monkeypatch):
    from bootlog.run.hook import measure

    stub = tp.Stub()
    with tp.serve(stub) as url:
        # (the stand-in answers 404 for a path it does not know)
        got = measure(
            url.rstrip("/") + "/prefix-without-metrics", served_name=None, tokens=0, gpu_smi="none", timeout=5
        )
    assert not any(m.name.startswith("metrics_") for m in got["metrics"])
    assert any("/metrics" in n for n in got["notes"]), got


@pytest.mark.parametrize("name", sorted(server_metrics.FIGURES))
def test_every_new_figure_is_declared(name):
    from bootlog.figures import BY_NAME
    from bootlog.judge.plan import known_figures
    from bootlog.render.openmetrics import HELP

    fig = BY_NAME[name]
    assert fig.kind in ("capacity", "counter") and name in known_figures()
    assert (fig.kind == "capacity") == (name in server_metrics.CAPACITY)
    assert "/metrics" in HELP[name] and server_metrics.FIGURES[name] == (fig.unit, HELP[name])


def test_the_new_figures_reach_openmetrics(db_path):
    from bootlog.records import Metric
    from bootlog.store.db import open_store
    from bootlog.store.write import add_measured
    from prometheus_client.openmetrics.parser import text_string_to_metric_families as om_families

    assert CliRunner().invoke(cli, ["--db", db_path, "ingest", str(LOG)]).exit_code == 0
    store = open_store(db_path)
    add_measured(
        store,
        1,
        [
            Metric(n, v, server_metrics.FIGURES[n][0], pattern="measured:metrics")
            for n, v in server_metrics.read(TEXT).figures.items()
        ],
    )
    store.close()
    text = CliRunner().invoke(cli, ["--db", db_path, "export", "--format", "openmetrics"]).stdout
    fams = {f.name: f for f in om_families(text)}
    assert [s.value for s in fams["bootlog_metrics_kv_cache_tokens"].samples] == [131072]
    assert fams["bootlog_metrics_kv_cache_tokens"].unit == "tokens"
    assert [s.value for s in fams["bootlog_metrics_requests"].samples] == [3]
    assert [s.value for s in fams["bootlog_verdict"].samples] == [0]  # (pool agrees with the log)


def test_counters_move_with_traffic_and_are_no_drift_the_pool_is(db_path, tmp_path):
    # the same server booted twice (the saved log, then again an hour later); the hook read 3
    # requests after the first boot and 40 after the second: "changed", never drift; a pool
    # /metrics gives 64 tokens smaller at the same settings is drift, as kv_cache_tokens would be
    from bootlog.records import Metric
    from bootlog.store.db import open_store
    from bootlog.store.write import add_measured

    data = LOG.read_bytes()
    again = tmp_path / "again.log"
    again.write_bytes(data.replace(b"12-06 07:", b"12-06 08:"))
    for log in (LOG, again):
        assert CliRunner().invoke(cli, ["--db", db_path, "ingest", str(log)]).exit_code == 0
    first = server_metrics.read(TEXT).figures
    second = {**first, "metrics_requests": 40.0, "metrics_prompt_tokens": 9000.0, "metrics_generation_tokens": 5000.0}
    store = open_store(db_path)
    for bid, figs in ((1, first), (2, second)):
        add_measured(
            store,
            bid,
            [Metric(n, v, server_metrics.FIGURES[n][0], pattern="measured:metrics") for n, v in figs.items()],
        )
    res = CliRunner().invoke(cli, ["--db", db_path, "diff", "2", "1", "--json"])
    found = {f["key"]: f["verdict"] for f in json.loads(res.stdout)["findings"] if f["key"].startswith("metrics_")}
    assert res.exit_code == 0, res.output
    assert found["metrics_requests"] == found["metrics_prompt_tokens"] == "changed"
    assert found["metrics_kv_cache_tokens"] == "same"
    add_measured(
        store,
        2,
        [
            Metric("metrics_num_gpu_blocks", 1023, "blocks", pattern="measured:metrics"),
            Metric("metrics_kv_cache_tokens", 1023 * 128, "tokens", pattern="measured:metrics"),
        ],
    )
    store.close()
    res = CliRunner().invoke(cli, ["--db", db_path, "diff", "2", "1", "--json"])
    found = {f["key"]: f["verdict"] for f in json.loads(res.stdout)["findings"] if f["key"].startswith("metrics_")}
    assert found["metrics_kv_cache_tokens"] == "drift" and res.exit_code == 3
