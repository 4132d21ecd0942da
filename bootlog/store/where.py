"""Where the database is and which schema revision is current, with the standard library only.

db.py (SQLAlchemy) and lite.py (sqlite3) both start here, so the resume path of a re-ingest can
find and check the database without importing SQLAlchemy.
"""
from __future__ import annotations

import os
import re

from bootlog.errors import StoreError

# The newest revision in migrations/versions; tests/test_migrations.py checks it against the
# script directory, so bumping a migration without bumping this fails a test, not a user.
HEAD_REVISION = "0001_initial"

# The page size of a database file bootlog creates (SQLite's largest; its default is 4096).  A
# first ingest of a big log writes ~30 MB of sample rows twice (into the WAL, then the file):
# in 64 KiB pages, a sixteenth of the page writes, and its store step took 0.12-0.18 s instead of
# 0.26-0.30 s on a 512 MiB log (a re-ingest touches a few pages: it cost the same).  It applies
# to a new, empty file only: an older database keeps its pages.
PAGE_SIZE = 65536

_URL_RE = re.compile(r"^[a-zA-Z][a-zA-Z0-9+]*://")


def user_dir(variable: str, *home: str) -> str:
    """bootlog's directory under an XDG base directory: $variable, else ~/*home (the spec's
    default for it)."""
    base = os.environ.get(variable, "")
    if not os.path.isabs(base):  # unset, empty or relative: the XDG spec says ignore it
        base = os.path.join(os.path.expanduser("~"), *home)
    return os.path.join(base, "bootlog")


def default_path() -> str:
    # (a str, not a pathlib.Path: pathlib's import is a measurable part of a re-ingest's start)
    return os.path.join(user_dir("XDG_DATA_HOME", ".local", "share"), "bootlog.db")


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


def create_private_file(path: str) -> None:
    # the database holds the operator's configs and error text: create it 0600, never umask-wide
    parent = os.path.dirname(path)
    if parent and not os.path.isdir(parent) and os.path.abspath(path) != os.path.abspath(default_path()):
        # only the default location is made on the fly: a mistyped --db must not quietly start
        # an empty database somewhere else
        raise StoreError(f"cannot create database {path}: directory {parent} does not exist")
    try:
        if parent:
            os.makedirs(parent, mode=0o700, exist_ok=True)
        fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
        os.close(fd)
    except FileExistsError:
        pass  # another process created it first; fine
    except OSError as err:
        raise StoreError(f"cannot create database {path}: {err.strerror or err}") from err
