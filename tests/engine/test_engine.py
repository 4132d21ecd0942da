"""Real vLLM 0.32 (CPU build) servers on 127.0.0.1, one scenario each, in the order a deploy
history runs: a cold boot that serves and is stopped, a warm reboot at the same settings whose
engine core is then killed, a worker killed, tensor parallel 2, start-up failures.  The truth each
checks bootlog against is the server's own: its exit code, /metrics, the lines it printed."""

from __future__ import annotations

import json
import re
import signal
import threading
import time
from pathlib import Path

import pytest

import harness
from harness import figure

pytestmark = [pytest.mark.engine, pytest.mark.usefixtures("installed")]

RELEASE = "0.32.0"
ARGS = ["--max-model-len", str(harness.MAX_LEN), "--kv-cache-memory-bytes", str(harness.KV_BYTES)]


def server(
    name: str, logs: Path, cache: Path, args: list[str] = ARGS, release: str = RELEASE, **env: str
) -> harness.Server:
    return harness.Server(
        logs / f"{name}.log", list(args), release=release, env={"VLLM_CACHE_ROOT": str(cache / release), **env}
    )


def requests_in_flight(s: harness.Server, n: int = 3, tokens: int = 1500) -> list[threading.Thread]:
    """Long completions running while a test kills something (their answers do not matter)."""
    threads = [threading.Thread(target=s.complete, args=(f"story {i}", tokens), daemon=True) for i in range(n)]
    for t in threads:
        t.start()
    return threads


def serve_some(s: harness.Server) -> None:
    """What the cold boot serves: a streamed completion, a chat, five at once; then a stats line."""
    assert s.complete("Hello", 64, stream=True)[0] == 200
    status, _ = harness.http(
        s.url + "/v1/chat/completions",
        {"model": str(harness.model()), "max_tokens": 16, "messages": [{"role": "user", "content": "hi"}]},
    )
    assert status == 200
    done = requests_in_flight(s, 5, 300)
    for t in done:
        t.join(120)
    s.wait_for_line("Avg generation throughput", 60)


def stats_lines(s: harness.Server) -> list[dict[str, float]]:
    """The stats lines as read here, by eye's rule: 'Avg generation throughput: X tokens/s'."""
    rx = re.compile(r"Avg prompt throughput: ([\d.]+) tokens/s, Avg generation throughput: ([\d.]+) tokens/s")
    return [{"prompt": float(m[1]), "gen": float(m[2])} for m in map(rx.search, s.lines()) if m]


def check_kv_against_metrics(show: dict, metrics: str) -> None:
    """The KV pool bootlog read from the log is the one the server reports in /metrics."""
    info = harness.metric_labels(metrics, "vllm:cache_config_info")
    blocks, block = int(info["num_gpu_blocks"]), int(info["block_size"])
    assert figure(show, "kv_cache_tokens") == [blocks * block] == [int(info["kv_cache_size_tokens"])]
    assert figure(show, "max_concurrency") == [float(info["kv_cache_max_concurrency"])]


# ---------------------------------------------------------------------------- the history


@pytest.fixture(scope="module")
def cold(engine_logs, compile_cache, bootlog):
    """Boot 1: cold (an empty compile cache), serves, SIGTERM."""
    s = server("cold", engine_logs, compile_cache).start()
    assert s.wait() == "ready", s.log.read_text()[-3000:]
    serve_some(s)
    metrics = s.metrics()
    code = s.stop(signal.SIGTERM)
    ingest = bootlog.run("ingest", str(s.log))
    return s, metrics, code, ingest


def test_cold_boot_serves_and_stops_clean(cold, bootlog):
    s, metrics, code, ingest = cold
    assert code == 0  # how `vllm serve` ends a SIGTERM: the truth "clean stop" is judged by
    assert ingest.returncode == 0, ingest.stderr
    show = bootlog.show("last")
    b = show["boot"]
    assert (b["status"], b["failure"], b["ended"]) == ("ready", None, "clean_stop"), b
    assert b["vllm_version"] == RELEASE and b["kv_cache_sized_by"] == "explicit"
    check_kv_against_metrics(show, metrics)
    # every stats line the server printed is a sample, and they add up to its own token counter
    lines = stats_lines(s)
    assert show["runtime"]["stats_lines"] == len(lines) >= 1
    generated = harness.metric_value(metrics, "vllm:generation_tokens_total")
    # (each line averages the 10 s since the one before: VLLM_LOG_STATS_INTERVAL)
    assert sum(x["gen"] for x in lines) * 10 == pytest.approx(generated, rel=0.15)
    # the CPU backend's compile: its phase is the warm-up, as long as the two lines say
    t = [
        re.search(r"(\d\d):(\d\d):(\d\d) \[", line)
        for line in s.lines()
        if "Warming up model for the compilation" in line or "Warming up done." in line
    ]
    warm = sum(int(a) * k for a, k in zip((t[1][1], t[1][2], t[1][3]), (3600, 60, 1))) - sum(
        int(a) * k for a, k in zip((t[0][1], t[0][2], t[0][3]), (3600, 60, 1))
    )
    assert figure(show, "compile_warmup_s") == [warm]
    compile_s = sum(p["s"] for p in show["timeline"] if p["phase"] in ("compile", "profiling_run"))
    assert compile_s == pytest.approx(warm, abs=1.5)  # (the profiling run is a piece inside it)
    # the EngineDeadError vLLM may print while stopping is the stop's, not a fault
    shown = bootlog.run("show", "last")
    assert "clean_stop" in shown.stdout or "clean stop" in shown.stdout, shown.stdout


