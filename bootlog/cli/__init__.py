"""The command line: click only (options, one call into run/ or judge/, one render; errors become
exit codes in console.error_exit).  `main` is the console script; the click group `cli` is loaded
on first use, so `bootlog --help` does not pay for it at import."""

from __future__ import annotations

from typing import Any

from bootlog.cli.entry import main

__all__ = ["cli", "main"]


def __getattr__(name: str) -> Any:
    if name == "cli":
        from bootlog.cli.commands import cli

        return cli
    raise AttributeError(f"module 'bootlog.cli' has no attribute {name!r}")
