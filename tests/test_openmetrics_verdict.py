"""OpenMetrics' bootlog_verdict{host,container} and bootlog_boot_died_serving on the real engine's
boots (fixtures/logs/engine/), read back with prometheus_client's OpenMetrics parser: a Grafana
alert on them needs no bootlog knowledge, and says what the hook and check say."""

from __future__ import annotations

from click.testing import CliRunner
from prometheus_client.openmetrics.parser import text_string_to_metric_families

from bootlog.cli import cli
from paths import FIXTURES

ENGINE = FIXTURES / "engine"
E01 = ENGINE / "e01-v0.32.0-cpu-cold-requests-sigterm.log"  # ready, served, SIGTERM: a clean stop
E02 = ENGINE / "e02-v0.32.0-cpu-warm-engine-core-killed.log"  # ready, EngineCore kill -9: died, exit 0
E05 = ENGINE / "e05-v0.32.0-cpu-fail-max-model-len.log"  # failed start (max_model_len 8192 > 2048)
E042 = FIXTURES / "042-v0.22.0-llm.log"  # ready, then an OOM the server survived


def run(db, *args):
    return CliRunner().invoke(cli, ["--db", str(db), *args], catch_exceptions=False)


def gauges(text: str, family: str) -> dict[str, float]:
    """container label -> value of one family, read by prometheus_client's OpenMetrics parser."""
    fams = {f.name: f for f in text_string_to_metric_families(text)}
    assert fams[family].type == "gauge"
    return {s.labels["container"]: s.value for s in fams[family].samples}


def test_verdict_and_died_serving_of_real_engine_boots(db_path):
    for log in (E01, E02, E05, E042):
        assert run(db_path, "ingest", str(log)).exit_code == 0
    # (read by hand, fixtures/logs/engine/README.md: e02's engine core was killed after ready and
    # the server exited 0)
    assert "[shutdown] MPClient: engine core exited unexpectedly" in E02.read_text()
    res = run(db_path, "export", "--format", "openmetrics")
    assert res.exit_code == 0, res.output
    verdict, died = gauges(res.stdout, "bootlog_verdict"), gauges(res.stdout, "bootlog_boot_died_serving")
    assert verdict == {E01.name: 0, E02.name: 3, E05.name: 3, E042.name: 1}
    assert died == {E01.name: 0, E02.name: 1, E05.name: 0, E042.name: 0}
    # the same words as check's exit code (0 ok, 3 drift, 4 failed) for each boot
    for bid, log in enumerate((E01, E02, E05, E042), 1):
        code = run(db_path, "check", str(bid), "--plan", str(_bare(db_path))).exit_code
        assert {0: 0, 3: 1, 4: 3}[code] == verdict[log.name], (log.name, code)


def _bare(db_path: str):
    from pathlib import Path

    plan = Path(db_path).with_name("bare.toml")
    plan.write_text("[metrics.kv_cache_tokens]\nmin = 1\n")  # (nothing a boot of these misses)
    return plan


def test_a_plan_makes_violations_and_drift_as_the_hook_says_them(db_path, tmp_path):
    assert run(db_path, "ingest", str(E01)).exit_code == 0  # CPU KV cache size: 131,072 tokens
    hard, soft = tmp_path / "hard.toml", tmp_path / "soft.toml"
    hard.write_text("[metrics.kv_cache_tokens]\nmin = 200000\nhard = true\n")
    soft.write_text("[metrics.kv_cache_tokens]\nmin = 200000\n")
    for plan, want, code in ((hard, 2, 4), (soft, 1, 3)):
        res = run(db_path, "export", "--format", "openmetrics", "--plan", str(plan))
        assert gauges(res.stdout, "bootlog_verdict") == {E01.name: want}
        assert run(db_path, "check", "last", "--plan", str(plan)).exit_code == code
    ok = tmp_path / "ok.toml"
    ok.write_text("[metrics.kv_cache_tokens]\nmin = 131072\nhard = true\n")
    res = run(db_path, "export", "--format", "openmetrics", "--plan", str(ok))
    assert gauges(res.stdout, "bootlog_verdict") == {E01.name: 0}
    # --plan belongs to the openmetrics format
    bad = CliRunner().invoke(cli, ["--db", db_path, "export", str(tmp_path / "x.csv"), "--plan", str(ok)])
    assert bad.exit_code == 2 and "openmetrics" in bad.output


def test_the_latest_boot_is_judged_against_the_one_before_it(db_path, tmp_path):
    # e01, then the same server an hour later with a KV pool 64 tokens smaller: capacity drift
    e01 = E01.read_bytes()
    again = (
        e01.replace(b"12-06 02:", b"12-06 03:")
        .replace(b"12-06 03:0", b"12-06 04:0")
        .replace(b"CPU KV cache size: 131,072 tokens", b"CPU KV cache size: 131,008 tokens")
    )
    log = tmp_path / "nohup.out"
    log.write_bytes(e01 + again)
    assert run(db_path, "ingest", str(log)).exit_code == 0
    assert run(db_path, "diff", "last", "prev").exit_code == 3
    res = run(db_path, "export", "--format", "openmetrics")
    assert gauges(res.stdout, "bootlog_verdict") == {"nohup.out": 1}
    fams = {f.name: f for f in text_string_to_metric_families(res.stdout)}
    assert [s.value for s in fams["bootlog_boot_id"].samples] == [2]  # (the latest one is exported)