@pytest.fixture(scope="module")
def warm(cold, engine_logs, compile_cache, bootlog):
    """Boot 2: the same settings, warm; ingested as soon as it is ready (as the hook does)."""
    s = server("warm", engine_logs, compile_cache).start()
    assert s.wait() == "ready", s.log.read_text()[-3000:]
    metrics = s.metrics()
    at_ready = bootlog.run("ingest", str(s.log))
    diff = bootlog.run("diff", "last", "prev", "--json")
    yield s, metrics, at_ready, diff
    s.stop()


def test_warm_reboot_same_settings_is_no_drift_and_no_fault(warm, bootlog):
    s, metrics, at_ready, diff = warm
    assert at_ready.returncode == 0, at_ready.stderr
    assert diff.returncode == 0, diff.stdout + diff.stderr
    d = json.loads(diff.stdout)
    bad = [f for f in d["findings"] if f["verdict"] in ("drift", "violation")]
    assert not bad and d["summary"]["drift"] == 0 and d["summary"]["violations"] == 0, bad
    check_kv_against_metrics(bootlog.show("last"), metrics)
    # this release compiles again on every warm boot; the server says why, and so does bootlog
    said = [line for line in s.lines() if "Compiling model again due to a load failure" in line]
    miss = [f for f in d["findings"] if f["key"] == "compile_cache_miss"]
    assert len(said) == 1 and miss and miss[0]["new"] == 1, (said, miss)
    reason = said[0].split("reason: ", 1)[1]
    assert reason in miss[0]["why"]
    # what moved is said: the compile warm-up of a warm boot is shorter than the cold one's
    warm_s = [f for f in d["findings"] if f["key"] == "compile_warmup_s"][0]
    assert warm_s["new"] < warm_s["old"]


def test_engine_core_killed_while_serving_exits_0_and_fails_the_boot(warm, bootlog):
    s, *_ = warm
    threads = requests_in_flight(s)
    time.sleep(2)
    s.kill("VLLM::EngineCore")
    code = s.exit_code(120)
    for t in threads:
        t.join(30)
    assert code == 0  # the seeds' story: the server that died serving exits 0
    again = bootlog.run("ingest", str(s.log))  # the same file, grown: the stored boot is updated
    assert again.returncode == 0, again.stderr
    assert "engine_died" in again.stdout, again.stdout
    b = bootlog.show("last")["boot"]
    died = [line for line in s.lines() if "engine core exited unexpectedly" in line]
    assert (b["status"], b["failure"], b["ended"]) == ("ready", "engine_died", "died")
    assert died and b["failure_message"] in died[0]
    diff = bootlog.run("diff", "last", "prev")
    assert diff.returncode == 4, diff.stdout
    assert "died serving" in diff.stdout


def test_worker_killed_while_serving_names_the_worker(engine_logs, compile_cache, bootlog):
    with server("worker-killed", engine_logs, compile_cache) as s:
        assert s.wait() == "ready"
        requests_in_flight(s)
        time.sleep(2)
        s.kill("VLLM::Worker")
        assert s.exit_code(120) == 0
    assert bootlog.run("ingest", str(s.log)).returncode == 0
    b = bootlog.show("last")["boot"]
    died = [line for line in s.lines() if "died unexpectedly" in line]
    assert (b["status"], b["failure"], b["ended"]) == ("ready", "engine_died", "died")
    # the root cause is the worker's death, not the "RuntimeError: cancelled" it causes
    assert died and b["failure_message"] in died[0] and "VllmWorker-0" in b["failure_message"]


