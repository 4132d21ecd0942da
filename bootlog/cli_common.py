"""What every command module shares: the database handle, JSON output, the error rule.

Commands raise BootlogError subclasses; the root group (cli.py) turns them into one stderr line
and the error's exit code.  Only click and the standard library are imported here so that
`bootlog --help` stays fast.
"""
from __future__ import annotations

import sys
from typing import Any

import click

from bootlog.console import fmt_num, to_json  # noqa: F401  (re-exported: the commands import them from here)


def get_engine(ctx: click.Context):
    """The SQLAlchemy engine for the root --db option, opened (and migrated) on first use."""
    root = ctx.find_root()
    obj = root.ensure_object(dict)
    if obj.get("engine") is None:
        from bootlog.store.db import open_db

        obj["engine"] = open_db(obj.get("db"))
    return obj["engine"]


def get_ingest_store(ctx: click.Context, paths: tuple[str, ...]):
    """What `ingest` of files writes through (cli_ingest.open_ingest_store: the sqlite3-only
    store for a current SQLite file, else the engine, kept for the command like get_engine's)."""
    root = ctx.find_root()
    obj = root.ensure_object(dict)
    if paths and obj.get("engine") is None:
        from bootlog.cli_ingest import open_ingest_store

        store = open_ingest_store(obj.get("db"))
        if not getattr(store, "lite", False):
            obj["engine"] = store
        return store
    return get_engine(ctx)


class Reads:
    """resolve_ref, show_boots and boots_like bound to one database: store/reads.py's over a
    sqlite3 fetch, or store/queries.py's (the same SQL, over SQLAlchemy) over an engine."""

    def __init__(self, impl, handle) -> None:
        self.impl, self.handle = impl, handle

    def resolve_ref(self, ref: str, container: str | None = None, host: str | None = None) -> int:
        return self.impl.resolve_ref(self.handle, ref, container, host)

    def show_boots(self, boot_ids: list[int], *, runtime: bool = True) -> list[dict]:
        return self.impl.show_boots(self.handle, boot_ids, runtime=runtime)

    def boots_like(self, boot_id: int) -> list[int]:
        return self.impl.boots_like(self.handle, boot_id)


def get_reads(ctx: click.Context) -> Reads:
    """The reads of `diff` and `check`: over a bare sqlite3 connection when the database is a
    current SQLite file (importing SQLAlchemy and the models is ~0.3 s of a ~0.45 s diff on
    the project VM), else over get_engine()."""
    root = ctx.find_root()
    obj = root.ensure_object(dict)
    if obj.get("engine") is None:
        from bootlog.store.lite import open_reader, reader_fetch

        conn = open_reader(obj.get("db"))
        if conn is not None:
            from bootlog.store import reads

            return Reads(reads, reader_fetch(conn))
    from bootlog.store import queries

    return Reads(queries, get_engine(ctx))


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

