"""Shared test setup: every test gets its own database location (never the user's)."""

from __future__ import annotations

import pytest

# the real-podman fixtures (a store of this run's own, a replay container): every test may ask
from podman_util import podman_ready, replayer  # noqa: F401


@pytest.fixture(autouse=True)
def _isolated_db(tmp_path, monkeypatch):
    # like llm's autouse fixture: no test may touch ~/.local/share/bootlog
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))  # (and no ~/.cache/bootlog)
    monkeypatch.delenv("BOOTLOG_NO_CACHE", raising=False)
    monkeypatch.delenv("BOOTLOG_DB", raising=False)
    yield


@pytest.fixture
def db_path(tmp_path) -> str:
    return str(tmp_path / "bootlog.db")


def _v1_start(api: int, engine: int, minute: int) -> list[str]:
    """The first lines of a V1 server's boot (API server pid `api`, engine core pid `engine`)."""
    ts = f"11-20 10:{minute % 60:02d}:00"
    return [
        f"(APIServer pid={api}) INFO {ts} [api_server.py:1] vLLM API server version 0.11.0",
        f"(APIServer pid={api}) INFO {ts} [utils.py:2] non-default args: {{'model': 'm{api}'}}",
        f"(EngineCore_DP0 pid={engine}) INFO {ts} [core.py:3] Initializing a V1 LLM engine (v0.11.0) "
        f"with config: model='m{api}'",
        f"(EngineCore_DP0 pid={engine}) INFO {ts} [kv_cache_utils.py:1028] GPU KV cache size: 5,000 tokens",
    ]


def _v1_stats(api: int, minute: int) -> str:
    """A V1 server's periodic stats line, tagged with its API server's pid."""
    return (
        f"(APIServer pid={api}) INFO 11-20 10:{minute % 60:02d}:30 [loggers.py:259] Engine 000: Avg prompt "
        f"throughput: {minute}.0 tokens/s, Avg generation throughput: 1.0 tokens/s, Running: 1 reqs, "
        "Waiting: 0 reqs, GPU KV cache usage: 2.0%, Prefix cache hit rate: 0.0%"
    )


@pytest.fixture
def v1_start():
    """_v1_start: a V1 server's first lines, for logs made line by line."""
    return _v1_start


@pytest.fixture
def v1_stats():
    """_v1_stats: a V1 server's stats line."""
    return _v1_stats
