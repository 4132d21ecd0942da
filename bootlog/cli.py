"""bootlog's command line: parse options, call one function, render.  No logic lives here.

Commands from other modules are loaded lazily so `bootlog --help` imports neither SQLAlchemy,
alembic nor pandas.
"""
from __future__ import annotations

import importlib
import os
import sys

import click

from bootlog.cli_common import fmt_num, get_engine, get_ingest_store, print_json
from bootlog.errors import BootlogError, Exit, InputError

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
        except BootlogError as err:
            click.echo(f"bootlog: {err}", err=True)
            ctx.exit(int(err.exit))
        except KeyboardInterrupt:
            click.echo("bootlog: interrupted", err=True)
            ctx.exit(130)
        except (click.exceptions.Exit, click.ClickException, click.Abort):
            raise
        except BrokenPipeError:
            ctx.exit(int(Exit.OK))
        except Exception as err:  # the boundary: never show a traceback to a user
            if os.environ.get("BOOTLOG_DEBUG"):
                raise
            click.echo(f"bootlog: internal error: {type(err).__name__}: {err} "
                       "(set BOOTLOG_DEBUG=1 for the traceback)", err=True)
            ctx.exit(int(Exit.ERROR))


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


def _key_figures(boot) -> str:
    """One-line summary of the figures an operator reads first."""
    want = ("kv_cache_tokens", "max_concurrency", "graph_capture_gib", "torch_compile_s")
    seen: dict[str, list[float]] = {}
    for m in boot.metrics:
        if m.name in want:
            seen.setdefault(m.name, []).append(m.value)
    parts = []
    for name in want:
        if name in seen:
            vals = seen[name]
            shown = fmt_num(vals[0]) if len(set(vals)) == 1 else "/".join(fmt_num(v) for v in vals)
            parts.append(f"{name}={shown}{'x' if name == 'max_concurrency' else ''}")
    return "  ".join(parts)


@cli.command()
@click.argument("paths", nargs=-1)
@click.option("--container", metavar="NAME", help="Read `podman logs --timestamps NAME` instead of files.")
@click.option("--engine", "container_engine", type=click.Choice(["podman", "docker"]), default="podman",
              show_default=True, help="Container engine for --container.")
@click.option("--host", metavar="NAME", help="Label the boots with this host (default: this machine's hostname).")
@click.option("--plan", "plan_file", type=click.Path(dir_okay=False), help="Apply the plan's user patterns while ingesting.")
@click.option("--json", "as_json", is_flag=True, help="Print the ingested boots as JSON.")
@click.pass_context
def ingest(ctx, paths, container, container_engine, host, plan_file, as_json) -> None:
    """Read vLLM logs (files, .gz, `-` for stdin, or a container) and store every boot.

    Re-ingesting the same content adds nothing. Prints one line per boot found.
    """
    from bootlog.ingest import ingest as run_ingest
    from bootlog.store.rows import stored_name

    if not paths and not container:
        raise click.UsageError("give one or more PATHS (or - for stdin), or --container NAME")
    if paths and container:
        raise click.UsageError("give PATHS or --container, not both")
    plan = None
    if plan_file:
        from bootlog.plan import load_plan

        plan = load_plan(plan_file)
    engine = get_ingest_store(ctx, paths) if not container else get_engine(ctx)
    specs = [("container", container)] if container else [("path", p) for p in paths]
    out = []
    failed: list[BootlogError] = []
    for kind, spec in specs:
        try:
            results = run_ingest(engine, spec if kind == "path" else None, container=container,
                                 container_engine=container_engine, host=host, plan=plan,
                                 progress=sys.stderr.isatty())
        except InputError as err:
            if len(specs) == 1:
                raise
            # one unreadable file of several: nothing of it was stored (one transaction per
            # source); say so and go on with the others, then exit 1
            click.echo(f"bootlog: {err} (skipped: nothing of it stored)", err=True)
            failed.append(err)
            continue
        # (a file name that is not UTF-8 prints, and is stored, with \xNN escapes)
        label = f"podman:{spec}" if kind == "container" else stored_name(spec)
        if results.up_to_date:
            if not as_json:
                click.echo(f"{label}: nothing new since line {results.resumed_at_line:,}")
            continue
        if not results:
            if not as_json and results.resumed_at_line is None:
                click.echo(f"no vLLM boot found in {label}")
            elif not as_json:
                click.echo(f"{label}: read on from line {results.resumed_at_line:,}; no vLLM lines in the new part")
            continue
        if results.resumed_at_line is not None and not as_json:
            click.echo(f"{label}: read on from line {results.resumed_at_line:,}")
        for r in results:
            b = r.boot
            if b.continued:
                out.append({"id": r.id, "created": False, "extended": True, "status": b.status,
                            "failure": b.failure, "first_line": b.first_line, "last_line": b.last_line,
                            "source": label})
                if not as_json:
                    added = f"{len(b.events)} events, {len(b.samples)} stats lines, {len(b.metrics)} figures"
                    click.echo(f"#{r.id:<5} extended with lines {b.first_line}-{b.last_line}: {added}"
                               + (f"  (runtime failure: {b.failure})" if b.failure else ""))
                continue
            out.append({"id": r.id, "created": r.created, "status": b.status, "failure": b.failure,
                        "first_line": b.first_line, "last_line": b.last_line, "source": label})
            if not as_json:
                # (as list and show say it: "ready (oom)" is a boot whose engine died serving)
                state = f"{b.status} ({b.failure})" if b.failure else b.status
                new = "new" if r.created else "already stored"
                click.echo(f"#{r.id:<5} {state:<22} v{b.vllm_version or '?'}  lines {b.first_line}-{b.last_line}"
                           f"  {_key_figures(b)}  [{new}]".replace("   [", " [") )
    if as_json:
        print_json(out)
    if failed:
        click.echo(f"bootlog: {len(failed)} of {len(specs)} inputs could not be read", err=True)
        ctx.exit(int(failed[0].exit))
    if os.environ.get("BOOTLOG_BENCH_RSS"):  # bench/run.py: the reader process's memory counts too
        import resource

        rd = sys.modules.get("bootlog.reader")
        click.echo(f"bootlog-bench: main_peak_rss_kib={resource.getrusage(resource.RUSAGE_SELF).ru_maxrss} "
                   f"reader_peak_rss_kib={getattr(rd, 'last_peak_rss_kib', 0)}", err=True)


