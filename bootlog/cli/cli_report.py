"""Report commands: history, export, plot, report.  Only click, the standard library and the
export formats' names at module level; the work happens in bootlog.render.report / export / plot,
imported inside each command."""

from __future__ import annotations

import click

from bootlog.cli.cli_common import get_store, plan_path, print_json
from bootlog.render.export import ALL_FORMATS, FORMATS  # (the formats only: no pandas, no store)


def _split_names(values: tuple[str, ...]) -> list[str]:
    # --metric a --metric b and --metric a,b mean the same
    return [n.strip() for v in values for n in v.split(",") if n.strip()]


@click.command()
@click.option("--container", metavar="NAME", help="Only boots of this container.")
@click.option("--host", metavar="NAME", help="Only boots of this host.")
@click.option(
    "--metric",
    "metrics",
    metavar="NAME",
    multiple=True,
    help="Figure to show as a column (repeatable or comma-separated): a metric, a config key, "
    "a boot field, `faults`, or runtime.max.X / runtime.last.X. Default: the key figures.",
)
@click.option("--last", type=click.IntRange(min=1), metavar="N", help="Only the newest N boots.")
@click.option("--json", "as_json", is_flag=True, help="JSON array of rows, with a `changed` list per row.")
@click.option("--csv", "as_csv", is_flag=True, help="CSV with a `changed` column.")
@click.pass_context
def history(ctx, container, host, metrics, last, as_json, as_csv) -> None:
    """One row per boot with its key figures; a `*` marks a value that moved since the boot before.

    Per-rank figures show one value when all ranks agree, else rank0/rank1.
    """
    from bootlog.render.report import history as build, load_docs, render_csv, render_json, render_text

    if as_json and as_csv:
        raise click.UsageError("choose --json or --csv, not both")
    names = _split_names(metrics)
    # one boot more than asked, so the first shown row still marks what changed
    docs = load_docs(
        get_store(ctx),
        container=container,
        host=host,
        last=None if last is None else last + 1,
        runtime=any(n.startswith("runtime.") for n in names),
    )
    columns = (["id", *[n for n in names if n != "id"]]) if names else None
    cols, rows, changes = build(docs, columns, skip_first=last is not None and len(docs) > last)
    if as_json:
        print_json(render_json(rows, cols, changes))
    elif as_csv:
        click.echo(render_csv(rows, cols, changes), nl=False)
    elif not rows:
        from bootlog.render.report import nothing_stored

        click.echo(nothing_stored(container, host))
    else:
        click.echo(render_text(rows, cols, changes))


@click.command()
@click.argument("file", required=False, type=click.Path(dir_okay=False))
@click.option(
    "--format",
    "fmt",
    type=click.Choice(ALL_FORMATS),
    default=None,
    help="Output format (default: from FILE's suffix, .prom is openmetrics; else csv).",
)
@click.option("--container", metavar="NAME", help="Only boots of this container.")
@click.option("--host", metavar="NAME", help="Only boots of this host.")
@click.option("--no-samples", is_flag=True, help="Leave out the runtime samples (they can be large).")
@click.option(
    "--plan",
    "plan_file",
    type=click.Path(dir_okay=False),
    callback=plan_path,
    help="openmetrics: hold each latest boot to this plan in bootlog_verdict (as the hook does).",
)
@click.pass_context
def export(ctx, file, fmt, container, host, no_samples, plan_file) -> None:
    """Export boots × figures (wide), events and runtime samples (long), or the latest boots
    as Prometheus gauges.

    \b
    csv:         FILE (boots) + FILE-stem-events.csv + FILE-stem-samples.csv beside it
    json:        one object {"boots": [...], "events": [...], "samples": [...]}
    parquet:     three files like csv; needs pyarrow (pip install 'bootlog[parquet]')
    openmetrics: the latest boot of each host/container as bootlog_<figure>{host,container,rank}
                 gauges, for node_exporter's textfile collector; FILE is written whole, then
                 renamed into place; no FILE: stdout.  bootlog_verdict{host,container} is the
                 hook's verdict (0 OK, 1 drift, 2 violation, 3 failed: with --plan, against it;
                 and against the boot before), bootlog_boot_died_serving 1 for an engine that
                 died after ready
    """
    from pathlib import Path

    if fmt is None:
        suffix = Path(file).suffix.lower().lstrip(".") if file else ""
        fmt = "openmetrics" if suffix == "prom" else suffix if suffix in FORMATS else "csv"
    if plan_file and fmt != "openmetrics":
        raise click.UsageError("--plan is for --format openmetrics (its bootlog_verdict)")
    plan = None
    if plan_file:
        from bootlog.judge.plan import load_plan

        plan = load_plan(plan_file, judge=True)
    store = get_store(ctx)
    if fmt == "openmetrics":
        from bootlog.render.export import export_openmetrics
        from bootlog.run.judged import judge_stored

        text, n = export_openmetrics(
            store, file, container=container, host=host, verdict_of=lambda doc: judge_stored(store, doc, plan)
        )
        if file is None:
            click.echo(text, nl=False)
        else:
            click.echo(f"exported {n} boot{'s' if n != 1 else ''} (the latest of each host/container) to {file}")
        return
    if file is None:
        raise click.UsageError(f"give FILE to write the {fmt} export to (only openmetrics goes to stdout)")
    from bootlog.render.export import export as write

    written, n = write(store, fmt, file, container=container, host=host, samples=not no_samples)
    click.echo(f"exported {n} boot{'s' if n != 1 else ''} to " + ", ".join(str(p) for p in written))


