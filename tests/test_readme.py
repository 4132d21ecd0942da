"""The README stays true: its first commands, its plan excerpt, the commands it documents."""
from __future__ import annotations

import re
import shutil

from click.testing import CliRunner

from bootlog.cli import cli
from bootlog.plan import load_plan
from conftest import ROOT

README = (ROOT / "README.md").read_text()


def test_first_lines_install_run_and_test():
    block = README.split("```sh\n", 1)[1].split("```", 1)[0].strip().splitlines()
    assert block[0].startswith("pip install . && bootlog ingest fixtures/logs/") and block[0].endswith("bootlog show last")
    log = block[0].split("bootlog ingest ", 1)[1].split(" ")[0]
    assert (ROOT / log).is_file()
    assert block[1].endswith("python3 -m pytest")
    ci = (ROOT / ".ci" / "run").read_text()
    assert "\npython3 -m pytest\n" in ci          # CI runs exactly the README's test command


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
