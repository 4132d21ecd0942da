"""bootlog's command line: parse options, call one function, render.  No logic lives here.

Commands from other modules are loaded lazily so `bootlog --help` imports neither SQLAlchemy,
alembic nor pandas.
"""

from __future__ import annotations

import importlib
import os

import click

from bootlog.cli.cli_common import get_store, line_width, plan_path, print_json, width_option
from bootlog.cli.cli_ingest import ingest_command
from bootlog.cli.console import error_exit

# command name -> "module:attribute"; kept here so the root knows every command without importing it
LAZY = {
    "diff": "bootlog.cli.cli_drift:diff",
    "check": "bootlog.cli.cli_drift:check",
    "explain": "bootlog.cli.cli_drift:explain",
    "hook": "bootlog.cli.cli_hook:hook",
    "watch": "bootlog.cli.cli_hook:watch",
    "history": "bootlog.cli.cli_report:history",
    "export": "bootlog.cli.cli_report:export",
    "plot": "bootlog.cli.cli_report:plot",
    "report": "bootlog.cli.cli_report:report",
    "db": "bootlog.cli.cli_db:db",
    "prune": "bootlog.cli.cli_db:prune",
}


class Root(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        names = set(super().list_commands(ctx))
        for name, target in LAZY.items():
            if self._load(name, target, quiet=True) is not None:
                names.add(name)
        return sorted(names)

    def resolve_command(self, ctx: click.Context, args: list[str]):
        # `bootlog dif`: name the command that was meant, as git does
        name = args[0] if args else ""
        if args and self.get_command(ctx, name) is None and not name.startswith("-"):
            import difflib

            near = difflib.get_close_matches(name, self.list_commands(ctx), n=1, cutoff=0.6)
            hint = f" Did you mean '{near[0]}'?" if near else ""
            ctx.fail(f"No such command '{name}'.{hint}")
        return super().resolve_command(ctx, args)

    @staticmethod
    def _load(name: str, target: str, quiet: bool = False):
        module, attr = target.split(":")
        try:
            return getattr(importlib.import_module(module), attr)
        except (ImportError, AttributeError):
            if quiet:
                return None
            raise

    def add_command(self, cmd: click.Command, name: str | None = None) -> None:
        super().add_command(with_db_option(cmd), name)

    def get_command(self, ctx: click.Context, name: str):
        cmd = click.Group.get_command(self, ctx, name)
        if cmd is None and name in LAZY:
            cmd = self._load(name, LAZY[name])
        return with_db_option(cmd) if cmd is not None else None

    def invoke(self, ctx: click.Context):
        try:
            return super().invoke(ctx)
        except (click.exceptions.Exit, click.ClickException, click.Abort):
            raise
        except (Exception, KeyboardInterrupt) as err:
            code = error_exit(err, click.echo)
            if code is None:
                raise
            ctx.exit(code)


def _check_db(db: str | None) -> None:
    if db is not None and not db.strip():
        # `--db "$DB"` with DB unset: never fall back to the default database silently
        # (an empty BOOTLOG_DB counts as unset, as click reads it)
        raise click.UsageError(
            "--db is empty: give a SQLite path or a database URL (or leave it out "
            "for ~/.local/share/bootlog/bootlog.db)"
        )


def _sub_db(ctx: click.Context, param: click.Parameter, value: str | None) -> None:
    """--db given after the subcommand (`bootlog diff --db X last prev`): the same database
    option as the root's; given at both places it must name the same database."""
    if value is None:
        return
    _check_db(value)
    obj = ctx.find_root().ensure_object(dict)
    if obj.get("db_given") and obj["db"] != value:
        # (neither is echoed: a database URL can hold a password)
        raise click.UsageError("--db given twice with different databases (before and after the command)")
    obj["db"], obj["db_given"] = value, True


def with_db_option(cmd: click.Command) -> click.Command:
    """`cmd` (and, for a group such as `db`, its subcommands) taking --db as the root does.
    No envvar here: BOOTLOG_DB is read once, by the root, and a --db written anywhere wins."""
    if not any(p.name == "sub_db" for p in cmd.params):
        cmd.params.append(
            click.Option(
                ["--db", "sub_db"],
                metavar="URL_OR_PATH",
                expose_value=False,
                callback=_sub_db,
                help="Database (as bootlog --db): a SQLite path or a SQLAlchemy URL.",
            )
        )
    for sub in getattr(cmd, "commands", {}).values():
        with_db_option(sub)
    return cmd


@click.group(cls=Root, context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--db",
    metavar="URL_OR_PATH",
    envvar="BOOTLOG_DB",
    help="Database: a SQLite path or a SQLAlchemy URL (postgresql+psycopg://…). "
    "Default: $BOOTLOG_DB, else ~/.local/share/bootlog/bootlog.db.",
)
@click.version_option(package_name="bootlog")
@click.pass_context
def cli(ctx: click.Context, db: str | None) -> None:
    """Turn vLLM server logs into a regression database.

    \b
    Exit codes: 0 nothing wrong · 1 error · 2 usage · 3 drift found ·
                4 a hard plan expectation failed, or the boot failed.
    REF: last, prev, last~N, or a boot id.
    """
    _check_db(db)
    src = ctx.get_parameter_source("db")
    ctx.ensure_object(dict).update(db=db, db_given=src == click.core.ParameterSource.COMMANDLINE)


@cli.command()
@click.argument("paths", nargs=-1)
@click.option(
    "--container",
    metavar="NAME",
    help="Read `podman logs --timestamps NAME`; with PATHS: label those saved logs as this container's.",
)
@click.option(
    "--engine",
    "container_engine",
    type=click.Choice(["podman", "docker"]),
    default="podman",
    show_default=True,
    help="Container engine for --container.",
)
@click.option("--host", metavar="NAME", help="Label the boots with this host (default: this machine's hostname).")
@click.option(
    "--plan",
    "plan_file",
    type=click.Path(dir_okay=False),
    callback=plan_path,
    help="Apply the plan's user patterns while ingesting.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the ingested boots as JSON.")
@click.pass_context
def ingest(ctx, paths, container, container_engine, host, plan_file, as_json) -> None:
    """Read vLLM logs (files, .gz, `-` for stdin, or a container) and store every boot.

    Re-ingesting the same content adds nothing. Prints one line per boot found.  PATHS with
    --container NAME: saved logs of that container, stored as its history.
    """
    if not paths and not container:
        raise click.UsageError("give one or more PATHS (or - for stdin), or --container NAME")
    plan = None
    if plan_file:
        from bootlog.judge.plan import load_plan

        plan = load_plan(plan_file)
    code = ingest_command(
        get_store(ctx, create=True),
        paths,
        container=container,
        container_engine=container_engine,
        host=host,
        plan=plan,
        as_json=as_json,
        echo=click.echo,
    )
    if code:
        ctx.exit(code)


@cli.command("list")
@click.option("--container", metavar="NAME", help="Only boots of this container.")
@click.option("--host", metavar="NAME", help="Only boots of this host.")
@click.option("--json", "as_json", is_flag=True, help="JSON array of boot objects, newest last.")
@click.pass_context
def list_(ctx, container, host, as_json) -> None:
    """List stored boots, newest last."""
    from bootlog.render.logclock import on_clock
    from bootlog.run.reread import boot_clocks
    from bootlog.store.reads import list_boots

    store = get_store(ctx)
    boots = list_boots(store, container=container, host=host)
    clocks = boot_clocks(store, boots)  # (each boot on its own log's clock, with the zone)
    if as_json:
        print_json([on_clock(b, clocks[b["id"]]) for b in boots])
        return
    if not boots:
        from bootlog.render.report import nothing_stored

        click.echo(nothing_stored(container, host))
        return
    from bootlog.safe import cut, pad, width

    # every cell is log text: escaped and cut to its column's room (a model path stays whole)
    room = (12, 24, 24, 48, 36, 48, 120)
    rows = [
        tuple(
            cut(c, n)
            for c, n in zip(
                (
                    b["id"],
                    b["status"],
                    b.get("failure") or "",
                    b.get("vllm_version") or "",
                    clocks[b["id"]].stamp(b.get("started_at")) or (b.get("started_at") or ""),
                    b.get("container") or os.path.basename(b.get("source") or ""),
                    b.get("model") or "",
                ),
                room,
            )
        )
        for b in boots
    ]
    head = ("id", "status", "failure", "version", "started", "container/source", "model")
    widths = [max(width(r[i]) for r in [head, *rows]) for i in range(len(head))]
    for r in [head, *rows]:
        click.echo("  ".join(pad(c, w, right=i == 0) for i, (c, w) in enumerate(zip(r, widths))).rstrip())
    ids = [b["id"] for b in boots]
    if ids != sorted(ids):  # (files ingested out of time order: #8 can start before #1)
        click.echo("(in the order the boots started, oldest first; ids count the order they were stored in)")


@cli.command()
@click.argument("ref", default="last")
@click.option("--container", metavar="NAME", help="Resolve REF among this container's boots.")
@click.option("--host", metavar="NAME", help="Resolve REF among this host's boots.")
@click.option("--json", "as_json", is_flag=True, help="Everything known about the boot, as JSON.")
@click.option(
    "--lines",
    "context",
    type=click.IntRange(0, 1000),
    is_flag=False,
    flag_value=3,
    default=None,
    metavar="[N]",
    help="Instead: the source lines around each event (±N, default 3; a "
    "traceback whole), with their line numbers, read again from the log.",
)
@width_option
@click.pass_context
def show(ctx, ref, container, host, as_json, context, width) -> None:
    """Show one boot: fields, figures, config, events, runtime statistics.

    REF (default last): last, prev (the boot before last of the same container; for plain files
    the same file first, then the host's other files), last~N (N boots back), or a boot id.
    """
    from bootlog.render.logclock import on_clock
    from bootlog.render.render_boot import render_show
    from bootlog.run.query import show_ref
    from bootlog.run.reread import log_clock

    store = get_store(ctx)
    if context is not None:
        from bootlog.run import source_lines as sl
        from bootlog.store.reads import resolve_ref, show_boots

        doc = show_boots(store, [resolve_ref(store, ref, container=container, host=host)], runtime=False)[0]
        want, left = sl.spans(doc, context)
        lines = sl.read(store, doc, want)
        if as_json:
            print_json({"boot": doc["boot"], "source_lines": sl.as_json(want, lines, left)})
        else:
            click.echo(sl.render(doc, want, lines, left))
        return
    data = show_ref(store, ref, container=container, host=host)  # (docs/figures.md: + timeline)
    clock = log_clock(store, data)
    data = on_clock(data, clock)  # (times on the log's own clock, with its offset)
    if as_json:
        print_json(data)
    else:
        click.echo(render_show(data, clock, cols=line_width(width)))
