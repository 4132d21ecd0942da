"""The real engine in real podman, as the operator runs it (`podman run --rootfs /:O --network
host …`, this machine's podman settings from .ci/podman-setup.sh): the hook on the boot starting
now, `podman restart`, the engine killed inside the container (exit code 0), a container that never
starts.  Truth: podman inspect, /metrics, a streaming client of our own."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

import harness
from harness import figure

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import podman_util  # noqa: E402  (tests/: the podman settings the ordinary suite uses)

pytestmark = [pytest.mark.engine, pytest.mark.usefixtures("installed")]

RELEASE = "0.32.0"


@pytest.fixture(scope="module")
def podman() -> None:
    why = podman_util.skip_reason()
    if why:
        pytest.skip(why)  # (loud: the reason is the exact podman error)


class Container:
    """One container running `vllm serve` from the host's root (an overlay: what it writes, its
    compile cache included, lives and dies with the container, as in the seeds)."""

    def __init__(self, name: str, port: int, args: list[str]) -> None:
        self.name, self.port, self.args = name, port, args

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def argv(self) -> list[str]:
        return [
            str(harness.venv(RELEASE) / "vllm"),
            "serve",
            str(harness.model()),
            "--host",
            "127.0.0.1",
            "--port",
            str(self.port),
            *self.args,
        ]

    def run(self, *extra: str, command: list[str] | None = None) -> subprocess.CompletedProcess:
        return podman_util.run_podman(
            "run",
            "-d",
            "--name",
            self.name,
            "--network",
            "host",
            "--shm-size",
            "1g",
            "-e",
            "HOME=/root",
            *extra,
            "--rootfs",
            "/:O",
            *(command or self.argv()),
            check=False,
            timeout=120,
        )

    def inspect(self) -> dict:
        done = podman_util.run_podman("inspect", self.name, timeout=60)
        return json.loads(done.stdout)[0]

    def wait_ready(self, timeout: float = 300) -> None:
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if harness.http(self.url + "/health", timeout=2)[0] == 200:
                return
            assert self.inspect()["State"]["Running"], self.logs()[-3000:]
            time.sleep(1)
        raise TimeoutError(self.name)

    def wait_exited(self, timeout: float = 120) -> dict:
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            state = self.inspect()["State"]
            if not state["Running"]:
                return state
            time.sleep(0.5)
        raise TimeoutError(self.name)

    def logs(self) -> str:
        return podman_util.run_podman("logs", self.name, check=False).stdout

    def remove(self) -> None:
        podman_util.run_podman("rm", "-f", "-t", "0", self.name, check=False, timeout=120)


@pytest.fixture(scope="module")
def served(podman, bootlog, engine_logs):
    """The operator's container: auto-sized KV (--gpu-memory-utilization 0.25), the hook run on
    the boot starting now."""
    c = Container(
        "bootlog-engine-" + os.urandom(3).hex(),
        harness.free_port(),
        ["--max-model-len", str(harness.MAX_LEN), "--gpu-memory-utilization", "0.25"],
    )
    yield c
    # (podman logs writes stderr records to its stderr: one pipe for both keeps their order)
    with open(engine_logs / "podman.log", "wb") as out:
        subprocess.run(
            [*podman_util.podman_argv(), "logs", "--timestamps", c.name],
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            timeout=120,
        )
    c.remove()


def hook(bootlog, c: Container, *args: str, timeout: str = "400") -> subprocess.CompletedProcess:
    return bootlog.run("hook", "--container", c.name, "--timeout", timeout, "--poll", "1", *args, timeout=600)


def reference_stream(url: str, tokens: int = 32) -> tuple[float, list[float]]:
    """Our own streaming client: (time to first token, arrival time of each token chunk), with
    http.client reading the socket as it comes (not bootlog's code)."""
    import http.client

    host, port = url.split("//")[1].split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=60)
    body = json.dumps(
        {
            "model": str(harness.model()),
            "prompt": "Hello",
            "max_tokens": tokens,
            "stream": True,
            "ignore_eos": True,
            "temperature": 0,
        }
    )
    t0 = time.monotonic()
    conn.request("POST", "/v1/completions", body=body, headers={"Content-Type": "application/json"})
    resp = conn.getresponse()
    arrivals = []
    while True:
        line = resp.fp.readline()
        if not line or line.strip() == b"data: [DONE]":
            break
        if line.startswith(b"data:") and b'"text":"' in line and b'"text":""' not in line:
            arrivals.append(time.monotonic() - t0)
    conn.close()
    return arrivals[0], arrivals


