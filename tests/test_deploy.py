"""bootlog.measure.deploy: redaction, the deploy context of real `podman inspect` / `docker inspect`
output (tests/data/inspect, README there says how each was made), malformed input, the env file
snapshot, deploy findings, and `inspect` against real podman (two images, so a digest changes)."""

from __future__ import annotations

import json
import stat
import time
import uuid
from pathlib import Path

import pytest

from bootlog.measure import deploy
from bootlog.measure.deploy import (
    REDACTED,
    context_from_inspect,
    deploy_findings,
    env_file_snapshot,
    is_secret_name,
    redact,
    redact_args,
)
from bootlog.errors import BootlogError, PlanError, SourceError
from podman_util import run_podman, IMAGE

DATA = Path(__file__).parent / "data" / "inspect"


def findings_json(old, new) -> list[dict]:
    """deploy_findings as the diff --json rows they become."""
    return [f.to_json() for f in deploy_findings(old, new)]


def sample(name: str):
    return json.loads((DATA / f"{name}.json").read_text())


# ------------------------------------------------------------------------------ redaction


@pytest.mark.parametrize(
    "name",
    [
        "HF_TOKEN",
        "HUGGING_FACE_HUB_TOKEN",
        "AWS_SECRET_ACCESS_KEY",
        "VLLM_API_KEY",
        "API_KEY",
        "OPENAI_APIKEY",
        "PGPASSWORD",
        "DB_PASS",
        "MYSQL_ROOT_PASSWORD",
        "SSH_KEYS",
        "hfToken",
        "apiKey",
        "client-secret",
        "GPG_PASSPHRASE",
        "api.key",
        "hf_token",
    ],
)
def test_secret_names(name):
    assert is_secret_name(name)


@pytest.mark.parametrize(
    "name",
    [
        "PATH",
        "KEYBOARD",
        "MAX_NUM_BATCHED_TOKENS",
        "FRANK_PRIMARY_KV_BYTES",
        "BYPASS",
        "PASSTHROUGH",
        "SSL_KEYFILE",
        "GPU_MAX_HW_QUEUES",
        "FRANK_PRIMARY_MNBT",
        "HOSTNAME",
        "TOKENIZERS_PARALLELISM",
        "PWD",
        "COMPASS_DIR",
        "container",
    ],
)
def test_not_secret_names(name):
    assert not is_secret_name(name)


def test_redact_keeps_names_and_plain_values():
    env = {"HF_TOKEN": "hf_FAKE", "FRANK_PRIMARY_UTIL": "0.982", "KEYBOARD": "us", "API_KEY": ""}
    assert redact(env) == {"HF_TOKEN": REDACTED, "FRANK_PRIMARY_UTIL": "0.982", "KEYBOARD": "us", "API_KEY": REDACTED}
    assert env["HF_TOKEN"] == "hf_FAKE"  # a copy: the caller's dict is not touched
    assert redact({"DATABASE_URL": "postgres://bootlog:s3cr3t@db:5432/bootlog"}) == {
        "DATABASE_URL": f"postgres://bootlog:{REDACTED}@db:5432/bootlog"
    }
    assert redact_args(["--db", "postgresql+psycopg://u:pw@h/d"]) == ["--db", f"postgresql+psycopg://u:{REDACTED}@h/d"]


def test_redact_args_words_and_scripts():
    argv = [
        "vllm",
        "serve",
        "/m",
        "--api-key",
        "sk-x",
        "--hf-token=hf_x",
        "--max-num-batched-tokens",
        "2048",
        "-e",
        "HF_TOKEN=hf_y",
        "--ssl-keyfile",
        "/k.pem",
    ]
    assert redact_args(argv) == [
        "vllm",
        "serve",
        "/m",
        "--api-key",
        REDACTED,
        f"--hf-token={REDACTED}",
        "--max-num-batched-tokens",
        "2048",
        "-e",
        f"HF_TOKEN={REDACTED}",
        "--ssl-keyfile",
        "/k.pem",
    ]
    script = "HF_TOKEN=hf_z VLLM_API_KEY='a b' exec vllm serve /m --api-key sk-z --port 7770 --api-key=sk-w"
    assert redact_args(["/bin/sh", "-c", script]) == [
        "/bin/sh",
        "-c",
        f"HF_TOKEN={REDACTED} VLLM_API_KEY={REDACTED} exec vllm serve /m --api-key {REDACTED} "
        f"--port 7770 --api-key={REDACTED}",
    ]
    assert redact_args(["--api-key", "--port", "1"]) == ["--api-key", "--port", "1"]  # no value to hide


