"""Typed errors and the exit codes of the CLI contract (one enum, as httpie does)."""

from __future__ import annotations

from enum import IntEnum
from typing import Any


class Exit(IntEnum):
    OK = 0  # ran and found nothing wrong
    ERROR = 1  # bad input, no such container, database trouble
    USAGE = 2  # usage error (click's own code)
    DRIFT = 3  # drift found (diff/check/hook)
    VIOLATION = 4  # a hard plan expectation failed, or the boot failed


class BootlogError(Exception):
    """A failure the user can act on; cli.py prints str(err) as one line and exits with .exit."""

    exit = Exit.ERROR

    def __init__(self, message: str, **data: Any) -> None:
        super().__init__(message)
        self.data = data


class InputError(BootlogError):
    """The input cannot be read (missing file, directory, truncated gzip, ...)."""


class SourceError(BootlogError):
    """A source command failed: podman missing, no such container."""


class StoreError(BootlogError):
    """The database cannot be opened, migrated or written."""


class RefError(BootlogError):
    """A boot reference (last, prev, last~N, id) names no boot (exit 1, as a missing file)."""


class RefSyntaxError(RefError):
    """A REF spelt as none of last, prev, last~N or an id: the command was used wrongly (exit 2,
    as click's own bad values)."""

    exit = Exit.USAGE


class PlanError(BootlogError):
    """A plan file is wrong: bad TOML, unknown figure, a pattern failing its samples."""
