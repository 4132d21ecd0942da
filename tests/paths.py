"""Where the test data lives.  Plain constants, importable at collection time (a parametrize
list needs them before any fixture runs); helpers that do something are fixtures in conftest.py,
which is never imported by name (pytest loads it itself)."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures" / "logs"
