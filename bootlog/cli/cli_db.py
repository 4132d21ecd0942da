"""Housekeeping commands: `bootlog db path|status|upgrade|check|backup` and `bootlog prune`."""

from __future__ import annotations

import click

from bootlog.cli.cli_common import get_store, print_json


def _root_db(ctx: click.Context) -> str | None:
    return ctx.find_root().ensure_object(dict).get("db")


def _raw_store(ctx: click.Context):
    """A connection that does not migrate on open: status/check must report what is there (and
    a path with no database is said to be so, not created empty)."""
    from bootlog.store.db import connect

    store = connect(_root_db(ctx), create=False)
    ctx.call_on_close(store.close)
    return store


@click.group()
def db() -> None:
    """Look after the database: where it is, its state, upgrade, check, backup."""


@db.command("path")
@click.pass_context
def db_path(ctx) -> None:
    """Print the database location (SQLite file, or the URL with its password hidden)."""
    from bootlog.store.housekeeping import db_path as where

    click.echo(where(_root_db(ctx)))


@db.command()
@click.option("--json", "as_json", is_flag=True, help="Print the status as JSON.")
@click.pass_context
def status(ctx, as_json) -> None:
    """Schema revision, whether it is current, and rows per table."""
    from bootlog.errors import StoreError
    from bootlog.store.db import driver_errors, one_line
    from bootlog.store.housekeeping import status as get_status

    try:
        st = get_status(_raw_store(ctx))
    except driver_errors() as err:  # a damaged file: one line, not an internal error
        raise StoreError(f"cannot read the database: {one_line(err)}") from err
    if as_json:
        print_json(st)
        return
    click.echo(f"database  {st.get('path') or st['url']}")
    click.echo(
        f"revision  {st['revision'] or '(empty: created on first use)'}"
        f"{'' if st['up_to_date'] else '  (newest is ' + str(st['head']) + ')'}"
    )
    for table, n in (st.get("rows") or {}).items():
        click.echo(f"  {table:<10} {n:,}")
    if "size_bytes" in st:
        click.echo(f"size      {st['size_bytes']:,} bytes")


@db.command()
@click.pass_context
def upgrade(ctx) -> None:
    """Migrate the schema to the newest revision (normally done on first use)."""
    from bootlog.store.db import connect
    from bootlog.store.housekeeping import upgrade as run_upgrade

    store = connect(_root_db(ctx))
    ctx.call_on_close(store.close)
    before, after = run_upgrade(store)
    click.echo(f"schema {before or '(none)'} -> {after}" if before != after else f"schema already at {after}")


@db.command("check")
@click.pass_context
def db_check(ctx) -> None:
    """Check the schema against what the migrations build and (SQLite) the file's integrity.
    Exit 1 on problems."""
    from bootlog.errors import StoreError
    from bootlog.store.db import driver_errors, one_line
    from bootlog.store.housekeeping import check as run_check

    try:
        problems = run_check(_raw_store(ctx))
    except (StoreError, *driver_errors()) as err:  # type: ignore[misc]  # so damaged that the check itself cannot read it
        cause = err.__cause__ if isinstance(err, StoreError) else err
        if not isinstance(cause, driver_errors()):
            raise
        problems = [f"cannot read the database: {one_line(cause)}"]
    for p in problems:
        click.echo(p)
    if problems:
        ctx.exit(1)
    click.echo("ok")


@db.command()
@click.argument("file", type=click.Path(dir_okay=False))
@click.pass_context
def backup(ctx, file) -> None:
    """Write a consistent copy of a SQLite database to FILE (safe while others write)."""
    from bootlog.store.housekeeping import backup as run_backup

    click.echo(f"backup written to {run_backup(get_store(ctx), file)}")


@click.command()
@click.option(
    "--keep-last",
    type=click.IntRange(min=0),
    required=True,
    metavar="N",
    help="Keep runtime samples of the newest N boots.",
)
@click.option("--container", metavar="NAME", help="Only prune this container's boots.")
@click.option("--host", metavar="NAME", help="Only prune this host's boots (with --container: that host's run of it).")
@click.option("--figures", is_flag=True, help="Also delete the older boots themselves (figures, config, events).")
@click.pass_context
def prune(ctx, keep_last, container, host, figures) -> None:
    """Delete old runtime samples; boot figures stay unless --figures is given."""
    from bootlog.store.housekeeping import prune as run_prune

    out = run_prune(get_store(ctx), keep_last, container=container, figures=figures, host=host)
    click.echo(f"deleted {out['samples']:,} runtime samples" + (f" and {out['boots']:,} boots" if figures else ""))