# ------------------------------------------------------------------------------ podman samples


def test_podman_running_container():
    ctx = context_from_inspect(sample("podman-4.3.1-running"))
    assert ctx["engine"] == "podman" and ctx["container"] == "probe-serve"
    assert ctx["image"] == "localhost/logreplay:latest"
    assert ctx["image_digest"] == "sha256:026227c6c1febff49151fc4c3d95b3f88145d56e07d8617196dddb4ba142e41e"
    assert ctx["image_id"] == "sha256:022716c507783b349dfc384031fc727add25a739c74b368ada9a423d36df4d41"
    # podman 4.3.1's Config.Entrypoint is the string "/bin/sh -c": Path + Args is the exact argv
    assert ctx["command"] == [
        "/bin/sh",
        "-c",
        'echo "vllm serve /models/q --served-model-name frank-primary"; exec sleep 120',
    ]
    assert ctx["env"]["HF_TOKEN"] == REDACTED and ctx["env"]["AWS_SECRET_ACCESS_KEY"] == REDACTED
    assert ctx["env"]["GPU_MAX_HW_QUEUES"] == "2" and ctx["env"]["KEYBOARD"] == "us"
    assert "hf_FAKE" not in json.dumps(ctx)
    assert ctx["status"] == "running" and ctx["restart_count"] == 0
    assert ctx["started_at"] == "2026-12-01T20:18:25.270811020Z"
    # while it runs there is no end: no finish time, exit code or OOM flag (podman says 0/false)
    assert (ctx["finished_at"], ctx["exit_code"], ctx["oom_killed"]) == (None, None, None)


def test_podman_restart_policy_gave_up():
    ctx = context_from_inspect(sample("podman-4.3.1-restarts"))
    assert (ctx["restart_count"], ctx["exit_code"], ctx["oom_killed"], ctx["status"]) == (2, 3, False, "exited")
    assert ctx["env"]["VLLM_API_KEY"] == REDACTED and ctx["env"]["HF_HUB_OFFLINE"] == "1"
    assert ctx["finished_at"] == "2026-12-01T20:18:42.840520261Z"


def test_podman_image_run_by_digest():
    ctx = context_from_inspect(sample("podman-4.3.1-by-digest"))
    assert ctx["image"] == "localhost/logreplay@sha256:026227c6c1febff49151fc4c3d95b3f88145d56e07d8617196dddb4ba142e41e"
    assert ctx["image_digest"] == "sha256:026227c6c1febff49151fc4c3d95b3f88145d56e07d8617196dddb4ba142e41e"


def test_podman_killed_137_is_not_reported_oom():
    ctx = context_from_inspect(sample("podman-4.3.1-killed-137"))
    assert ctx["exit_code"] == 137 and ctx["oom_killed"] is False  # what podman 4.3.1 says; not proof


def test_podman_secret_command_line():
    ctx = context_from_inspect(sample("podman-4.3.1-secret-args"))
    assert ctx["command"][-7:] == [
        "--served-model-name",
        "frank-primary",
        "--api-key",
        REDACTED,
        f"--hf-token={REDACTED}",
        "--max-num-batched-tokens",
        "2048",
    ]
    assert "sk-FAKE" not in json.dumps(ctx) and "hf_FAKE" not in json.dumps(ctx)


# ------------------------------------------------------------------------------ docker samples


def test_docker_digest_comes_from_the_image_repo_digests():
    container, image = sample("docker-api-v1.24-container"), sample("docker-api-v1.24-image")[0]
    ctx = context_from_inspect(container, "docker", image)
    assert ctx["image"] == "ubuntu"
    assert ctx["image_id"] == "sha256:04c5d3b7b0656168630d3ba35d8889bd0e9caafcaeb3004d2bfbc47e7c5d35d2"
    assert ctx["image_digest"] == "sha256:cbbf2f9a99b47fc460d422812b6a5adff7dfee951d8fa2e4a98caa0382cfbdbf"
    assert ctx["command"] == ["/bin/sh", "-c", "exit 9"]
    assert ctx["restart_count"] == 1 and ctx["container"] == "boring_euclid"
    # without the image object docker's container says no digest: unknown, not invented
    assert context_from_inspect(container, "docker")["image_digest"] is None


