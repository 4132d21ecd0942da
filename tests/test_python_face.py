"""bootlog's Python face (bootlog/__init__.py), used as a deploy script would use it: ingest the
operator's logs, hold the newest boot to its plan, diff it against the one before.  What it says
is held to what the command line says of the same database (JSON and exit codes)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import bootlog

ROOT = Path(__file__).resolve().parent.parent
SEED = ROOT / "fixtures" / "logs" / "seed"
PLAN = ROOT / "fixtures" / "plans" / "frank-primary.toml"


def _cli(db: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "bootlog.cli", "--db", str(db), *args], capture_output=True, text=True, cwd=ROOT
    )


def test_a_deploy_script_ingests_checks_and_diffs_as_the_command_line_does(tmp_path):
    db = tmp_path / "boots.db"
    store = bootlog.open_store(str(db))
    try:
        plan = bootlog.load_plan(str(PLAN))
        # shape D, then shape G (no prefix cache) after it
        first = bootlog.ingest(store, str(SEED / "01-shape-d-fp8-200704x3.log"), plan=plan)
        got = bootlog.ingest(store, str(SEED / "04-shape-g-kv-400700-no-prefix-cache.log"), plan=plan)
        assert [b.created for b in (*first, *got)] == [True] * (len(first) + len(got))
        newest = got[-1].id
        shown = bootlog.show(store)
        assert shown["boot"]["id"] == newest and shown["boot"]["status"] == "ready"
        # (the figure as the log prints it, line 187: "GPU KV cache size: 401,408 tokens")
        assert "GPU KV cache size: 401,408 tokens" in (SEED / "04-shape-g-kv-400700-no-prefix-cache.log").read_text()
        assert {m["value"] for m in shown["metrics"] if m["name"] == "kv_cache_tokens"} == {401408}
        checked = bootlog.check(store, "last", plan=plan)
        diffed = bootlog.diff(store, "last", "prev")
    finally:
        store.close()

    cli_check = _cli(db, "check", "last", "--plan", str(PLAN), "--json")
    cli_diff = _cli(db, "diff", "last", "prev", "--json")
    assert json.loads(cli_check.stdout) == json.loads(json.dumps(checked, default=str))
    assert json.loads(cli_diff.stdout) == json.loads(json.dumps(diffed, default=str))
    assert bootlog.exit_code(checked) == cli_check.returncode
    assert bootlog.exit_code(diffed) == cli_diff.returncode
    assert any(f["key"] == "kv_cache_tokens" and f["verdict"] != "same" for f in diffed["findings"])


def test_errors_are_bootlog_errors_with_the_command_lines_exit_code(tmp_path):
    store = bootlog.open_store(str(tmp_path / "empty.db"))
    try:
        try:
            bootlog.show(store, "last")
        except bootlog.BootlogError as err:
            said, code = str(err), int(err.exit)
        else:
            raise AssertionError("an empty database has no last boot")
    finally:
        store.close()
    cli = _cli(tmp_path / "empty.db", "show", "last")
    assert code == cli.returncode != 0
    assert said in cli.stderr


def test_the_face_lists_what_it_offers_and_imports_nothing_heavy():
    assert set(bootlog.__all__) == {
        "BootlogError",
        "check",
        "diff",
        "exit_code",
        "ingest",
        "load_plan",
        "open_store",
        "show",
    }
    code = (
        "import sys, bootlog; import bootlog.cli; "
        "print(sorted(m for m in ('pandas', 'alembic', 'sqlalchemy', 'bootlog.run.ingest') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert out.stdout.strip() == "[]", out.stderr


def test_any_source_goes_in_as_a_file_does(tmp_path):
    # a source is read.sources.Source (a name, a kind, a reader of byte ranges): one made of bytes
    # already read stores the boots the file gives
    from bootlog.read.sources import bytes_source

    log = SEED / "09-night-ladder-4-boots.log"
    a, b = bootlog.open_store(str(tmp_path / "a.db")), bootlog.open_store(str(tmp_path / "b.db"))
    try:
        from_file = bootlog.ingest(a, str(log))
        from_bytes = bootlog.ingest(b, source=bytes_source("night", log.read_bytes(), kind="stdin"))
        assert len(from_file) == len(from_bytes) == 4
        assert [bootlog.show(a, str(x.id))["metrics"] for x in from_file] == [
            bootlog.show(b, str(x.id))["metrics"] for x in from_bytes
        ]
    finally:
        a.close()
        b.close()
