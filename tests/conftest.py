"""Shared test setup: every test gets its own database location (never the user's)."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures" / "logs"


@pytest.fixture(autouse=True)
def _isolated_db(tmp_path, monkeypatch):
    # like llm's autouse fixture: no test may touch ~/.local/share/bootlog
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    monkeypatch.delenv("BOOTLOG_DB", raising=False)
    yield


@pytest.fixture
def db_path(tmp_path) -> str:
    return str(tmp_path / "bootlog.db")
