"""`bootlog hook` and `bootlog watch`: wiring only (logic in hook.py / watch.py).

Only click and the standard library at module level: `bootlog --help` must stay fast.
"""

from __future__ import annotations

import os

import click

from bootlog.cli.cli_common import Seconds, get_store, plan_path, print_json, stderr_is_tty
from bootlog.errors import BootlogError

ENGINE_OPT = click.option(
    "--engine",
    "container_engine",
    type=click.Choice(["podman", "docker"]),
    default="podman",
    show_default=True,
    help="Container engine to read.",
)


@click.command()
@click.option("--container", metavar="NAME", required=True, help="The container that was just deployed.")
@click.option(
    "--plan", "plan_file", type=click.Path(dir_okay=False), callback=plan_path, help="Hold the boot to this plan TOML."
)
@click.option(
    "--timeout",
    type=Seconds(min=0),
    default=900,
    show_default=True,
    metavar="SECONDS",
    help="Give up (exit 1) if the boot is neither ready nor failed by then.",
)
@ENGINE_OPT
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["text", "markdown", "json"]),
    default="text",
    show_default=True,
    help="markdown: a block to paste into the deploy commit message.",
)
@click.option(
    "--poll",
    type=Seconds(min=0.05),
    default=2.0,
    show_default=True,
    metavar="SECONDS",
    help="How often to read the container's log while waiting.",
)
@click.option(
    "--probe",
    "probe_url",
    metavar="URL",
    help="Once ready, probe the server (e.g. http://127.0.0.1:7770): GET /health, GET /v1/models, "
    "one short streamed completion; stores probe_health_s, probe_ttft_s, probe_decode_tps. "
    "The whole probe takes at most min(--timeout, 60) s.",
)
@click.option(
    "--probe-tokens",
    type=click.IntRange(0, 4096),
    default=32,
    show_default=True,
    metavar="N",
    help="Tokens the probe's completion generates (0: no completion).",
)
@click.option(
    "--gpu-smi",
    type=click.Choice(["auto", "rocm-smi", "amd-smi", "nvidia-smi", "none"]),
    default="auto",
    show_default=True,
    help="Read GPU memory after ready (and after the probe) with this tool; auto: the first on PATH.",
)
@click.option(
    "--openmetrics",
    "om_file",
    type=click.Path(dir_okay=False),
    metavar="FILE",
    help="Then rewrite FILE (e.g. node_exporter's textfile dir/bootlog.prom) with the latest boot "
    "of each host/container, as `export --format openmetrics FILE [--plan]` does.",
)
@click.pass_context
def hook(
    ctx, container, plan_file, timeout, container_engine, fmt, poll, probe_url, probe_tokens, gpu_smi, om_file
) -> None:
    """Post-deploy: wait for the boot starting now, store it, check it against the plan and
    diff it against the previous boot of the same container; print a summary.

    Reads the container only (inspect, events, logs); never stops or restarts it.  With
    --probe, once the boot is ready: three requests to the server (every one bounded), GPU
    memory before and after them; a probe that fails is a finding (exit 3), never a hang.
    Exit 0 nothing wrong, 1 error or timeout, 3 drift, 4 the boot failed or a hard plan
    expectation was missed.
    """
    from bootlog.run import hook as h
    from bootlog.read.podman import now_ns

    started = now_ns()  # the run current at this moment is the deploy's (before any slow setup)
    plan = None
    say = (lambda msg: click.echo(f"bootlog: {msg}", err=True)) if stderr_is_tty() else None
    try:
        if om_file:
            from bootlog.render.output import check_target

            check_target(om_file, get_store(ctx, create=True))  # fails now, not after the wait
        if plan_file:
            from bootlog.judge.plan import load_plan

            plan = load_plan(plan_file, judge=True)  # a bad plan fails now, not after a 15-minute wait
        result = h.run_hook(
            get_store(ctx, create=True),
            container,
            plan=plan,
            timeout=timeout,
            poll=poll,
            engine=container_engine,
            ref_ns=started,
            progress=say,
            probe_url=probe_url,
            probe_tokens=probe_tokens,
            gpu_smi=gpu_smi,
        )
    except BootlogError as err:
        if fmt == "json":  # a script reading stdout gets an answer too (the line goes to stderr)
            print_json(h.error_json(container, err))
        raise
    name = os.path.basename(plan_file) if plan_file else None
    if fmt == "json":
        print_json(h.to_json(result))
    elif fmt == "markdown":
        click.echo(h.render_markdown(result, plan_name=name))
    else:
        click.echo(h.render_text(result, plan_name=name))
    code = result.exit
    if om_file:
        code = _refresh_openmetrics(ctx, om_file, code, plan)
    ctx.exit(code)


