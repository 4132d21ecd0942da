"""What every command module shares: the database handle, JSON output, option checks.

Commands raise BootlogError subclasses; the root group (cli.py) turns them into one stderr line
and the error's exit code.  Only click and the standard library are imported here so that
`bootlog --help` stays fast.
"""

from __future__ import annotations

import sys
from typing import Any

import click

from bootlog.cli.console import to_json  # noqa: F401  (re-exported: the commands import them from here)


def get_store(ctx: click.Context, *, create: bool = False):
    """The database of the root --db option, opened (and migrated) on first use and closed when
    the command ends.  create False (every read command): a missing SQLite file is an error,
    never a new empty database."""
    root = ctx.find_root()
    obj = root.ensure_object(dict)
    if obj.get("store") is None:
        from bootlog.store.db import open_store

        obj["store"] = open_store(obj.get("db"), create=create)
        root.call_on_close(obj["store"].close)
    return obj["store"]


def print_json(obj: Any) -> None:
    click.echo(to_json(obj))


def stderr_is_tty() -> bool:
    return sys.stderr.isatty()


def plan_path(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    """--plan's callback: an empty value (`--plan "$PLAN"` with PLAN unset) is a usage error,
    never a run without the plan that reports a deploy OK unchecked."""
    if value is not None and not value.strip():
        raise click.BadParameter("is empty: give the plan TOML file", ctx=ctx, param=param)
    return value


class Seconds(click.FloatRange):
    """A finite number of seconds (FloatRange lets nan through: a timeout that never ends)."""

    def convert(self, value, param, ctx):
        import math

        v = super().convert(value, param, ctx)
        if not math.isfinite(v):
            self.fail(f"{value!r} is not a finite number of seconds", param, ctx)
        return v


def width_option(f):
    """--width: the one rule for how wide a command's lines may be (console.line_width)."""
    return click.option(
        "--width",
        "width",
        type=click.IntRange(min=0),
        metavar="COLS",
        help="Cut lines to COLS columns (0: never). Default: the terminal's width on a "
        "terminal; nothing is cut into a pipe or a file.",
    )(f)


def line_width(asked: int | None) -> int | None:
    """Columns a line of text output may take: --width when given (0: no limit), else the
    terminal's width when stdout is one (COLUMNS when set), else no limit: a pipe (`| less -S`,
    `| grep`) gets every line whole."""
    if asked is not None:
        return asked or None
    if not sys.stdout.isatty():
        return None
    import shutil

    return shutil.get_terminal_size().columns
