"""Whole outputs of `show`, `diff`, `check` and the hook's summary on real fixture logs, compared
line for line with tests/golden/*.txt (as simonw/llm's CLI tests compare whole outputs).  Only
what differs from run to run is masked: the checkout's and the scratch directory's paths, the
time a replay took, the local image's digest.  BOOTLOG_UPDATE_DOCS=1 rewrites the golden files
with what bootlog prints now (the lead regenerates them after merging output changes)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from bootlog.cli import cli
from paths import FIXTURES, ROOT

GOLDEN = Path(__file__).parent / "golden"
UPDATE = os.environ.get("BOOTLOG_UPDATE_DOCS") == "1"
SEED = FIXTURES / "seed"
ENGINE = FIXTURES / "engine"
PLAN = ROOT / "fixtures" / "plans" / "frank-primary.toml"

# name -> (logs ingested in this order, the command whose whole output is golden)
CASES = {
    "show-ready-tp2": ([SEED / "01-shape-d-fp8-200704x3.log"], ["show", "last"]),
    "show-crash-loop": ([SEED / "05-util-1.00-crash-loop.log"], ["show", "last"]),
    "show-died-serving-oom": ([SEED / "07-5x262144-runtime-oom.log"], ["show", "last"]),
    "show-engine-core-killed": ([ENGINE / "e02-v0.32.0-cpu-warm-engine-core-killed.log"], ["show", "last"]),
    "diff-one-flag-added": (
        [SEED / "01-shape-d-fp8-200704x3.log", SEED / "02-shape-e-precise-memory.log"],
        ["diff", "last", "prev"],
    ),
    "diff-cold-then-warm-compile": ([SEED / "10-cold-vs-warm-compile.log"], ["diff", "last", "prev"]),
    "diff-json-one-flag-added": (
        [SEED / "01-shape-d-fp8-200704x3.log", SEED / "02-shape-e-precise-memory.log"],
        ["diff", "last", "prev", "--json"],
    ),
    "check-final-config-passes": (
        [SEED / "04-shape-g-kv-400700-no-prefix-cache.log"],
        ["check", "last", "--plan", str(PLAN)],
    ),
    "check-first-config-misses": ([SEED / "01-shape-d-fp8-200704x3.log"], ["check", "last", "--plan", str(PLAN)]),
    "check-markdown-died-serving": (
        [SEED / "07-5x262144-runtime-oom.log"],
        ["check", "last", "--plan", str(PLAN), "--markdown"],
    ),
}


def mask(text: str, scratch: Path, replay: bool = False) -> str:
    text = text.replace(str(scratch), "<scratch>").replace(str(ROOT), "<repo>")
    if replay:  # a replay container: its boot takes microseconds, its mounts are the test's own
        text = re.sub(r"boot to ready\s+\S+ s", "boot to ready <s> s", text)
        text = re.sub(r"(boot_to_ready_s\s+)\S+ → \S+  \([^)]*\)", r"\1<s> → <s>  (<change>)", text)
        # (two replays' microsecond boots are now equal, now not: boot_to_ready_s counts on either side)
        text = re.sub(
            r"(\d+) unchanged, (\d+) without enough history",
            lambda m: f"<{int(m[1]) + int(m[2])} unchanged or without enough history>",
            text,
        )
        text = re.sub(r"(mount\.\S+: ).*?(  mounted)", r"\1<mount> → <mount>\2", text)
        text = re.sub(r"waited\s+[\d.]+ ?s", "waited <s>", text)
        text = re.sub(r"sha256:[0-9a-f]{12,64}", "sha256:<digest>", text)  # (this machine's image)
    return text


def _golden(name: str, got: str) -> None:
    path = GOLDEN / f"{name}.txt"
    if UPDATE:
        GOLDEN.mkdir(exist_ok=True)
        path.write_text(got)
        return
    assert path.is_file(), f"no {path.name}: run with BOOTLOG_UPDATE_DOCS=1 to write it"
    want = path.read_text()
    # (the whole text at once: pytest shows a line diff when it differs)
    assert got == want, f"{path.name} is not what bootlog prints now"


def render(args: list[str], res) -> str:
    """What a terminal shows of one command: the command, stdout, stderr, the exit code."""
    out = [f"$ bootlog {' '.join(args)}", res.stdout.rstrip("\n")]
    if res.stderr:
        out.append(res.stderr.rstrip("\n"))
    out.append(f"[exit {res.exit_code}]")
    return "\n".join(out) + "\n"


@pytest.mark.parametrize("name", sorted(CASES))
def test_whole_output(name, tmp_path):
    logs, args = CASES[name]
    db = str(tmp_path / "golden.db")
    runner = CliRunner()
    for log in logs:
        # (a host label of its own: `show` prints it, and this machine's name is not the golden's)
        res = runner.invoke(cli, ["--db", db, "ingest", "--host", "gpu-host", str(log)], catch_exceptions=False)
        assert res.exit_code == 0, res.output
    res = runner.invoke(cli, ["--db", db, *args], catch_exceptions=False)
    shown = [a.replace(str(ROOT) + "/", "") for a in args]
    _golden(name, mask(render(shown, res), tmp_path))


def test_the_exit_codes_are_those_of_the_verdicts():
    """Checked by something other than the golden text: the verdict each case must reach."""
    want = {
        "check-final-config-passes": 0,
        "check-first-config-misses": 4,
        "check-markdown-died-serving": 4,
        "diff-one-flag-added": 0,
        "diff-cold-then-warm-compile": 0,
    }
    for name, code in want.items():
        text = (GOLDEN / f"{name}.txt").read_text()
        assert text.rstrip().endswith(f"[exit {code}]"), name


def test_the_hook_summary(replayer, tmp_path):
    """Two deploys of one container in real podman (the configuration before the final one, then
    the final one, a replay container each): the second hook's whole text summary."""
    from podman_util import all_at_once, run_podman, unstamped

    env = {
        **os.environ,
        "BOOTLOG_DB": str(tmp_path / "hook.db"),
        "PATH": f"{os.path.dirname(sys.executable)}:{os.environ['PATH']}",
    }
    args = [
        "hook",
        "--container",
        "golden-demo",
        "--poll",
        "0.2",
        "--plan",
        "fixtures/plans/frank-primary.toml",
        "--gpu-smi",
        "none",
    ]
    try:
        for log, base_mb in (
            ("03-shape-f-mnbt2048-graph-pinned.log", "256"),
            ("04-shape-g-kv-400700-no-prefix-cache.log", "0"),
        ):
            run_podman("rm", "-f", "-t", "0", "golden-demo", check=False)
            replayer.start(
                [all_at_once(unstamped((SEED / log).read_bytes()))],
                name="golden-demo",
                env={"FRANK_PRIMARY_CUDAGRAPH_BASE_MB": base_mb},
            )
            done = subprocess.run(
                ["bootlog", *args],
                cwd=ROOT,
                env=env,
                capture_output=True,
                text=True,
                stdin=subprocess.DEVNULL,
                timeout=120,
            )
    finally:
        run_podman("rm", "-f", "-t", "0", "golden-demo", check=False)
    assert done.returncode == 0, done.stdout + done.stderr  # (OK: the final configuration meets its plan)

    class Res:
        stdout, stderr, exit_code = done.stdout, done.stderr, done.returncode

    _golden("hook-text-final-config", mask(render(args, Res), tmp_path, replay=True))
