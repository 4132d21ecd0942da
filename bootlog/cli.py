"""bootlog's command line: parse options, call one function, render.  No logic lives here.

Commands from other modules are loaded lazily so `bootlog --help` imports neither SQLAlchemy,
alembic nor pandas.
"""
from __future__ import annotations

import importlib
import os

import click

from bootlog.cli_common import get_store, line_width, plan_path, print_json, width_option
from bootlog.cli_ingest import ingest_command
from bootlog.console import error_exit

# command name -> "module:attribute"; kept here so the root knows every command without importing it
LAZY = {
    "diff": "bootlog.cli_drift:diff",
    "check": "bootlog.cli_drift:check",
    "explain": "bootlog.cli_drift:explain",
    "hook": "bootlog.cli_hook:hook",
    "watch": "bootlog.cli_hook:watch",
    "history": "bootlog.cli_report:history",
    "export": "bootlog.cli_report:export",
    "plot": "bootlog.cli_report:plot",
    "report": "bootlog.cli_report:report",
    "db": "bootlog.cli_db:db",
    "prune": "bootlog.cli_db:prune",
}


class Root(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        names = set(super().list_commands(ctx))
        for name, target in LAZY.items():
            if self._load(name, target, quiet=True) is not None:
                names.add(name)
        return sorted(names)

    def get_command(self, ctx: click.Context, name: str):
        cmd = super().get_command(ctx, name)
        if cmd is None and name in LAZY:
            cmd = self._load(name, LAZY[name])
        return cmd

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


@click.group(cls=Root, context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--db", metavar="URL_OR_PATH", envvar="BOOTLOG_DB",
              help="Database: a SQLite path or a SQLAlchemy URL (postgresql+psycopg://…). "
                   "Default: $BOOTLOG_DB, else ~/.local/share/bootlog/bootlog.db.")
@click.version_option(package_name="bootlog")
@click.pass_context
def cli(ctx: click.Context, db: str | None) -> None:
    """Turn vLLM server logs into a regression database.

    \b
    Exit codes: 0 nothing wrong · 1 error · 2 usage · 3 drift found ·
                4 a hard plan expectation failed, or the boot failed.
    REF: last, prev, last~N, or a boot id.
    """
    if db is not None and not db.strip():
        # `--db "$DB"` with DB unset: never fall back to the default database silently
        # (an empty BOOTLOG_DB counts as unset, as click reads it)
        raise click.UsageError("--db is empty: give a SQLite path or a database URL (or leave it out "
                               "for ~/.local/share/bootlog/bootlog.db)")
    ctx.ensure_object(dict)["db"] = db


@cli.command()
@click.argument("paths", nargs=-1)
@click.option("--container", metavar="NAME", help="Read `podman logs --timestamps NAME`; with PATHS: label those saved logs as this container's.")
@click.option("--engine", "container_engine", type=click.Choice(["podman", "docker"]), default="podman",
              show_default=True, help="Container engine for --container.")
@click.option("--host", metavar="NAME", help="Label the boots with this host (default: this machine's hostname).")
@click.option("--plan", "plan_file", type=click.Path(dir_okay=False), callback=plan_path, help="Apply the plan's user patterns while ingesting.")
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
        from bootlog.plan import load_plan

        plan = load_plan(plan_file)
    code = ingest_command(get_store(ctx, create=True), paths, container=container, container_engine=container_engine, host=host,
                          plan=plan, as_json=as_json, echo=click.echo)
    if code:
        ctx.exit(code)


@cli.command("list")
@click.option("--container", metavar="NAME", help="Only boots of this container.")
@click.option("--host", metavar="NAME", help="Only boots of this host.")
@click.option("--json", "as_json", is_flag=True, help="JSON array of boot objects, newest last.")
@click.pass_context
def list_(ctx, container, host, as_json) -> None:
    """List stored boots, newest last."""
    from bootlog.store.reads import list_boots

    boots = list_boots(get_store(ctx), container=container, host=host)
    if as_json:
        print_json(boots)
        return
    if not boots:
        from bootlog.report import nothing_stored

        click.echo(nothing_stored(container, host))
        return
    from bootlog.safe import cut, pad, width

    # every cell is log text: escaped and cut to its column's room (a model path stays whole)
    room = (12, 24, 24, 48, 19, 48, 120)
    rows = [tuple(cut(c, n) for c, n in zip((
        b["id"], b["status"], b.get("failure") or "", b.get("vllm_version") or "",
        (b.get("started_at") or "")[:19], b.get("container") or os.path.basename(b.get("source") or ""),
        b.get("model") or ""), room)) for b in boots]
    head = ("id", "status", "failure", "version", "started", "container/source", "model")
    widths = [max(width(r[i]) for r in [head, *rows]) for i in range(len(head))]
    for r in [head, *rows]:
        click.echo("  ".join(pad(c, w, right=i == 0) for i, (c, w) in enumerate(zip(r, widths))).rstrip())


@cli.command()
@click.argument("ref", default="last")
@click.option("--container", metavar="NAME", help="Resolve REF among this container's boots.")
@click.option("--host", metavar="NAME", help="Resolve REF among this host's boots.")
@click.option("--json", "as_json", is_flag=True, help="Everything known about the boot, as JSON.")
@width_option
@click.pass_context
def show(ctx, ref, container, host, as_json, width) -> None:
    """Show one boot: fields, figures, config, events, runtime statistics.

    REF (default last): last, prev (the boot before last of the same container; for plain files
    the same file first, then the host's other files), last~N (N boots back), or a boot id.
    """
    from bootlog.boot_timeline import timeline
    from bootlog.render_boot import render_show
    from bootlog.store.reads import resolve_ref, show_boot

    store = get_store(ctx)
    data = show_boot(store, resolve_ref(store, ref, container=container, host=host))
    data["timeline"] = timeline(store, data)  # (metrics.md: show --json additions)
    if as_json:
        print_json(data)
    else:
        click.echo(render_show(data, line_width(width)))


from bootlog.entry import main  # noqa: E402,F401  (the console script)


if __name__ == "__main__":
    main()
