"""The README stays true: its first commands, its plan excerpt, the commands it documents."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from bootlog.cli import cli
from bootlog.judge.plan import load_plan
from paths import ROOT

README = (ROOT / "README.md").read_text()


def test_first_lines_install_run_and_test():
    block = README.split("```sh\n", 1)[1].split("```", 1)[0].strip().splitlines()
    assert block[0].startswith("pip install . && bootlog ingest fixtures/logs/") and block[0].endswith(
        "bootlog show last"
    )
    log = block[0].split("bootlog ingest ", 1)[1].split(" ")[0]
    assert (ROOT / log).is_file()
    assert block[1].endswith("python3 -m pytest")
    ci = (ROOT / ".ci" / "run").read_text()
    assert "\npython3 -m pytest\n" in ci  # CI runs exactly the README's test command


def test_plan_excerpt_loads(tmp_path):
    toml = README.split("```toml\n", 1)[1].split("```", 1)[0]
    (tmp_path / "frank-primary.toml").write_text(toml)
    shutil.copy(ROOT / "fixtures" / "plans" / "frank-primary.env", tmp_path / "frank-primary.env")
    plan = load_plan(tmp_path / "frank-primary.toml")
    assert plan is not None


def test_documented_commands_exist():
    names = set(re.findall(r"`bootlog ([a-z]+)", README))
    assert {"ingest", "list", "show", "diff", "check", "explain", "hook", "watch", "db", "prune"} <= names
    runner = CliRunner()
    for name in sorted(names):
        res = runner.invoke(cli, [name, "--help"])
        assert res.exit_code == 0, name


# ---------------------------------------------------------------- the console examples
# Every ```console block of the README and docs/*.md is run as the operator would type it, in a
# scratch clone (its fixtures), with a database of its own: its text is what bootlog prints today.
# BOOTLOG_UPDATE_DOCS=1 writes what bootlog prints now into the files instead of comparing (the
# outputs of diff/list/show change on purpose; the lead regenerates them after a merge).

UPDATE = os.environ.get("BOOTLOG_UPDATE_DOCS") == "1"
# the README and every page of docs/ that shows a console example
DOCS = [d for d in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))] if "```console\n" in d.read_text()]
SCRATCH = "~/bootlog"  # where the examples say they ran: a clone of this repository


def console_blocks(text: str = README) -> list[str]:
    return re.findall(r"```console\n(.*?)```", text, re.S)


def _steps(block: str) -> list[tuple[str, list[str]]]:
    steps: list[tuple[str, list[str]]] = []
    for line in block.splitlines():
        if line.startswith("$ "):
            steps.append((line[2:], []))
        elif steps:
            steps[-1][1].append(line)
    return steps


def run_block(block: str, where: Path) -> str:
    """The block with each command's output as bootlog prints it now (stdout and stderr, as a
    terminal shows them), run in `where` (a scratch clone) against a database of its own."""
    shutil.copytree(ROOT / "fixtures", where / "fixtures", dirs_exist_ok=True)
    env = {
        **os.environ,
        "BOOTLOG_DB": str(where / "readme.db"),
        "PATH": f"{os.path.dirname(sys.executable)}:{os.environ['PATH']}",
    }
    out = []
    for command, _ in _steps(block):
        shell = re.sub(r"\s{2,}#.*$", "", command)  # (the example's own comment)
        done = subprocess.run(
            ["bash", "-c", f"{{ {shell}\n}} 2>&1"],
            cwd=where,
            env=env,
            capture_output=True,
            text=True,
            stdin=subprocess.DEVNULL,
            timeout=120,
        )
        out.append(f"$ {command}")
        # the scratch clone's path is the one volatile field: shown as the operator's
        out.extend(done.stdout.replace(str(where), SCRATCH).splitlines())
    return "\n".join(out) + "\n"


@pytest.mark.parametrize("doc", DOCS, ids=[d.name for d in DOCS])
def test_every_console_example_prints_what_the_docs_show(doc, tmp_path):
    text = doc.read_text()
    blocks = console_blocks(text)
    for i, block in enumerate(blocks):
        where = tmp_path / f"clone{i}"
        where.mkdir()
        now = run_block(block, where)
        if UPDATE:
            text = text.replace(f"```console\n{block}```", f"```console\n{now}```", 1)
        else:
            assert now == block, f"{doc.name} console block {i + 1} is not what bootlog prints"
    if UPDATE:
        doc.write_text(text)


def test_the_readme_shows_examples():
    assert len(console_blocks()) >= 3


def hook_example() -> str:
    """The README's hook markdown: from its "**bootlog hook:" line to the check's summary."""
    at = README.index("**bootlog hook: ")
    end = README.index("\nsummary: ", at)
    return README[at : README.index("\n", end + 1)]


def _volatile(text: str) -> str:
    # a replay boots in microseconds, and the local image's digest is this machine's
    text = re.sub(r"boot to ready \S+ s", "boot to ready … s", text)
    return re.sub(r"\(sha256:[0-9a-f]+…\)", "(sha256:…)", text)


def test_the_hook_example_is_what_the_hook_prints(replayer, tmp_path):
    """Shapes F then G deployed in turn as frank-demo (a replay container each, run with the env
    file's graph term, 256 then 0): the second deploy's hook --plan --format markdown."""
    from podman_util import all_at_once, run_podman, unstamped

    seed = ROOT / "fixtures" / "logs" / "seed"
    env = {
        **os.environ,
        "BOOTLOG_DB": str(tmp_path / "demo.db"),
        "PATH": f"{os.path.dirname(sys.executable)}:{os.environ['PATH']}",
    }

    def hook(*args) -> str:
        return subprocess.run(
            ["bootlog", "hook", "--container", "frank-demo", "--poll", "0.2", *args],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            stdin=subprocess.DEVNULL,
            timeout=120,
        ).stdout

    run_podman("rm", "-f", "-t", "0", "frank-demo", check=False)
    for log, base_mb in (
        ("03-shape-f-mnbt2048-graph-pinned.log", "256"),
        ("04-shape-g-kv-400700-no-prefix-cache.log", "0"),
    ):
        run_podman("rm", "-f", "-t", "0", "frank-demo", check=False)
        replayer.start(
            [all_at_once(unstamped((seed / log).read_bytes()))],
            name="frank-demo",
            env={"FRANK_PRIMARY_CUDAGRAPH_BASE_MB": base_mb},
        )
        out = hook("--plan", "fixtures/plans/frank-primary.toml", "--format", "markdown")
    head = out[: out.index("\n", out.index("\nsummary: ") + 1)]
    if UPDATE:
        # (read again: the console examples' update may have rewritten the file since import)
        now = (ROOT / "README.md").read_text()
        (ROOT / "README.md").write_text(now.replace(hook_example(), head, 1))
        return
    assert _volatile(head) == _volatile(hook_example()), head


def test_the_readme_is_short_and_names_what_its_examples_show():
    assert len(README.splitlines()) <= 250
    # no insider shorthand: an example says what its log shows, not the notes' name for it
    assert not re.search(r"\bseed \d|Frank's|\bshape [A-G]\b|\bseeds'", README), "insider shorthand"
    for target in re.findall(r"\]\(([^)#:]+)(?:#[^)]*)?\)", README):
        assert (ROOT / target).exists(), target
