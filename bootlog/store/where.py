"""Where the database is and which schema revision is current, with the standard library only.

db.py (SQLAlchemy) and lite.py (sqlite3) both start here, so the resume path of a re-ingest can
find and check the database without importing SQLAlchemy.
"""
from __future__ import annotations

import os
import re
from pathlib import Path

# The newest revision in migrations/versions; tests/test_migrations.py checks it against the
# script directory, so bumping a migration without bumping this fails a test, not a user.
HEAD_REVISION = "0001_initial"

_URL_RE = re.compile(r"^[a-zA-Z][a-zA-Z0-9+]*://")


def default_path() -> Path:
    base = os.environ.get("XDG_DATA_HOME") or os.path.join(os.path.expanduser("~"), ".local", "share")
    return Path(base) / "bootlog" / "bootlog.db"


def resolve_url(db: str | None) -> str:
    """--db value, else $BOOTLOG_DB, else the user data dir; a plain path means SQLite."""
    value = db or os.environ.get("BOOTLOG_DB") or str(default_path())
    if _URL_RE.match(value):
        return value
    return "sqlite:///" + os.path.abspath(os.path.expanduser(value))


def plain_sqlite_file(url: str) -> str | None:
    """The file of a plain `sqlite:///PATH` URL (no driver, no query string), else None: anything
    fancier is left to SQLAlchemy's URL parser."""
    prefix = "sqlite:///"
    if not url.startswith(prefix) or "?" in url:
        return None
    path = url[len(prefix):]
    return path if path and path != ":memory:" else None