def test_docker_prefers_the_repo_it_ran_from_and_a_digest_in_the_reference():
    container = sample("docker-api-v1.24-container")[0]
    image = {"RepoDigests": ["mirror.example/ubuntu@sha256:" + "1" * 64, "ubuntu@sha256:" + "2" * 64]}
    assert context_from_inspect(container, "docker", image)["image_digest"] == "sha256:" + "2" * 64
    pinned = dict(
        container,
        Config=dict(
            container["Config"],
            Image="docker.io/tcclaviger/vllm@sha256:da4029666668b90a0386c1ed23ea370c79916ad4e1a6ad1dd9db098b9fa069ea",
        ),
    )
    ctx = context_from_inspect(pinned, "docker")
    assert ctx["image_digest"] == "sha256:da4029666668b90a0386c1ed23ea370c79916ad4e1a6ad1dd9db098b9fa069ea"


def test_entrypoint_and_cmd_when_there_is_no_path():
    doc = {
        "Config": {
            "Entrypoint": ["python3", "-m", "vllm.entrypoints.openai.api_server"],
            "Cmd": ["--model", "/m", "--api-key", "sk-x"],
        }
    }
    assert context_from_inspect(doc)["command"] == [
        "python3",
        "-m",
        "vllm.entrypoints.openai.api_server",
        "--model",
        "/m",
        "--api-key",
        REDACTED,
    ]
    doc = {"Config": {"Entrypoint": "/bin/sh -c", "Cmd": ["exec vllm serve"]}}  # podman's string
    assert context_from_inspect(doc)["command"] == ["/bin/sh", "-c", "exec vllm serve"]


# ------------------------------------------------------------------------------ malformed input


@pytest.mark.parametrize("doc", ["text", None, 7, [], [{}, {}], [[1]]])
def test_not_one_object_is_one_line_source_error(doc):
    with pytest.raises(SourceError) as err:
        context_from_inspect(doc)
    assert "\n" not in str(err.value) and str(err.value).startswith("podman inspect: expected one container")


def test_odd_typed_fields_are_tolerated():
    doc = {
        "Id": 5,
        "Name": ["x"],
        "Image": {"a": 1},
        "ImageDigest": "sha256:nothex",
        "ImageName": 3,
        "Config": {"Env": "HF_TOKEN=x", "Entrypoint": 12, "Cmd": None, "Image": ["x"]},
        "State": {"Running": "no", "ExitCode": "3", "StartedAt": "yesterday", "OOMKilled": 1},
        "RestartCount": True,
        "Path": None,
        "Args": "x",
    }
    ctx = context_from_inspect(doc)
    assert ctx["image"] is None and ctx["image_digest"] is None and ctx["image_id"] is None
    assert ctx["env"] == {} and ctx["command"] == [] and ctx["restart_count"] is None
    assert ctx["started_at"] is None and ctx["exit_code"] is None
    assert context_from_inspect({"State": "broken", "Config": "broken"})["status"] is None


# ------------------------------------------------------------------------------ inspect() on a stand-in


@pytest.fixture
def fake_podman(tmp_path, monkeypatch):
    """A `podman` stand-in: fake_podman(stdout, code=0, stderr="", script=None)."""

    def make(stdout="", code=0, stderr="", script=None):
        (tmp_path / "out").write_text(stdout)
        (tmp_path / "err").write_text(stderr)
        path = tmp_path / "podman"
        path.write_text(
            "#!/bin/sh\n" + (script or f'/bin/cat "{tmp_path}/out"\n/bin/cat "{tmp_path}/err" >&2\nexit {code}\n')
        )
        path.chmod(path.stat().st_mode | stat.S_IXUSR)
        monkeypatch.setenv("BOOTLOG_PODMAN", str(path))
        monkeypatch.setenv("BOOTLOG_PODMAN_ARGS", "")

    return make


def test_inspect_parses_the_engine_output(fake_podman):
    fake_podman((DATA / "podman-4.3.1-running.json").read_text())
    assert deploy.deploy_context("probe-serve")["image_digest"].startswith("sha256:0262")


