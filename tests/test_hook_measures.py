"""The deploy around the log, through `bootlog hook` on real podman: the container's deploy
context (image digest, command, restarts), probes of a stand-in OpenAI-compatible server on
127.0.0.1 and GPU memory from a stand-in rocm-smi on PATH, stored with the boot and compared."""

from __future__ import annotations

import json
import os
import stat
import uuid

import pytest
from click.testing import CliRunner

import test_probe as tp
from bootlog.cli import cli
from podman_util import IMAGE, fixture_log, run_podman, until_ready, Boot

SMALL = "012-v0.10.2-v1-small.log"  # v0.10.2, ready, KV 433,456 tokens
SERVED = "/root/autodl-tmp/models/qwen/Qwen2.5-3B"  # the boot's model: its served name

# rocm-smi --showmeminfo vram --json, two cards; the second reading (after the probe's
# generation) has less free on card 1: the lower one is stored
ROCM_BEFORE = json.dumps(
    {
        "card0": {"VRAM Total Memory (B)": "34208743424", "VRAM Total Used Memory (B)": "33253982208"},
        "card1": {"VRAM Total Memory (B)": "34208743424", "VRAM Total Used Memory (B)": "33253982208"},
    }
)
ROCM_AFTER = json.dumps(
    {
        "card0": {"VRAM Total Memory (B)": "34208743424", "VRAM Total Used Memory (B)": "33253982208"},
        "card1": {"VRAM Total Memory (B)": "34208743424", "VRAM Total Used Memory (B)": "33468940288"},
    }
)


@pytest.fixture
def rocm_smi(tmp_path, monkeypatch):
    """A stand-in rocm-smi first on PATH: ROCM_BEFORE on its first call, ROCM_AFTER after."""
    bindir = tmp_path / "smi"
    bindir.mkdir()
    (bindir / "before.json").write_text(ROCM_BEFORE)
    (bindir / "after.json").write_text(ROCM_AFTER)
    script = bindir / "rocm-smi"
    script.write_text(f"""#!/bin/sh
echo "$@" >> "{bindir}/argv"
if [ -e "{bindir}/called" ]; then cat "{bindir}/after.json"; else touch "{bindir}/called"; cat "{bindir}/before.json"; fi
""")
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}{os.environ['PATH']}")
    return bindir


@pytest.fixture
def server(monkeypatch):
    stub = tp.Stub()
    models = json.loads(json.dumps(tp.MODELS))
    models["data"][0]["id"] = models["data"][0]["root"] = SERVED
    monkeypatch.setattr(tp, "MODELS", models)
    with tp.serve(stub) as url:
        yield stub, url


def hook(db, name, *args):
    return CliRunner().invoke(
        cli,
        ["--db", str(db), "hook", "--container", name, "--poll", "0.2", "--timeout", "60", "--format", "json", *args],
        catch_exceptions=False,
    )


def restarted(log: bytes) -> bytes:
    """The same server booted again later: new pids and times, the same figures."""
    return (
        log.replace(b"pid=85301", b"pid=91301").replace(b"pid=85423", b"pid=91423").replace(b"09-26 05:", b"09-26 07:")
    )


def ready_boot(log: bytes) -> Boot:
    head, rest = until_ready(log)
    return Boot().out(head).out(rest).hold()