def test_hook_on_the_boot_starting_now(served, bootlog):
    c = served
    started = c.run()
    assert started.returncode == 0, started.stderr
    res = hook(bootlog, c, "--probe", c.url, "--format", "json")
    assert res.returncode == 0, res.stdout + res.stderr
    out = json.loads(res.stdout)
    assert out["verdict"] == "OK" and out["boot"]["status"] == "ready"
    metrics = harness.http(c.url + "/metrics")[1].decode()
    show = bootlog.show("last")
    info = harness.metric_labels(metrics, "vllm:cache_config_info")
    assert figure(show, "kv_cache_tokens") == [int(info["num_gpu_blocks"]) * int(info["block_size"])]
    assert show["boot"]["kv_cache_sized_by"] == "measured"  # "Auto set (…) GiB for KV cache"
    # what the hook scraped from /metrics after its probe is what the server says now (no request
    # since): the KV pool, and the counters, the probe's own completion among them
    stored = {m["name"]: m["value"] for m in show["metrics"] if m["name"].startswith("metrics_")}
    live = {
        "metrics_num_gpu_blocks": int(info["num_gpu_blocks"]),
        "metrics_block_size": int(info["block_size"]),
        "metrics_kv_cache_tokens": int(info["num_gpu_blocks"]) * int(info["block_size"]),
        "metrics_requests": harness.metric_value(metrics, "vllm:request_success_total"),
        "metrics_prompt_tokens": harness.metric_value(metrics, "vllm:prompt_tokens_total"),
        "metrics_generation_tokens": harness.metric_value(metrics, "vllm:generation_tokens_total"),
        "metrics_num_preemptions": harness.metric_value(metrics, "vllm:num_preemptions_total"),
    }
    assert stored == live, (stored, live)
    assert live["metrics_requests"] >= 1  # (the probe's completion at least: it was served)
    assert out["measured"]["server_metrics"]["cache_dtype"] == info["cache_dtype"]
    # the deploy record is podman's own
    ins = c.inspect()
    assert show["deploy"]["command"] == [ins["Path"], *ins["Args"]]
    assert show["deploy"]["started_at"][:19] == ins["State"]["StartedAt"][:19].replace(" ", "T")
    # the probe: health, TTFT; a decode rate only where our own client sees tokens spread out
    ttft, arrivals = reference_stream(c.url)
    figs = {m["name"]: m["value"] for m in show["metrics"] if m["name"].startswith("probe_")}
    assert figs["probe_health_s"] < 1 and figs["probe_ttft_s"] < max(2.0, 20 * ttft)
    if "probe_decode_tps" in figs:
        span = arrivals[-1] - arrivals[0]
        assert span > 0 and figs["probe_decode_tps"] < 20 * (len(arrivals) - 1) / span, (figs, arrivals)


def test_podman_restart_is_a_new_boot(served, bootlog):
    c = served
    before = c.inspect()["State"]["StartedAt"]
    podman_util.run_podman("restart", "-t", "30", c.name, timeout=300)
    assert c.inspect()["State"]["StartedAt"] != before
    res = hook(bootlog, c, "--probe", c.url, "--format", "json")
    boots = bootlog.json("list", "--container", c.name)
    assert [b["status"] for b in boots] == ["ready", "ready"], boots
    assert boots[0]["ended"] == "clean_stop"  # podman restart stopped it: SIGTERM
    # a KV pool the engine measured moves a little between identical boots: that is no drift
    assert res.returncode == 0, res.stdout + res.stderr
    out = json.loads(res.stdout)
    assert out["verdict"] == "OK", out


def test_engine_killed_inside_the_container_exits_0_and_is_named(served, bootlog):
    c = served
    c.wait_ready()
    pid = c.inspect()["State"]["Pid"]
    harness.kill_titled(pid, "VLLM::EngineCore")
    state = c.wait_exited()
    assert state["ExitCode"] == 0  # why Restart=on-failure never fired for the operator
    # what each says, the first to read the death (the hook stored this boot when it was ready)
    watch = bootlog.run("watch", "--container", c.name, "--once")
    assert "engine_died" in watch.stdout, watch.stdout + watch.stderr
    # cron's exit code: 4, the engine died serving (what on-failure never saw: podman's 0 above)
    assert watch.returncode == 4 and " FAILED: the engine died serving (engine_died)" in watch.stdout, watch.stdout
    ingest = bootlog.run("ingest", "--container", c.name)
    assert ingest.returncode == 0 and "engine_died" in ingest.stdout, ingest.stdout + ingest.stderr
    res = hook(bootlog, c, timeout="10")
    assert res.returncode == 4, res.stdout + res.stderr
    assert "died" in res.stdout
    b = bootlog.show("last")["boot"]
    assert (b["failure"], b["ended"]) == ("engine_died", "died")
    # one boot per start, whoever read them (hook twice, watch, ingest): podman's own count
    starts = [
        e
        for e in podman_util.run_podman(
            "events", "--stream=false", "--since", "1h", "--filter", f"container={c.name}", "--format", "{{.Status}}"
        ).stdout.split()
        if e == "init"
    ]
    boots = bootlog.json("list", "--container", c.name)
    assert len(boots) == len(starts) == 2, (boots, starts)
    assert [(x["ended"], x["failure"]) for x in boots] == [("clean_stop", None), ("died", "engine_died")]


def test_a_container_that_never_starts_is_one_prompt_line(podman, bootlog):
    c = Container("bootlog-never-" + os.urandom(3).hex(), harness.free_port(), [])
    try:
        done = c.run(command=["/no/such/vllm", "serve"])
        assert done.returncode != 0  # 127: the runtime could not start it
        t0 = time.monotonic()
        res = hook(bootlog, c, timeout="120")
        took = time.monotonic() - t0
        assert took < 20, (took, res.stdout, res.stderr)
        said = (res.stdout + res.stderr).strip().splitlines()
        assert res.returncode in (1, 4) and len(said) == 1, said
        assert "never started" in said[0] or "/no/such/vllm" in said[0], said
    finally:
        c.remove()
