"""entry.py: a plain `bootlog [--db X] ingest PATH...` runs without click, and prints, exits
and stores exactly what the click command does."""
from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from datetime import datetime, timezone

import pytest

from bootlog.entry import quick_args
from conftest import FIXTURES

LOG = FIXTURES / "057-rocm-rdna4-gfx12-tp2-v0.22.69-fork-boot.log"
OOM = FIXTURES / "058-rocm-rdna4-tp2-hip-oom-sweep.log"


def run(args: list[str], *, quick: bool, env: dict | None = None, stdin: bytes | None = None):
    e = dict(os.environ, **(env or {}))
    e.pop("BOOTLOG_NO_QUICK", None)
    if not quick:
        e["BOOTLOG_NO_QUICK"] = "1"
    # -X importtime: the quick path must not import click (stderr lists every import)
    p = subprocess.run([sys.executable, "-X", "importtime", "-c", "from bootlog.entry import main; main()", *args],
                       capture_output=True, env=e, input=stdin)
    imports = [line for line in p.stderr.decode().splitlines() if line.startswith("import time:")]
    err = "\n".join(line for line in p.stderr.decode().splitlines() if not line.startswith("import time:"))
    clicked = any(line.rsplit("|", 1)[-1].strip() == "click" for line in imports)
    return p.returncode, p.stdout.decode(), err, clicked


def rows(db) -> list:
    """Every stored row, the time of the ingest (a column of boots) left out."""
    today = {str(datetime.now().date()), str(datetime.now(timezone.utc).date())}
    conn = sqlite3.connect(db)
    try:
        return [[tuple("NOW" if isinstance(v, str) and v[:10] in today else v for v in row)
                 for row in conn.execute(f"SELECT * FROM {t} ORDER BY 1")]
                for t in ("boots", "metrics", "events", "samples", "positions")]
    finally:
        conn.close()


@pytest.mark.parametrize("argv, want", [
    (["ingest", "a.log"], (None, ["a.log"])),
    (["ingest", "a.log", "b.log"], (None, ["a.log", "b.log"])),
    (["--db", "x.db", "ingest", "a.log"], ("x.db", ["a.log"])),
    (["--db=x.db", "ingest", "a.log"], ("x.db", ["a.log"])),
    (["ingest"], None),  # click's usage error
    (["ingest", "-"], None),  # stdin
    (["ingest", "--json", "a.log"], None),
    (["ingest", "a.log", "--container", "c"], None),
    (["ingest", ""], None),
    (["--db", "", "ingest", "a.log"], None),  # click's "--db is empty"
    (["--db"], None),
    (["list"], None),
    (["--help"], None),
    (["ingest", "--help"], None),
    (["-h", "ingest", "a.log"], None),
    ([], None),
])
def test_quick_args_take_only_the_plain_shape(argv, want, monkeypatch):
    monkeypatch.delenv("BOOTLOG_DB", raising=False)
    assert quick_args(argv) == want


def test_quick_args_read_bootlog_db_as_click_does(monkeypatch):
    monkeypatch.setenv("BOOTLOG_DB", "env.db")
    assert quick_args(["ingest", "a.log"]) == ("env.db", ["a.log"])
    assert quick_args(["--db", "x.db", "ingest", "a.log"]) == ("x.db", ["a.log"])
    monkeypatch.setenv("BOOTLOG_DB", "")  # empty: unset, as click reads it
    assert quick_args(["ingest", "a.log"]) == (None, ["a.log"])
    monkeypatch.setenv("BOOTLOG_DB", "  ")  # blank: click's usage error
    assert quick_args(["ingest", "a.log"]) is None


def test_quick_and_click_ingest_print_exit_and_store_the_same(tmp_path):
    grown = tmp_path / "grown.log"
    data = (FIXTURES / "seed/08-gdn-hip-burst-prefix-caching.log").read_bytes()
    cut = data.index(b"\n", len(data) * 3 // 4) + 1
    seen = {}
    for quick in (True, False):
        d = tmp_path / ("q" if quick else "c")
        d.mkdir()
        db = str(d / "t.db")
        grown.write_bytes(data[:cut])
        steps = [
            ["--db", db, "ingest", str(grown)],  # new
            ["--db", db, "ingest", str(grown)],  # nothing new
            "grow",
            [f"--db={db}", "ingest", str(grown)],  # read on
            ["--db", db, "ingest", str(OOM), str(d / "missing.log")],  # one of two unreadable: 1
            ["--db", db, "ingest", str(d / "missing.log")],  # 1, one line
            ["--db", str(tmp_path / "nodir" / "t.db"), "ingest", str(LOG)],  # database trouble
        ]
        outs = []
        for step in steps:
            if step == "grow":
                grown.write_bytes(data)
                continue
            code, out, err, clicked = run(step, quick=quick)
            assert clicked is not quick, step
            # the store was closed before the exit (the last connection checkpoints the WAL)
            assert not os.path.exists(db + "-wal"), step
            outs.append((code, out, err.replace(str(d), "D")))
        seen[quick] = (outs, rows(db))
    assert seen[True] == seen[False]
    outs = seen[True][0]
    assert [o[0] for o in outs] == [0, 0, 0, 1, 1, 1]
    assert "[new]" in outs[0][1] and "nothing new since line" in outs[1][1] and "read on from line" in outs[2][1]
    assert outs[4][2].count("\n") == 0 and outs[4][2].startswith("bootlog: ")  # one line, no traceback


def test_quick_ingest_uses_bootlog_db_and_a_foreign_file_is_refused_the_same(tmp_path):
    foreign = tmp_path / "notes.db"
    foreign.write_bytes(b"not a database at all\n" * 100)
    got = [run(["ingest", str(LOG)], quick=q, env={"BOOTLOG_DB": str(foreign)}) for q in (True, False)]
    assert got[0][:3] == got[1][:3]
    assert got[0][0] == 1 and got[0][2].startswith("bootlog: ") and "Traceback" not in got[0][2]
    assert foreign.read_bytes() == b"not a database at all\n" * 100


def test_a_quick_ingest_ends_as_any_exit_does(tmp_path):
    # entry._end skips the interpreter's teardown: atexit's functions still run, in order after
    # the output, and the exit code is the ingest's
    code = ("import atexit, sys; atexit.register(lambda: print('ATEXIT', flush=True)); "
            "from bootlog.entry import main; main()")
    db = str(tmp_path / "t.db")
    for paths, want in (([str(OOM)], 0), ([str(tmp_path / "missing.log")], 1)):
        p = subprocess.run([sys.executable, "-c", code, "--db", db, "ingest", *paths], capture_output=True, text=True)
        assert p.returncode == want and p.stdout.endswith("ATEXIT\n"), p
        assert ("[new]" in p.stdout) if want == 0 else p.stderr.startswith("bootlog: no such file")