def test_hook_stores_deploy_probe_and_gpu_memory_and_diff_names_the_image(replayer, db_path, server, rocm_smi):
    stub, url = server
    log = fixture_log(SMALL).read_bytes()
    image_b = f"localhost/bootlog-hook-{uuid.uuid4().hex[:8]}:two"
    work = f"bl-commit-{uuid.uuid4().hex[:8]}"
    try:
        # a second image with other bytes: a layer committed on top of the replay image
        run_podman("run", "--name", work, "--network=none", IMAGE, "/bin/sh", "-c", "echo x > /marker")
        run_podman("commit", "-q", work, image_b)

        first = replayer.start([ready_boot(log)], env={"HF_TOKEN": "hf_FAKE", "FRANK_PRIMARY_CUDAGRAPH_BASE_MB": "256"})
        res = hook(db_path, first, "--probe", url, "--probe-tokens", "8", "--gpu-smi", "rocm-smi")
        assert res.exit_code == 0, res.output
        out = json.loads(res.stdout)
        dep = out["deploy"]
        assert dep["image"] == IMAGE and dep["image_digest"].startswith("sha256:")
        assert dep["command"] == ["/bin/sh", "/data/replay.sh"] and dep["restart_count"] == 0
        assert dep["env"]["HF_TOKEN"] == "<redacted>"
        figs = out["figures"]
        assert figs["probe_ttft_s"] >= 0.2  # the stand-in waits 0.2 s before its first token
        assert 10 < figs["probe_decode_tps"] < 60  # 0.02 s per token: ~50 tok/s
        assert figs["gpu_free_gib"] == [0.889, 0.689]  # card 1's lower reading, after the generation
        # (then the server's own /metrics, once: its counters after the probe)
        assert [r for m, r, _ in stub.requests] == ["/health", "/v1/models", "/v1/chat/completions", "/metrics"]
        assert figs["metrics_num_preemptions"] == 0  # (the stand-in's /metrics: 0.0)
        assert "--showmeminfo vram --json" in (rocm_smi / "argv").read_text()

        # the same boot, stored: show --json has the deploy and the measurements
        shown = json.loads(CliRunner().invoke(cli, ["--db", str(db_path), "show", "last", "--json"]).stdout)
        assert shown["deploy"]["image_digest"] == dep["image_digest"]
        got = {(m["name"], m["rank"]): m["value"] for m in shown["metrics"]}
        assert got[("gpu_used_gib", 1)] == pytest.approx(31.17, abs=0.01)
        assert ("probe_health_s", None) in got
        assert got[("metrics_num_preemptions", None)] == 0.0  # the stand-in's /metrics text

        # redeploy from the other image with the CUDA-graph env var moved: the same log, so
        # the capacity figures are equal; the diff lists the deploy changes first
        replayer.cleanup()
        second = replayer.start(
            [ready_boot(restarted(log))],
            name=first,
            image=image_b,
            env={"HF_TOKEN": "hf_FAKE", "FRANK_PRIMARY_CUDAGRAPH_BASE_MB": "0"},
        )
        res = hook(db_path, second, "--probe", url, "--probe-tokens", "8", "--gpu-smi", "none")
        out = json.loads(res.stdout)
        assert out["prev"] is not None and out["deploy"]["image"] == image_b
        findings = out["diff"]["findings"]
        deploy_rows = [f for f in findings if f["section"] == "deploy"]
        assert findings[: len(deploy_rows)] == deploy_rows  # causes first
        by = {f["key"]: f for f in deploy_rows}
        assert by["image_digest"]["verdict"] == "changed"
        assert by["image_digest"]["old"] == dep["image_digest"] != by["image_digest"]["new"]
        assert (by["env.FRANK_PRIMARY_CUDAGRAPH_BASE_MB"]["old"], by["env.FRANK_PRIMARY_CUDAGRAPH_BASE_MB"]["new"]) == (
            "256",
            "0",
        )

        diff = CliRunner().invoke(cli, ["--db", str(db_path), "diff", "last", "prev"])
        lines = diff.stdout.splitlines()
        assert lines[1] == "deploy" and any("image_digest" in ln and "different image bytes" in ln for ln in lines)
    finally:
        run_podman("rm", "-f", "-t", "0", work, check=False)
        replayer.cleanup()
        run_podman("rmi", "-f", image_b, check=False)


def test_a_failing_probe_is_a_line_and_drift_never_a_hang(replayer, db_path, server, tmp_path):
    stub, url = server
    stub.chat = "hang"  # accepts the completion and never answers
    name = replayer.start([ready_boot(fixture_log(SMALL).read_bytes())])
    res = CliRunner().invoke(
        cli,
        [
            "--db",
            str(db_path),
            "hook",
            "--container",
            name,
            "--poll",
            "0.2",
            "--timeout",
            "6",
            "--probe",
            url,
            "--gpu-smi",
            "none",
        ],
        catch_exceptions=False,
    )
    assert res.exit_code == 3, res.output
    notes = [ln for ln in res.stdout.splitlines() if ln.strip().startswith("note: probe of http://127.0.0.1:")]
    assert len(notes) == 1 and "no complete answer within the probe's time limit" in notes[0]
    assert "health" in res.stdout  # what was measured before the hang is kept
    # the DRIFT headline says why (the diff and check below it found no drift: it was the probe)
    head, why = res.stdout.splitlines()[:2]
    assert head.startswith("bootlog hook: DRIFT: ") and why.split()[:3] == ["why", "probe", "of"], res.stdout

    # nothing listening: one line too
    res = CliRunner().invoke(
        cli,
        [
            "--db",
            str(db_path),
            "hook",
            "--container",
            name,
            "--poll",
            "0.2",
            "--timeout",
            "10",
            "--probe",
            "http://127.0.0.1:9",
            "--gpu-smi",
            "none",
            "--format",
            "json",
        ],
        catch_exceptions=False,
    )
    out = json.loads(res.stdout)
    assert res.exit_code == 3 and len(out["measured"]["problems"]) == 1
    assert "127.0.0.1:9" in out["measured"]["problems"][0]
    assert out["verdict"] == "DRIFT" and out["why"] == out["measured"]["problems"]


def test_a_plan_bounds_the_probe_and_pins_the_image(replayer, db_path, server, tmp_path):
    stub, url = server
    stub.per_token = 0.05  # ~20 tok/s: below the fleet's 35 tok/s target
    name = replayer.start([ready_boot(fixture_log(SMALL).read_bytes())])
    plan = tmp_path / "plan.toml"
    plan.write_text(
        '[metrics.probe_decode_tps]\nmin = 35\nhard = true\n\n[deploy]\nimage_digest = "sha256:' + "0" * 64 + '"\n'
    )
    res = hook(db_path, name, "--probe", url, "--probe-tokens", "8", "--gpu-smi", "none", "--plan", str(plan))
    out = json.loads(res.stdout)
    assert res.exit_code == 4, res.output
    by = {f["key"]: f for f in out["check"]["findings"]}
    assert by["probe_decode_tps"]["verdict"] == "violation" and by["probe_decode_tps"]["new"] < 35
    assert by["image_digest"]["verdict"] == "violation" and by["image_digest"]["new"] == out["deploy"]["image_digest"]
