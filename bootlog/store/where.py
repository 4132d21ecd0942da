"""Where the database is: --db, else $BOOTLOG_DB, else the user's data directory."""

from __future__ import annotations

import os
import re

from bootlog.errors import StoreError

_URL_RE = re.compile(r"^[a-zA-Z][a-zA-Z0-9+]*://")


def default_path() -> str:
    """bootlog.db in bootlog's directory under $XDG_DATA_HOME, else ~/.local/share."""
    base = os.environ.get("XDG_DATA_HOME", "")
    if not os.path.isabs(base):  # unset, empty or relative: the XDG spec says ignore it
        base = os.path.join(os.path.expanduser("~"), ".local", "share")
    return os.path.join(base, "bootlog", "bootlog.db")


def resolve_url(db: str | None) -> str:
    """--db value, else $BOOTLOG_DB, else the user data dir; a plain path means SQLite."""
    value = db or os.environ.get("BOOTLOG_DB") or str(default_path())
    if _URL_RE.match(value):
        return value
    return "sqlite:///" + os.path.abspath(os.path.expanduser(value))


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
        os.close(os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
    except FileExistsError:
        pass  # another process created it first; fine
    except OSError as err:
        raise StoreError(f"cannot create database {path}: {err.strerror or err}") from err
