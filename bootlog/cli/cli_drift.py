"""`bootlog diff`, `bootlog check`, `bootlog explain`: wiring only (logic in compare/plan/explain).

Only click and the standard library at module level: `bootlog --help` must stay fast.
"""

from __future__ import annotations

import os
import re

from typing import Any

import click

from bootlog.cli.cli_common import get_store, line_width, plan_path, print_json, width_option


def _load_plan(path: str | None, judge: bool = True):
    if not path:
        return None
    from bootlog.judge.plan import load_plan

    return load_plan(path, judge=judge)


@click.command()
@click.argument("a", default="last")
@click.argument("b", default="prev")
@click.option(
    "--plan",
    "plan_file",
    type=click.Path(dir_okay=False),
    callback=plan_path,
    help="Also hold A to this plan (and use its tolerances and user figures).",
)
@click.option("--container", metavar="NAME", help="Resolve refs among this container's boots.")
@click.option("--host", metavar="NAME", help="Resolve refs among this host's boots.")
@click.option("--json", "as_json", is_flag=True, help="The findings as JSON.")
@click.option("--markdown", is_flag=True, help="The findings as a Markdown table.")
@click.option(
    "--all",
    "all_rows",
    is_flag=True,
    help="Also list the unchanged rows and those without enough history (the summary counts them; "
    "--json always has every row).",
)
@click.pass_context
def diff(ctx, a, b, plan_file, container, host, as_json, markdown, all_rows) -> None:
    """Compare boot A (the new one) with boot B: config changes first, then figures, then events;
    what changed, drifted, came or went (unchanged rows and those without enough history: --all).

    Capacity figures that move at an unchanged config are drift; timings are judged against
    earlier boots of the same config. Exit 0 nothing wrong, 3 drift, 4 violation/failed boot.

    A and B default to last and prev. A ref is last, prev (the boot before last of the same
    container; for plain files the same file first, then the host's other files), last~N (N boots
    back) or a boot id.
    """
    from bootlog.judge.verdict import exit_code
    from bootlog.run.query import diff_refs

    _one_format(as_json, markdown)
    plan = _load_plan(plan_file)
    store = get_store(ctx)
    result, show_a, show_b = diff_refs(store, a, b, plan=plan, container=container, host=host)
    _emit(result, as_json, markdown, plan_file, all_rows=all_rows)
    if not (as_json or markdown):  # (the JSON shape is the contract's: no timeline key in it)
        click.echo(_phases_moved(store, show_a, show_b))
    ctx.exit(exit_code(result))


def _phases_moved(store, show_a: dict, show_b: dict) -> str:
    """Which phases of the boot's timeline moved between B and A (a cold compile, a slow load)."""
    from bootlog.judge.boot_timeline import timeline
    from bootlog.render.render import render_phases_moved
    from bootlog.judge.timeline import moved

    new, old = timeline(store, show_a), timeline(store, show_b)
    rows = moved(new, old) if new and old else []
    return render_phases_moved(rows, show_a["boot"]["id"], show_b["boot"]["id"])


@click.command()
@click.argument("ref", default="last")
@click.option(
    "--plan",
    "plan_file",
    type=click.Path(dir_okay=False),
    callback=plan_path,
    required=True,
    help="The plan TOML (it may name an env file).",
)
@click.option("--container", metavar="NAME", help="Resolve REF among this container's boots.")
@click.option("--host", metavar="NAME", help="Resolve REF among this host's boots.")
@click.option("--json", "as_json", is_flag=True, help="The findings as JSON.")
@click.option("--markdown", is_flag=True, help="The findings as a Markdown table.")
@click.pass_context
def check(ctx, ref, plan_file, container, host, as_json, markdown) -> None:
    """Hold one boot to its plan: config keys, figure bounds, event counts, boot status.

    Exit 0 all met, 3 a soft expectation missed, 4 a hard one missed or the boot failed.
    REF (default last): last, prev, last~N or a boot id.
    """
    from bootlog.judge.verdict import exit_code
    from bootlog.run.query import check_ref

    _one_format(as_json, markdown)
    plan = _load_plan(plan_file)
    result = check_ref(get_store(ctx), ref, plan=plan, container=container, host=host)
    _emit(result, as_json, markdown, plan_file)
    ctx.exit(exit_code(result))


def _one_format(as_json: bool, markdown: bool) -> None:
    if as_json and markdown:
        raise click.UsageError("choose --json or --markdown, not both")


def _emit(result: dict, as_json: bool, markdown: bool, plan_file: str | None, all_rows: bool | None = None) -> None:
    """all_rows None (check): every row, a passing one says which bound it met; False (diff): what
    changed leads, the rest is counted in the summary; JSON always carries every row."""
    from bootlog.render import render

    name = os.path.basename(plan_file) if plan_file else None
    rows: dict[str, Any] = (
        {} if all_rows is None else {"show_same": all_rows, "show_unknown": all_rows, "hidden_how": "--all lists them"}
    )
    if as_json:
        print_json(result)
    elif markdown:
        click.echo(render.render_markdown(result, plan_name=name, **rows))
    else:
        click.echo(render.render_text(result, plan_name=name, **rows))


@click.command()
@click.argument("target", default="last")
@click.option(
    "--plan",
    "plan_file",
    type=click.Path(dir_okay=False),
    callback=plan_path,
    help="Also run the plan's user patterns over the log.",
)
@click.option("--container", metavar="NAME", help="Resolve REF among this container's boots.")
@click.option("--host", metavar="NAME", help="Resolve REF among this host's boots.")
@click.option("--json", "as_json", is_flag=True, help="The explanation as JSON.")
@width_option
@click.pass_context
def explain(ctx, target, plan_file, container, host, as_json, width) -> None:
    """Where each figure came from (line + catalogue entry), and marker lines nothing read.

    TARGET is a log file (parsed in memory, nothing stored) or a stored boot REF (last, prev~1,
    70: a REF's spelling means the stored boot; write ./70 for a file of that name).
    """
    from bootlog.run import explain as ex
    from bootlog.render import render

    # a REF's spelling (last, prev~2, 70) is the stored boot, even beside a file of that name
    # (./70 names the file); anything else that exists is a log
    is_ref = re.fullmatch(r"(?:last|prev)(?:~[0-9]+)?|[0-9]+", target) is not None
    if target == "-" or (not is_ref and os.path.exists(target)):
        report = ex.explain_log(target, plan=_load_plan(plan_file, judge=False))
    elif os.sep in target or os.path.splitext(target)[1] in (".log", ".gz", ".txt", ".out", ".json"):
        from bootlog.errors import InputError

        raise InputError(f"no such file: {target}")
    else:
        from bootlog.store.reads import resolve_ref

        if plan_file:  # a stored boot keeps what its ingest read: the log is not read again
            raise click.UsageError(
                "--plan runs user patterns over a log file; for a stored boot, "
                "re-ingest its log with --plan (or explain the log file itself)"
            )
        store = get_store(ctx)
        report = ex.explain_ref(store, resolve_ref(store, target, container=container, host=host))
    if as_json:
        print_json(report)
    else:
        click.echo(render.render_explain(report, line_width(width)))


COMMANDS = (diff, check, explain)


def register(group: click.Group) -> None:
    for cmd in COMMANDS:
        group.add_command(cmd)