@pytest.mark.parametrize(
    "stdout,code,stderr,message",
    [
        ("[]", 125, "Error: inspecting object: no such container nope\n", "no such container: nope"),
        ("[]", 0, "", "no such container: nope"),
        ("{not json", 0, "", "podman inspect nope: output is not JSON"),
        ('{"Id": "x"}', 0, "", "podman inspect nope: expected a list of one object, got an object"),
        ("[1, 2]", 0, "", "podman inspect nope: expected a list of one object, got a list of 2"),
        ("", 125, "Error: \x1b[31mstorage is locked\n", "podman inspect nope failed (exit 125)"),
    ],
)
def test_inspect_failures_are_one_line(fake_podman, stdout, code, stderr, message):
    fake_podman(stdout, code, stderr)
    with pytest.raises(SourceError) as err:
        deploy.inspect("nope")
    assert str(err.value).startswith(message) and "\n" not in str(err.value)
    assert "\x1b" not in str(err.value)


def test_inspect_timeout_is_bounded(fake_podman):
    fake_podman(script="/bin/sleep 30\n")
    t0 = time.monotonic()
    with pytest.raises(SourceError, match="did not answer within 1 s"):
        deploy.inspect("slow", timeout=1)
    assert time.monotonic() - t0 < 3


def test_inspect_engine_not_installed(monkeypatch, tmp_path):
    monkeypatch.setenv("BOOTLOG_PODMAN", str(tmp_path / "no-podman-here"))
    with pytest.raises(SourceError, match="not found on PATH"):
        deploy.inspect("x")
    with pytest.raises(SourceError, match="not a container name"):
        deploy.inspect("--latest")


# ------------------------------------------------------------------------------ env file


def test_env_file_snapshot_uses_the_plan_reader_and_redacts(tmp_path):
    f = tmp_path / "frank-primary.env"
    f.write_text(
        "# frank-primary.env\n\n"
        "FRANK_PRIMARY_IMAGE=docker.io/tcclaviger/vllm@sha256:da4029666668b90a0386c1ed23ea370c79916ad4e1a6ad1dd9db098b9fa069ea\n"
        "export FRANK_PRIMARY_UTIL=0.982\n"
        "FRANK_PRIMARY_CUDAGRAPH_BASE_MB=0\n"
        "FRANK_PRIMARY_SPEC=\n"
        'FRANK_PRIMARY_CHAT_TEMPLATE_KWARGS=\'{"enable_thinking": true, "preserve_thinking": true}\'\n'
        'FRANK_PRIMARY_LEGACY_CONTAINERS="frank-primary-r9v qwen-fp8"\n'
        "HF_TOKEN=hf_FAKE_value\n"
    )
    snap = env_file_snapshot(f)
    assert snap == {
        "FRANK_PRIMARY_IMAGE": "docker.io/tcclaviger/vllm@sha256:da4029666668b90a0386c1ed23ea370c79916ad4e1a6ad1dd9db098b9fa069ea",
        "FRANK_PRIMARY_UTIL": "0.982",
        "FRANK_PRIMARY_CUDAGRAPH_BASE_MB": "0",
        "FRANK_PRIMARY_SPEC": "",
        "FRANK_PRIMARY_CHAT_TEMPLATE_KWARGS": '{"enable_thinking": true, "preserve_thinking": true}',
        "FRANK_PRIMARY_LEGACY_CONTAINERS": "frank-primary-r9v qwen-fp8",
        "HF_TOKEN": REDACTED,
    }


def test_env_file_errors_are_the_plan_reader_s_one_line(tmp_path):
    f = tmp_path / "bad.env"
    f.write_text("GOOD=1\nthis is not an assignment\n")
    with pytest.raises(PlanError, match=r"line 2: not KEY=VALUE"):
        env_file_snapshot(f)
    with pytest.raises(BootlogError):
        env_file_snapshot(tmp_path / "missing.env")


# ------------------------------------------------------------------------------ findings