@cli.command("list")
@click.option("--container", metavar="NAME", help="Only boots of this container.")
@click.option("--host", metavar="NAME", help="Only boots of this host.")
@click.option("--json", "as_json", is_flag=True, help="JSON array of boot objects, newest last.")
@click.pass_context
def list_(ctx, container, host, as_json) -> None:
    """List stored boots, newest last."""
    from bootlog.store.queries import list_boots

    boots = list_boots(get_engine(ctx), container=container, host=host)
    if as_json:
        print_json(boots)
        return
    if not boots:
        from bootlog.report import nothing_stored

        click.echo(nothing_stored(container, host))
        return
    rows = [(str(b["id"]), b["status"], b.get("failure") or "", b.get("vllm_version") or "",
             (b.get("started_at") or "")[:19], b.get("container") or os.path.basename(b.get("source") or ""),
             b.get("model") or "") for b in boots]
    head = ("id", "status", "failure", "version", "started", "container/source", "model")
    widths = [max(len(r[i]) for r in [head, *rows]) for i in range(len(head))]
    for r in [head, *rows]:
        click.echo("  ".join(c.rjust(w) if i == 0 else c.ljust(w) for i, (c, w) in enumerate(zip(r, widths))).rstrip())


@cli.command()
@click.argument("ref", default="last")
@click.option("--container", metavar="NAME", help="Resolve REF among this container's boots.")
@click.option("--host", metavar="NAME", help="Resolve REF among this host's boots.")
@click.option("--json", "as_json", is_flag=True, help="Everything known about the boot, as JSON.")
@click.pass_context
def show(ctx, ref, container, host, as_json) -> None:
    """Show one boot: fields, figures, config, events, runtime statistics.

    REF (default last): last, prev (the boot before last of the same container; for plain files
    the same file first, then the host's other files), last~N (N boots back), or a boot id.
    """
    from bootlog.render_boot import render_show
    from bootlog.store.queries import resolve_ref, show_boot

    engine = get_engine(ctx)
    data = show_boot(engine, resolve_ref(engine, ref, container=container, host=host))
    if as_json:
        print_json(data)
    else:
        click.echo(render_show(data))


class _Terminated(BaseException):
    """SIGTERM (systemd stopping a unit, `timeout`) or SIGHUP (a dropped ssh session): unwinds
    like an error, so an ingest's transaction rolls back and its temporary files go, then bootlog
    dies by the same signal as before."""


def _on_signal(signum, frame) -> None:
    raise _Terminated(signum)


def main() -> None:
    import signal

    for sig in (signal.SIGTERM, getattr(signal, "SIGHUP", None)):
        try:
            if sig is not None and signal.getsignal(sig) is signal.SIG_DFL:  # (not nohup's SIG_IGN)
                signal.signal(sig, _on_signal)
        except (ValueError, OSError):  # (not the main thread: leave the default)
            pass
    got = 0
    try:
        cli(prog_name="bootlog")
    except _Terminated as end:
        got = end.args[0]
    if got:  # (out of the except block: its traceback no longer holds the ingest's frames)
        import gc

        gc.collect()  # (a spill file's finalizer runs when its last reader is gone)
        signal.signal(got, signal.SIG_DFL)
        os.kill(os.getpid(), got)


if __name__ == "__main__":
    main()