def _refresh_openmetrics(ctx, path: str, code: int, plan=None) -> int:
    """Rewrite the textfile after the deploy was stored.  The verdict already printed stands: a
    file that cannot be written is one stderr line, and exit 1 only when the verdict was 0
    (a 3 or 4 says more about the deploy than the dashboard's file does)."""
    from bootlog.render.export import export_openmetrics
    from bootlog.run.judged import judge_stored
    from bootlog.safe import term

    try:
        store = get_store(ctx)
        # (the verdict the hook printed)
        export_openmetrics(store, path, verdict_of=lambda doc: judge_stored(store, doc, plan))
    except (BootlogError, OSError) as err:
        why = err.strerror if isinstance(err, OSError) and err.strerror else str(err)
        click.echo(f"bootlog: {term(path, one_line=True)} not refreshed: {term(why, one_line=True)}", err=True)
        return code or 1
    return code


@click.command()
@click.option("--container", metavar="NAME", help="Follow this container across restarts.")
@click.option("--file", "path", type=click.Path(dir_okay=False), help="Follow this growing log file.")
@click.option("--once", is_flag=True, help="Catch up with what is there now, then exit.")
@click.option(
    "--on-event",
    "on_event",
    metavar="CMD",
    help="Run CMD (split like a shell would, no shell) for each event, event JSON on stdin.",
)
@click.option(
    "--poll",
    type=Seconds(min=0.05),
    default=2.0,
    show_default=True,
    metavar="SECONDS",
    help="How often to look for new lines.",
)
@ENGINE_OPT
@click.option("--host", metavar="NAME", help="Label the boots with this host (default: this machine).")
@click.option(
    "--plan",
    "plan_file",
    type=click.Path(dir_okay=False),
    callback=plan_path,
    help="Store the plan's own patterns with the boots (as ingest --plan does) and, with --once, "
    "hold each boot it stored something new of to the plan.",
)
@click.pass_context
def watch(ctx, container, path, once, on_event, poll, container_engine, host, plan_file) -> None:
    """Follow a container (or a log file) and store boots, runtime events and statistics as
    they happen; one line per stored event (a gdn_hip fault burst: one line).

    The read position is stored with the rows, so a restarted watch neither loses nor
    duplicates anything.  With --once (for cron), each boot it stored something new of is
    judged as the hook judges it, one line each that is not OK, and the exit code says it:
    0 nothing wrong, 3 drift (a runtime fault the server survived, a soft plan expectation
    missed), 4 a failed boot, an engine that died serving, state faults, or a hard plan
    expectation missed.
    """
    from bootlog.run import watch as w

    if bool(container) == bool(path):
        raise click.UsageError("give exactly one of --container NAME or --file PATH")
    plan = None
    if plan_file:
        from bootlog.judge.plan import load_plan

        plan = load_plan(plan_file, judge=True)
    follower = w.ContainerTail(container, engine=container_engine) if container else w.FileTail(path)
    store = get_store(ctx, create=True)
    stored = w.watch(
        store,
        follower,
        once=once,
        poll=poll,
        on_event=on_event,
        host=host,
        plan=plan,
        emit=click.echo,
        warn=lambda msg: click.echo(f"bootlog: {msg}", err=True),
    )
    if not once:
        return
    from bootlog.safe import one_line, term

    code, said, more = 0, 0, []
    for bid, v in w.judge_boots(store, stored.boots, plan):
        if v.code and said < w.EVENT_LINES:  # (a crash loop of thousands: the rest counted)
            said += 1
            why = "; ".join(v.reasons)
            click.echo(
                term(f"{follower.label} boot #{bid} {v.word}", one_line=True)
                + (f": {one_line(why, 400)}" if why else "")
            )
        elif v.code:
            more.append(bid)
        code = max(code, v.code)
    if more:
        click.echo(
            term(
                f"{follower.label} boots #{more[0]}-#{more[-1]}: … and {len(more):,} more not OK (bootlog list)",
                one_line=True,
            )
        )
    ctx.exit(code)


COMMANDS = (hook, watch)


def register(group: click.Group) -> None:
    for cmd in COMMANDS:
        group.add_command(cmd)