def test_findings_shape_and_order():
    old = context_from_inspect(sample("podman-4.3.1-running"))
    new = context_from_inspect(sample("podman-4.3.1-secret-args"))
    old["env_file"] = {"FRANK_PRIMARY_CUDAGRAPH_BASE_MB": "256", "FRANK_PRIMARY_UTIL": "0.982", "OLD": "1"}
    new["env_file"] = {"FRANK_PRIMARY_CUDAGRAPH_BASE_MB": "0", "FRANK_PRIMARY_UTIL": "0.982", "NEW": "1"}
    got = findings_json(old, new)
    for f in got:
        assert set(f) == {"key", "section", "rank", "old", "new", "delta", "pct", "verdict", "why"}
        assert f["section"] == "deploy" and f["rank"] is None and f["delta"] is None and f["pct"] is None
    keys = [f["key"] for f in got]
    assert keys[:3] == ["image_digest", "image", "command"]  # image_id only repeats the digest here
    env_keys = [k for k in keys if k.startswith("env.")]
    assert env_keys == sorted(env_keys) and "env.HOSTNAME" not in keys  # the engine's, per container
    assert keys[-4:] == [
        "env_file.FRANK_PRIMARY_CUDAGRAPH_BASE_MB",
        "env_file.FRANK_PRIMARY_UTIL",
        "env_file.NEW",
        "env_file.OLD",
    ]
    by = {f["key"]: f for f in got}
    assert by["image_digest"]["verdict"] == "changed"
    assert by["image_digest"]["old"].startswith("sha256:0262") and by["image_digest"]["new"].startswith("sha256:6628")
    assert by["env.VLLM_API_KEY"]["verdict"] == "new" and by["env.VLLM_API_KEY"]["new"] == REDACTED
    assert by["env.HF_TOKEN"]["verdict"] == "gone"
    assert by["env.GPU_MAX_HW_QUEUES"]["verdict"] == "same"
    assert (
        by["env_file.FRANK_PRIMARY_CUDAGRAPH_BASE_MB"]["old"],
        by["env_file.FRANK_PRIMARY_CUDAGRAPH_BASE_MB"]["new"],
        by["env_file.FRANK_PRIMARY_CUDAGRAPH_BASE_MB"]["verdict"],
    ) == ("256", "0", "changed")
    assert "restart_count" not in by and "exit_code" not in by  # outcomes, not causes
    json.dumps(got)


def test_findings_same_deploy_and_missing_sides():
    ctx = context_from_inspect(sample("podman-4.3.1-restarts"))
    again = context_from_inspect(sample("podman-4.3.1-restarts"))
    again["restart_count"] = 7
    assert {f["verdict"] for f in findings_json(ctx, again)} == {"same"}
    assert findings_json(None, ctx) == [] and findings_json(ctx, None) == []


def test_image_id_speaks_only_when_no_digest_is_known():
    a = {"image": "local/vllm:dev", "image_id": "sha256:" + "a" * 64, "image_digest": None}
    b = {"image": "local/vllm:dev", "image_id": "sha256:" + "b" * 64, "image_digest": None}
    assert [(f["key"], f["verdict"]) for f in findings_json(a, b)] == [("image", "same"), ("image_id", "changed")]


# ------------------------------------------------------------------------------ real podman


def test_real_podman_two_images_digest_diffed(podman_ready):
    tag = uuid.uuid4().hex[:8]
    names = [f"bootlog-deploy-{tag}-a", f"bootlog-deploy-{tag}-b", f"bootlog-deploy-{tag}-w"]
    image_b = f"localhost/bootlog-deploy-{tag}:two"
    try:
        run_podman(
            "run",
            "--name",
            names[0],
            "--network=none",
            "-e",
            "HF_TOKEN=hf_FAKE_a",
            "-e",
            "FRANK_PRIMARY_UTIL=0.982",
            IMAGE,
            "/bin/echo",
            "a",
        )
        # a second image with other bytes: a container's layer committed on top
        run_podman("run", "--name", names[2], "--network=none", IMAGE, "/bin/sh", "-c", "echo x > /tmp/marker")
        run_podman("commit", "-q", names[2], image_b)
        run_podman(
            "run",
            "--name",
            names[1],
            "--network=none",
            "-e",
            "HF_TOKEN=hf_FAKE_b",
            "-e",
            "FRANK_PRIMARY_UTIL=0.98",
            image_b,
            "/bin/echo",
            "b",
        )
        a, b = deploy.deploy_context(names[0], timeout=30), deploy.deploy_context(names[1], timeout=30)
    finally:
        for n in names:
            run_podman("rm", "-f", "-t", "0", n, check=False)
        run_podman("rmi", "-f", image_b, check=False)
    assert a["image"] == IMAGE and b["image"] == image_b
    assert a["image_digest"].startswith("sha256:") and b["image_digest"].startswith("sha256:")
    assert a["image_digest"] != b["image_digest"]
    assert a["exit_code"] == 0 and a["restart_count"] == 0 and a["env"]["HF_TOKEN"] == REDACTED
    by = {f["key"]: f for f in findings_json(a, b)}
    assert by["image_digest"]["verdict"] == "changed" and by["image"]["verdict"] == "changed"
    assert by["env.FRANK_PRIMARY_UTIL"]["old"] == "0.982" and by["env.FRANK_PRIMARY_UTIL"]["new"] == "0.98"
    assert by["env.HF_TOKEN"]["verdict"] == "same"  # a redacted value never differs (the cost of redaction)
    assert by["command"]["old"] == ["/bin/echo", "a"] and by["command"]["new"] == ["/bin/echo", "b"]


