"""Real podman for tests: a private store, the `localhost/logreplay` image, and containers that
replay fixture logs the way a vLLM server writes them (all at once, slowly, across restarts).

The settings come from `.ci/podman-setup.sh` (runc, cgroupfs, lowered ulimits, k8s-file logs,
file events, private --root/--runroot).  When the environment was not set up by sourcing it,
`podman_env()` runs the script itself.  When podman truly cannot run, every test using the
`podman_ready` (or `replayer`) fixture is skipped with the exact error, loudly (in the skip
reason and the warnings summary), never silently.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import uuid
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SETUP = ROOT / ".ci" / "podman-setup.sh"
IMAGE = "localhost/logreplay:latest"

# The replay program, run by the image's busybox sh.  Each start of the container replays the
# next /data/bootN directory: *.out to stdout, *.err to stderr, *.sleep sleeps, *.exit exits
# with that code, *.hold keeps running like a server that is up, *.gate waits until the test
# opens that gate (Replayer.open_gate), so a test decides when the next part is written.
REPLAY_SH = r"""
n=$(cat /state/n 2>/dev/null || echo 0); n=$((n+1)); echo "$n" > /state/n
d=/data/boot$n
[ -d "$d" ] || d=$(ls -d /data/boot* | tail -n 1)
for f in "$d"/*; do
  case "$f" in
    *.out) cat "$f" ;;
    *.err) cat "$f" >&2 ;;
    *.sleep) sleep "$(cat "$f")" ;;
    *.exit) exit "$(cat "$f")" ;;
    *.hold) exec sleep 3600 ;;
    *.gate) while [ ! -e "/state/$(cat "$f")" ]; do sleep 0.05; done ;;
  esac
done
"""

_ENV_KEYS = ("BOOTLOG_PODMAN_HOME", "CONTAINERS_CONF", "BOOTLOG_PODMAN_ARGS", "BOOTLOG_PODMAN")
_setup_error: str | None = None


def podman_env() -> dict[str, str]:
    """The podman settings bootlog and the tests share; runs the setup script when needed.

    Returns {} (and records why) when podman cannot be made to work."""
    global _setup_error
    if os.environ.get("CONTAINERS_CONF") and os.environ.get("BOOTLOG_PODMAN_ARGS"):
        return {k: os.environ[k] for k in _ENV_KEYS if k in os.environ}
    if _setup_error is not None:
        return {}
    done = subprocess.run(["bash", str(SETUP)], stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=600)
    env = {}
    for line in done.stdout.splitlines():
        if line.startswith("export "):
            key, _, value = line[len("export ") :].partition("=")
            env[key] = shlex.split(value)[0] if value else ""
    if done.returncode != 0 or "CONTAINERS_CONF" not in env or "podman NOT ready" in done.stderr:
        _setup_error = (done.stderr.strip().splitlines() or [f"exit {done.returncode}"])[0]
        return {}
    os.environ.update(env)  # bootlog's own podman calls (subprocesses) must see the same store
    return env


def podman_argv() -> list[str]:
    env = podman_env()
    return [env.get("BOOTLOG_PODMAN", "podman"), *shlex.split(env.get("BOOTLOG_PODMAN_ARGS", ""))]


def run_podman(*args: str, check: bool = True, timeout: float = 60) -> subprocess.CompletedProcess:
    """Run podman with the private store; output as text."""
    done = subprocess.run(
        [*podman_argv(), *args],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        errors="replace",
        timeout=timeout,
    )
    if check and done.returncode != 0:
        raise AssertionError(f"podman {' '.join(args)} failed ({done.returncode}): {done.stderr.strip()}")
    return done


def skip_reason() -> str | None:
    """Why podman cannot run here (the exact error), or None when it can."""
    env = podman_env()
    if not env:
        return f"REAL PODMAN UNAVAILABLE: {_setup_error}"
    try:
        done = run_podman("run", "--rm", "--network=none", IMAGE, "/bin/echo", "ok", check=False)
    except (OSError, subprocess.TimeoutExpired) as err:
        return f"REAL PODMAN UNAVAILABLE: {err}"
    if done.returncode != 0 or done.stdout.strip() != "ok":
        return f"REAL PODMAN UNAVAILABLE: podman run failed: {done.stderr.strip()}"
    return None


# ------------------------------------------------------------------------------------ scenarios


@dataclass
class Boot:
    """One start of the replay container: steps of ("out"|"err", bytes), ("sleep", s),
    ("exit", code) or ("hold", None)."""

    steps: list[tuple[str, object]] = field(default_factory=list)

    def out(self, data: bytes) -> "Boot":
        self.steps.append(("out", data))
        return self

    def err(self, data: bytes) -> "Boot":
        self.steps.append(("err", data))
        return self

    def sleep(self, seconds: float) -> "Boot":
        self.steps.append(("sleep", seconds))
        return self

    def exit(self, code: int) -> "Boot":
        self.steps.append(("exit", code))
        return self

    def hold(self) -> "Boot":
        self.steps.append(("hold", None))
        return self

    def gate(self, name: str) -> "Boot":
        self.steps.append(("gate", name))
        return self

    def slowly(self, data: bytes, pieces: int, pause: float) -> "Boot":
        """`data` in `pieces` parts cut at line ends, with `pause` seconds between them."""
        lines = data.splitlines(keepends=True)
        step = max(1, -(-len(lines) // pieces))
        for i in range(0, len(lines), step):
            if i:
                self.sleep(pause)
            self.out(b"".join(lines[i : i + step]))
        return self


def all_at_once(log: bytes, *, exit_code: int | None = None) -> Boot:
    """The whole log, then exit (with `exit_code`) or keep running (None)."""
    boot = Boot().out(log)
    return boot.exit(exit_code) if exit_code is not None else boot.hold()


def unstamped(log: bytes) -> bytes:
    """A `podman logs --timestamps` log (the seeds) as the server printed it: each line's
    stamp taken off, for a replay container whose own stamps podman then writes."""
    import re

    return re.sub(rb"(?m)^\d{4}-\d\d-\d\dT[\d:.]+Z ", b"", log)


def until_ready(log: bytes) -> tuple[bytes, bytes]:
    """Split a log after its "Application startup complete." line."""
    at = log.index(b"Application startup complete.")
    end = log.index(b"\n", at) + 1
    return log[:end], log[end:]


def runtime_oom(
    prefix: bytes = b"(EngineCore_DP0 pid=130) ",
    date: bytes = b"06-19 11:20:00",
    api_prefix: bytes = b"(APIServer pid=1) ",
) -> bytes:
    """A runtime OOM after startup in vLLM v1's wording (vllm-log-formats.tsv: "EngineCore
    encountered a fatal error." + traceback ending in torch.OutOfMemoryError, then the API
    server's "Engine core proc ... died unexpectedly"), with the numbers of the operator's
    seed (50 MiB requested, 0 bytes free)."""
    err = prefix + b"ERROR " + date + b" [core.py:720] "
    lines = [
        err + b"EngineCore encountered a fatal error.",
        err + b"Traceback (most recent call last):",
        err + b'  File "/usr/local/lib/python3.12/dist-packages/vllm/v1/engine/core.py", line 711, in run_engine_core',
        err + b"    engine_core.run_busy_loop()",
        err + b"torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 50.00 MiB. GPU 0 has a total "
        b"capacity of 31.86 GiB of which 0 bytes is free. Of the allocated memory 30.12 GiB is allocated by "
        b"PyTorch, and 112.00 MiB is reserved by PyTorch but unallocated.",
        api_prefix + b"ERROR " + date + b" [core_client.py:564] Engine core proc EngineCore_DP0 died unexpectedly, "
        b"shutting down client.",
    ]
    return b"\n".join(lines) + b"\n"


class Replayer:
    """Creates replay containers in the private store and removes them afterwards."""

    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        self.names: list[str] = []
        self.state_dirs: dict[str, Path] = {}

    def start(
        self,
        boots: list[Boot],
        *,
        name: str | None = None,
        attach: bool = False,
        restart: str | None = None,
        tty: bool = False,
        rm: bool = False,
        image: str = IMAGE,
        env: dict[str, str] | None = None,
    ) -> str:
        """Create and start a container that replays `boots[0]` now and `boots[i]` on its
        i-th restart (`restart`: a podman restart policy such as "on-failure:1", which
        restarts it by itself as systemd's Restart= would; `tty`: run it with -t).  Returns the
        container name."""
        name = name or f"bl-{uuid.uuid4().hex[:10]}"
        run_dir = self.tmp / f"{name}-{uuid.uuid4().hex[:6]}"  # a name may be reused (rm + run)
        data = run_dir / "data"
        state = run_dir / "state"
        state.mkdir(parents=True)
        for i, boot in enumerate(boots, 1):
            d = data / f"boot{i}"
            d.mkdir(parents=True)
            for j, (kind, value) in enumerate(boot.steps):
                path = d / f"{j:04d}.{kind}"
                if isinstance(value, bytes):
                    path.write_bytes(value)
                else:
                    path.write_text("" if value is None else str(value))
        (data / "replay.sh").write_text(REPLAY_SH)
        self.names.append(name)
        self.state_dirs[name] = state
        policy = ["--restart", restart] if restart else []
        if tty:  # `podman run -t`: output through a pseudo-terminal (CRLF, reads of <= 4095 bytes)
            policy.append("-t")
        if rm:  # `podman run --rm` (systemd units made by `podman generate systemd --new`)
            policy.append("--rm")
        for key, value in (env or {}).items():
            policy += ["-e", f"{key}={value}"]
        run_podman(
            "run",
            "-d",
            "--name",
            name,
            "--network=none",
            *policy,
            "-v",
            f"{data}:/data:ro",
            "-v",
            f"{state}:/state",
            image,
            "/bin/sh",
            "/data/replay.sh",
        )
        if attach:
            wait_exit(name)
        return name

    def open_gate(self, name: str, gate: str) -> None:
        """Let the container go past its `gate` step."""
        (self.state_dirs[name] / gate).touch()

    def restart(self, name: str) -> None:
        """Start the next boot of a stopped container (as systemd's podman start would)."""
        wait_exit(name)
        run_podman("start", name)

    def cleanup(self) -> None:
        for name in self.names:
            run_podman("rm", "-f", "-t", "0", name, check=False)


def wait_exit(name: str, timeout: float = 30) -> int:
    """Block until the container has exited; its exit code."""
    done = run_podman("wait", name, timeout=timeout)
    return int(done.stdout.strip().splitlines()[-1])


def fixture_log(name: str) -> Path:
    """A corpus log: the project's copy in fixtures/logs, else the shared corpus."""
    for base in (
        ROOT / "fixtures" / "logs",
        ROOT.parent / "shared" / "corpus" / "raw",
        Path("/work/shared/corpus/raw"),
    ):
        if (base / name).is_file():
            return base / name
    pytest.skip(f"FIXTURE MISSING: {name} is in neither fixtures/logs nor the shared corpus")


@pytest.fixture(scope="session")
def podman_ready() -> dict[str, str]:
    reason = skip_reason()
    if reason:
        # loud: in the warnings summary of every run, not only with -rs
        warnings.warn(reason, UserWarning, stacklevel=1)
        pytest.skip(reason)
    return podman_env()


@pytest.fixture
def replayer(podman_ready, tmp_path):
    rep = Replayer(tmp_path)
    yield rep
    rep.cleanup()
