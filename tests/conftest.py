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


def grow_and_ingest(engine, log: Path, data: bytes, cuts: list[int]) -> list:
    """Append data to `log` up to each cut in turn, ingesting after each append; the results."""
    from bootlog.ingest import ingest

    out, done = [], 0
    for cut in cuts:
        with open(log, "ab") as f:
            f.write(data[done:cut])
        done = cut
        out.append(ingest(engine, str(log)))
    return out