def test_real_podman_missing_container(podman_ready):
    with pytest.raises(SourceError, match="no such container: bootlog-deploy-none"):
        deploy.inspect("bootlog-deploy-none", timeout=30)


def test_real_podman_a_lone_word_command_and_the_mounts(podman_ready, tmp_path):
    # podman 4.3.1 repeats a lone-word command's Path in Args: it was stored "/bin/true /bin/true";
    # the mounts (the seeds' missing /root/.cache) were not in the deploy record at all
    tag = uuid.uuid4().hex[:8]
    cache = tmp_path / "cache"
    cache.mkdir()
    names = [f"bootlog-deploy-{tag}-c", f"bootlog-deploy-{tag}-d", f"bootlog-deploy-{tag}-e"]
    try:
        run_podman("run", "--name", names[0], "--network=none", "-v", f"{cache}:/root/.cache", IMAGE, "/bin/true")
        run_podman("run", "--name", names[1], "--network=none", IMAGE, "/bin/true")
        run_podman("run", "--name", names[2], "--network=none", "--entrypoint", "/bin/sleep", IMAGE, "0")
        with_cache, without, entry = (deploy.deploy_context(n, timeout=30) for n in names)
    finally:
        for n in names:
            run_podman("rm", "-f", "-t", "0", n, check=False)
    assert with_cache["command"] == ["/bin/true"] == without["command"]
    assert entry["command"] == ["/bin/sleep", "0"]
    assert with_cache["mounts"] == [{"destination": "/root/.cache", "source": str(cache), "type": "bind", "rw": True}]
    assert without["mounts"] == []
    by = {f["key"]: f for f in findings_json(with_cache, without)}
    assert by["mount./root/.cache"]["verdict"] == "gone" and by["mount./root/.cache"]["old"] == str(cache)
    assert "command" not in by or by["command"]["verdict"] == "same"


def test_diff_names_a_gone_cache_mount_as_the_cause_of_a_cold_compile():
    # seed 10: the warm boot ran with /root/.cache mounted, the next one without: its cold
    # compile is the mount's doing, and the diff says so
    from bootlog.judge import compare
    from bootlog.run.ingest import ingest
    from bootlog.store.db import open_store
    from bootlog.store.reads import show_boot
    from paths import FIXTURES

    import tempfile

    with tempfile.TemporaryDirectory() as d:
        store = open_store(f"{d}/m.db")
        cold, warm = (
            show_boot(store, b.id) for b in ingest(store, str(FIXTURES / "seed" / "10-cold-vs-warm-compile.log"))
        )
    ctx = {"image": IMAGE, "image_digest": "sha256:" + "1" * 64, "command": ["vllm", "serve"], "env": {}}
    warm["deploy"] = {
        **ctx,
        "mounts": [
            {"destination": "/root/.cache", "source": "/home/dank/.cache/frank-primary", "type": "bind", "rw": True}
        ],
    }
    cold["deploy"] = {**ctx, "mounts": []}
    r = compare.diff(cold, warm)  # (the cold boot as the newer one)
    (mount,) = [f for f in r["findings"] if f["key"] == "mount./root/.cache"]
    assert (mount["section"], mount["verdict"], mount["old"]) == ("deploy", "gone", "/home/dank/.cache/frank-primary")
    (cc,) = [f for f in r["findings"] if f["key"] == "compile_cache"]
    assert cc["verdict"] == "changed" and "mount./root/.cache" in cc["why"] and "cold compile 179.24 s" in cc["why"]
