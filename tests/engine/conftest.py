"""The engine tier: real vLLM servers (harness.py), each scenario checked against what the server
itself says — its exit code, its /metrics, podman inspect, a streaming client of our own — never
against bootlog alone.  Run it with `python3 -m pytest -m engine tests/engine -n 0` (one server
at a time, each module's scenarios in order; the ordinary suite skips it: pyproject's addopts);
the first run installs vLLM into ~/.cache/bootlog-engine.

Every log a scenario makes is kept under $BOOTLOG_ENGINE_LOGS (default: the session's temporary
directory) so it can be looked at, and copied into fixtures/logs/engine/ with its provenance.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import harness  # noqa: E402


@pytest.fixture(scope="session")
def engine_logs(tmp_path_factory) -> Path:
    where = os.environ.get("BOOTLOG_ENGINE_LOGS")
    out = Path(where) if where else tmp_path_factory.mktemp("engine-logs")
    out.mkdir(parents=True, exist_ok=True)
    return out


@pytest.fixture(scope="session")
def compile_cache(tmp_path_factory) -> Path:
    """vLLM's cache root for this session: empty at first, so the first boot of a release is cold
    and the next ones warm, whatever earlier runs left in ~/.cache/vllm."""
    return tmp_path_factory.mktemp("vllm-cache")


@pytest.fixture(scope="session")
def installed() -> None:
    """The releases and the model, installed once (minutes the first time, then cached)."""
    for release in harness.RELEASES:
        harness.venv(release)
    harness.model()


class Bootlog:
    """bootlog as the operator runs it: the installed command, one database, from `cwd`."""

    def __init__(self, db: Path) -> None:
        self.db = db

    def run(self, *args: str, timeout: float = 600, env: dict | None = None) -> subprocess.CompletedProcess:
        done = subprocess.run(
            ["bootlog", "--db", str(self.db), *args],
            capture_output=True,
            text=True,
            timeout=timeout,
            env={**os.environ, **(env or {})},
            stdin=subprocess.DEVNULL,
        )
        assert "Traceback" not in done.stderr, done.stderr
        return done

    def json(self, *args: str) -> dict | list:
        done = self.run(*args, "--json")
        assert done.returncode == 0, (args, done.stdout, done.stderr)
        return json.loads(done.stdout)

    def show(self, ref: str = "last") -> dict:
        return self.json("show", ref)


@pytest.fixture(scope="module")
def bootlog(tmp_path_factory) -> Bootlog:
    """One database per scenario module: its boots are one history."""
    return Bootlog(tmp_path_factory.mktemp("db") / "bootlog.db")
