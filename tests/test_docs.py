"""docs/ names everything the code has: every command and option in docs/cli.md, every figure,
event kind and timeline phase bootlog can store in docs/figures.md (as sqlite-utils' test_docs
does).  The names come from the code itself, never from a copied list."""

from __future__ import annotations

import re

import click
import pytest

from bootlog.cli import cli
from bootlog.figures import BY_NAME
from bootlog.records import EVENT_KINDS
from bootlog.judge.timeline import PHASES
from paths import ROOT

CLI_MD = (ROOT / "docs" / "cli.md").read_text()
FIGURES_MD = (ROOT / "docs" / "figures.md").read_text()

# Every figure bootlog can store: the one list of figures (bootlog/figures.py).
FIGURES = sorted(BY_NAME)


def _commands() -> list[tuple[str, click.Command]]:
    """(path, command) for every command and subcommand, as `bootlog --help` lists them."""
    out: list[tuple[str, click.Command]] = []

    def walk(group: click.Group, prefix: str) -> None:
        ctx = click.Context(group)
        for name in group.list_commands(ctx):
            cmd = group.get_command(ctx, name)
            assert cmd is not None, name
            out.append((f"{prefix}{name}", cmd))
            if isinstance(cmd, click.Group):
                walk(cmd, f"{prefix}{name} ")

    walk(cli, "")
    return out


COMMANDS = _commands()


def _section(path: str) -> str:
    """The text of docs/cli.md under the heading for `bootlog PATH` (a subcommand: its group's)."""
    top = path.split(" ")[0]
    head = re.search(rf"^### `bootlog {re.escape(top)}\b.*$", CLI_MD, re.M)
    assert head, f"docs/cli.md has no '### `bootlog {top} …`' heading"
    end = CLI_MD.find("\n### ", head.end())
    return CLI_MD[head.start() : end if end != -1 else len(CLI_MD)]


def test_the_walk_finds_every_command():
    names = {p for p, _ in COMMANDS}
    assert {"ingest", "list", "show", "diff", "check", "hook", "watch", "report", "db", "db backup"} <= names


@pytest.mark.parametrize("path,cmd", COMMANDS, ids=[p for p, _ in COMMANDS])
def test_every_command_and_option_is_in_cli_md(path, cmd):
    section = _section(path)
    if " " in path:  # a subcommand is named in its group's heading
        assert re.search(rf"\b{re.escape(path.split(' ', 1)[1])}\b", section.splitlines()[0]), path
    for param in cmd.params:
        # (--db after the command is the root's --db, documented once under "Global options")
        if not isinstance(param, click.Option) or "--help" in param.opts or param.name == "sub_db":
            continue
        for opt in param.opts + param.secondary_opts:
            assert re.search(rf"(?<![\w-]){re.escape(opt)}(?![\w-])", section), (
                f"docs/cli.md: `bootlog {path}` does not mention {opt}"
            )


def test_the_root_options_are_in_cli_md():
    assert "after the command" in CLI_MD.split("### Global options")[1].split("##")[0]
    for param in cli.params:
        for opt in param.opts:
            assert f"`{opt}" in CLI_MD, opt


def test_every_exit_code_is_in_cli_md():
    from bootlog.errors import Exit

    table = CLI_MD.split("## Exit codes", 1)[1].split("\n## ", 1)[0]
    for code in Exit:
        assert re.search(rf"^\| {int(code)} \|", table, re.M), code


@pytest.mark.parametrize("name", FIGURES)
def test_every_figure_is_in_figures_md(name):
    assert f"`{name}`" in FIGURES_MD, f"docs/figures.md does not name the figure {name}"


@pytest.mark.parametrize("kind", EVENT_KINDS)
def test_every_event_kind_is_in_figures_md(kind):
    events = FIGURES_MD.split("## Events", 1)[1].split("\n## ", 1)[0]
    assert re.search(rf"^\| `{kind}` \|", events, re.M), f"docs/figures.md's event table lacks {kind}"


@pytest.mark.parametrize("phase", PHASES)
def test_every_timeline_phase_is_in_figures_md(phase):
    timeline = FIGURES_MD.split("## Timeline", 1)[1].split("\n## ", 1)[0]
    assert f"`{phase}`" in timeline, phase


def test_the_json_shapes_are_those_cli_md_shows(tmp_path):
    """Every key of a stored boot (list --json) is a documented boot field, and every key of
    show --json, diff --json and its findings, check --json and ingest --json is in cli.md."""
    import json

    from click.testing import CliRunner

    db = str(tmp_path / "d.db")
    runner = CliRunner()

    def js(*args: str):
        res = runner.invoke(cli, ["--db", db, *args])
        assert res.exit_code in (0, 3, 4), res.output
        return json.loads(res.output)

    seed = ROOT / "fixtures" / "logs" / "seed"
    ingested = js(
        "ingest", "--json", str(seed / "01-shape-d-fp8-200704x3.log"), str(seed / "02-shape-e-precise-memory.log")
    )
    boot = js("list", "--json")[0]
    fields = FIGURES_MD.split("## Boot fields", 1)[1].split("\n## ", 1)[0]
    # (id, container, host and source are the store's, described with the boot object in cli.md)
    for key in set(boot) - {"id", "container", "host", "source"}:
        assert f"`{key}`" in fields, key
    shown, diffed = js("show", "--json"), js("diff", "--json")
    checked = js("check", "last", "--plan", str(ROOT / "fixtures" / "plans" / "frank-primary.toml"), "--json")
    keys = {
        *ingested[0],
        *boot,
        *shown,
        *shown["metrics"][0],
        *shown["events"][0],
        *shown["runtime"],
        *shown["timeline"][0],
        *diffed,
        *diffed["summary"],
        *diffed["findings"][0],
        *checked,
        *(k for f in checked["findings"] for k in f),
    }
    for key in keys:
        assert f'"{key}"' in CLI_MD, f"docs/cli.md's JSON shapes lack {key!r}"


def test_docs_link_to_files_that_exist():
    for md in (ROOT / "docs").glob("*.md"):
        for target in re.findall(r"\]\(([^)#:]+)(?:#[^)]*)?\)", md.read_text()):
            assert (md.parent / target).exists(), f"{md.name} links to {target}"