@click.command()
@click.argument("metric")
@click.option("--container", metavar="NAME", help="Only boots of this container.")
@click.option("--host", metavar="NAME", help="Only boots of this host.")
@click.option("--last", type=click.IntRange(min=1), metavar="N", help="Only the newest N boots.")
@click.option(
    "-o",
    "--output",
    "out",
    required=True,
    type=click.Path(dir_okay=False),
    help="Image to write: .png (default), .svg or .pdf by its suffix.",
)
@click.option(
    "--plan",
    "plan_file",
    type=click.Path(dir_okay=False),
    callback=plan_path,
    help="Draw the plan's bounds on METRIC (min, max, a figure it must fit under).",
)
@click.pass_context
def plot(ctx, metric, container, host, last, out, plan_file) -> None:
    """Plot METRIC across boots (PNG, SVG or PDF): failed boots marked by kind, config changes
    named in a track above, the figure's budget drawn in (graph capture against its estimate).

    Boot starts on the log's own clock where it has one.  Needs matplotlib
    (pip install 'bootlog[plot]').
    """
    from bootlog.run.reread import log_clock
    from bootlog.render.plot import keep_for
    from bootlog.render.plot import plot as draw
    from bootlog.render.report import load_docs

    plan = None
    if plan_file:
        from bootlog.judge.plan import load_plan

        plan = load_plan(plan_file, judge=True)
    store = get_store(ctx)
    from bootlog.render.output import check_target

    check_target(out, store)
    # (the runtime summary only for a runtime.* metric: the samples are most of the reading)
    docs = load_docs(
        store,
        container=container,
        host=host,
        last=last,
        runtime=metric.startswith("runtime."),
        trim=keep_for(metric, plan),
    )
    if not docs:
        from bootlog.errors import BootlogError
        from bootlog.render.report import nothing_stored

        raise BootlogError(nothing_stored(container, host))
    path = draw(docs, metric, out, clock=log_clock(store, docs[-1]), plan=plan)
    click.echo(f"wrote {path}")


@click.command()
@click.option(
    "-o",
    "--output",
    "out",
    type=click.Path(dir_okay=False),
    help="HTML file to write (a file is written whole, then renamed into place). Default: stdout.",
)
@click.option(
    "--plan",
    "plan_file",
    type=click.Path(dir_okay=False),
    callback=plan_path,
    help="Hold every boot shown to this plan: the latest boot's expectations one by one, "
    "each boot's verdict in the history.",
)
@click.option("--container", metavar="NAME", help="Only boots of this container.")
@click.option("--host", metavar="NAME", help="Only boots of this host.")
@click.option(
    "--last",
    type=click.IntRange(min=1),
    default=50,
    show_default=True,
    metavar="N",
    help="Newest N boots in the table and charts.",
)
@click.pass_context
def report(ctx, out, plan_file, container, host, last) -> None:
    """Write one self-contained HTML page: is the latest deploy good, and what changed.

    The latest boot's verdict (with --plan, each expectation met or missed), its diff against
    the boot before and its timeline; every boot's timeline in one chart; the key figures and
    runtime series across boots; the history.  Times on the log's own clock where it has one.
    No network needed to view it; images are inline, no script.
    """
    import os

    from bootlog.run.page import html_report

    plan = None
    if plan_file:
        from bootlog.judge.plan import load_plan

        plan = load_plan(plan_file, judge=True)
    store = get_store(ctx)
    if out is not None:
        from bootlog.render.output import check_target

        check_target(out, store)
    page = html_report(
        store,
        container=container,
        host=host,
        last=last,
        plan=plan,
        plan_name=os.path.basename(plan_file) if plan_file else None,
    )
    if out is None:
        click.echo(page)
        return
    from bootlog.render.output import write_whole

    write_whole(out, page)  # (a browser reloading it never sees half a page)
    click.echo(f"wrote {out}")
