"""show --json, diff --json and check --json are made from typed records (shown.py, issue 32/33)
and stay byte for byte what they were when they were made from dicts: the SHA-256 of every
output on the real fixtures (the seeds' deploy history, the real vLLM CPU engine runs) is in
tests/data/json/shapes.json, written by the dict code before the records replaced it.

A change that means to alter a JSON shape rewrites the file (BOOTLOG_WRITE_JSON_SHAPES=1) and
says so in its commit: the contract (reference/cli-contract.md) is what scripts read.
"""

from __future__ import annotations

import hashlib
import json
import os

import pytest
from click.testing import CliRunner

from bootlog.cli import cli
from paths import FIXTURES, ROOT

MANIFEST = ROOT / "tests" / "data" / "json" / "shapes.json"
PLAN = ROOT / "fixtures" / "plans" / "frank-primary.toml"
BOOTS = 29  # the 15 seed boots (ids 1-15), then the engine runs' 14 (16-29)


def run(db, *args):
    return CliRunner().invoke(cli, ["--db", str(db), *args])


@pytest.fixture(scope="module")
def outputs(tmp_path_factory) -> dict[str, str]:
    db = tmp_path_factory.mktemp("shapes") / "s.db"
    seed = sorted(str(p) for p in (FIXTURES / "seed").glob("*.log"))
    engine = sorted(str(p) for p in (FIXTURES / "engine").glob("*.log"))
    assert run(db, "ingest", "--container", "frank-primary-qwen", *seed).exit_code == 0
    assert run(db, "ingest", *engine).exit_code == 0
    out = {}
    for i in range(1, BOOTS + 1):
        commands = {
            f"show-{i}": ["show", str(i), "--json"],
            f"diffplan-{i}": ["diff", str(i), "1", "--json", "--plan", str(PLAN)],
            f"check-{i}": ["check", str(i), "--json", "--plan", str(PLAN)],
        }
        if i > 1:
            commands[f"diff-{i}"] = ["diff", str(i), str(i - 1), "--json"]
        for name, args in commands.items():
            res = run(db, *args)
            # (sources are stored as absolute paths: this checkout's place is not the shape)
            text = res.output.replace(str(ROOT), "<ROOT>")
            out[name] = f"{text}exit {res.exit_code}\n"
    out["list"] = run(db, "list", "--json").output.replace(str(ROOT), "<ROOT>")
    return out


def digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def test_every_json_output_is_byte_for_byte_what_it_was(outputs):
    got = {name: digest(text) for name, text in outputs.items()}
    if os.environ.get("BOOTLOG_WRITE_JSON_SHAPES"):
        MANIFEST.write_text(json.dumps(got, indent=1, sort_keys=True) + "\n")
    want = json.loads(MANIFEST.read_text())
    assert set(got) == set(want)
    changed = sorted(name for name in want if got[name] != want[name])
    assert not changed, f"JSON output changed: {changed[:10]} (first: {outputs[changed[0]][:400]})"


def test_the_outputs_are_the_contracts_shape(outputs):
    # (what the hashes stand for: the contract's keys, in its order)
    show = json.loads(outputs["show-4"].rsplit("exit", 1)[0])
    assert list(show)[:6] == ["boot", "metrics", "config", "events", "runtime", "deploy"]
    assert list(show["metrics"][0]) == ["name", "value", "unit", "rank", "line"]
    assert list(show["events"][0]) == ["kind", "rank", "line", "ts", "message", "detail"]
    d = json.loads(outputs["diff-4"].rsplit("exit", 1)[0])
    assert list(d) == ["a", "b", "findings", "summary"]
    assert list(d["findings"][0]) == ["key", "section", "rank", "old", "new", "delta", "pct", "verdict", "why"]
    assert list(d["summary"]) == ["drift", "violations", "changed_config", "unchanged"]