def test_tensor_parallel_2_and_the_death_of_rank_1(engine_logs, compile_cache, bootlog):
    with server(
        "tp2", engine_logs, compile_cache, [*ARGS, "--tensor-parallel-size", "2"], VLLM_CPU_OMP_THREADS_BIND="0|1"
    ) as s:
        assert s.wait(400) == "ready", s.log.read_text()[-3000:]
        metrics = s.metrics()
        assert bootlog.run("ingest", str(s.log)).returncode == 0
        show = bootlog.show("last")
        check_kv_against_metrics(show, metrics)
        # one figure per worker rank, as the operator's two GPUs print them
        ranks = sorted(m["rank"] for m in show["metrics"] if m["name"] == "compile_warmup_s")
        assert ranks == [0, 1]
        assert show["config"]["tensor_parallel_size"] == 2
        requests_in_flight(s)
        time.sleep(2)
        s.kill("VLLM::Worker_TP1")
        assert s.exit_code(120) == 0
    assert bootlog.run("ingest", str(s.log)).returncode == 0
    b = bootlog.show("last")["boot"]
    assert (b["failure"], b["ended"]) == ("engine_died", "died")
    assert "VllmWorker-1" in b["failure_message"]


FAILURES = {
    # name: (args, failure, a phrase of the server's own error line)
    "max-model-len-above-the-model": (
        ["--max-model-len", "8192", "--kv-cache-memory-bytes", str(harness.KV_BYTES)],
        "value_error",
        "is greater than the derived max_model_len",
    ),
    "kv-cache-too-small": (
        ["--max-model-len", "2048", "--kv-cache-memory-bytes", str(1 << 20)],
        "value_error",
        "the estimated maximum model length is",
    ),
    "memory-utilization-too-high": (
        ["--max-model-len", "2048", "--gpu-memory-utilization", "0.99"],
        "value_error",
        "is less than desired CPU memory utilization",
    ),
}


@pytest.mark.parametrize("name", list(FAILURES))
def test_start_up_failure_is_a_failed_boot_with_its_reason(name, engine_logs, compile_cache, bootlog):
    args, failure, phrase = FAILURES[name]
    with server(f"fail-{name}", engine_logs, compile_cache, args) as s:
        assert s.wait() == "exited"
        code = s.exit_code()
    assert code != 0
    assert bootlog.run("ingest", str(s.log)).returncode == 0
    show = bootlog.show("last")
    b = show["boot"]
    assert (b["status"], b["failure"], b["ended"]) == ("failed", failure, "failed"), b
    said = [line for line in s.lines() if phrase in line]
    assert said, f"vLLM no longer says {phrase!r}: {s.log}"
    # the reason is in what bootlog shows, word for word
    shown = bootlog.run("show", "last").stdout
    assert phrase in shown or phrase in b["failure_message"], shown
    if name == "kv-cache-too-small":
        est = int(re.search(r"estimated maximum model length is (\d+)", said[0])[1])
        [ev] = [e for e in show["events"] if e["kind"] == "kv_cache_insufficient"][:1]
        assert ev["detail"]["estimated_max_model_len"] == est


def test_missing_model_is_a_failed_boot(engine_logs, compile_cache, bootlog):
    s = server("fail-missing-model", engine_logs, compile_cache)
    s.argv = lambda: [
        str(harness.venv(RELEASE) / "vllm"),
        "serve",
        "/nonexistent/model",
        "--host",
        "127.0.0.1",
        "--port",
        str(s.port),
        *ARGS,
    ]
    with s:
        assert s.wait() == "exited"
        assert s.exit_code() != 0
    assert bootlog.run("ingest", str(s.log)).returncode == 0
    b = bootlog.show("last")["boot"]
    assert b["status"] == "failed" and "/nonexistent/model" in b["failure_message"]


def test_the_release_before_says_the_same_in_its_own_words(engine_logs, compile_cache, bootlog):
    """vLLM 0.28: 'GPU KV cache size' on a CPU, uvicorn's lines tagged (APIServer pid=N)."""
    with server("release-0.28", engine_logs, compile_cache, release="0.28.0") as s:
        assert s.wait(400) == "ready", s.log.read_text()[-3000:]
        serve_some(s)
        metrics = s.metrics()
        code = s.stop(signal.SIGTERM)
    assert code == 0
    assert bootlog.run("ingest", str(s.log)).returncode == 0
    show = bootlog.show("last")
    b = show["boot"]
    assert (b["vllm_version"], b["status"], b["failure"], b["ended"]) == ("0.28.0", "ready", None, "clean_stop")
    check_kv_against_metrics(show, metrics)
    assert any("GPU KV cache size" in line for line in s.lines())  # (so this release still says)
    assert show["runtime"]["stats_lines"] == len(stats_lines(s)) >= 1
