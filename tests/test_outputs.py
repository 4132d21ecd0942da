"""Where bootlog writes a file the user names (export, report -o, plot -o, hook --openmetrics)
and where it keeps its database (issue 31): an output path is never the live database or its
-wal/-shm file, whatever links lead there; a symbolic link is written through only to a regular
file the user owns; a replaced file keeps its mode; --db is a regular file, never a device."""

from __future__ import annotations

import os
import sqlite3
import stat
import subprocess
import sys

import pytest
from click.testing import CliRunner

from bootlog.cli import cli
from paths import FIXTURES

READY = FIXTURES / "seed" / "01-shape-d-fp8-200704x3.log"


def run(db, *args):
    return CliRunner().invoke(cli, ["--db", str(db), *args], catch_exceptions=False)


@pytest.fixture
def db(tmp_path):
    path = tmp_path / "b.db"
    assert run(path, "ingest", str(READY)).exit_code == 0
    return path


def intact(db) -> None:
    """The database still opens and holds its boot (an export renamed over it left "file is
    not a database" for every command)."""
    with sqlite3.connect(db) as con:
        assert con.execute("SELECT count(*) FROM boots").fetchone() == (1,)
    assert run(db, "list").exit_code == 0


@pytest.mark.parametrize(
    "args, suffix",
    [
        (("export", "--format", "json"), ""),
        (("export", "--format", "csv"), ""),
        (("export", "--format", "openmetrics"), ""),
        (("export", "--format", "parquet"), ""),
        (("report", "-o"), ""),
        (("export", "--format", "json"), "-wal"),
        (("report", "-o"), "-shm"),
        (("plot", "kv_cache_tokens", "-o"), "link.png"),
        (("export", "--format", "openmetrics"), "link.prom"),
    ],
)
def test_an_output_onto_the_database_is_refused_and_the_database_stays(db, tmp_path, args, suffix):
    target = str(db) + suffix
    if suffix.startswith("link"):
        target = str(tmp_path / suffix)
        os.symlink(db, target)  # (a link to it: the same file once resolved)
    res = run(db, *args, target)
    assert res.exit_code == 1, res.output
    assert res.stderr.strip() == (
        f"bootlog: {target} is the database bootlog reads (or its -wal/-shm file): give another file name"
    )
    intact(db)


def test_a_hard_link_to_the_database_is_the_database_too(db, tmp_path):
    other = tmp_path / "boots.csv"
    os.link(db, other)
    res = run(db, "export", str(other))
    assert res.exit_code == 1 and "is the database bootlog reads" in res.stderr
    intact(db)


def test_a_link_planted_by_another_user_is_not_followed(db, tmp_path):
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me\n")
    link = tmp_path / "bootlog.prom"
    if os.geteuid() == 0:  # root: a link another user made (in a shared textfile directory)
        link.symlink_to(victim)
        os.lchown(link, 65534, 65534)
    else:  # a user: a link to a file of root's
        victim = "/etc/hostname" if os.path.exists("/etc/hostname") else "/etc/passwd"
        link.symlink_to(victim)
    res = run(db, "export", str(link))
    assert res.exit_code == 1 and res.stderr.startswith(f"bootlog: {link} is a symbolic link "), res.stderr
    assert "owned by another user" in res.stderr and len(res.stderr.splitlines()) == 1
    if os.geteuid() == 0:
        assert victim.read_text() == "keep me\n"


def test_a_link_to_nothing_is_refused_and_a_users_own_read_only_file_keeps_its_mode(db, tmp_path):
    dangling = tmp_path / "gone.prom"
    dangling.symlink_to(tmp_path / "no-such-dir-file")
    res = run(db, "export", str(dangling))
    assert res.exit_code == 1 and res.stderr.strip() == (
        f"bootlog: {dangling} is a symbolic link to nothing: give the file's own path"
    )
    real = tmp_path / "real.prom"
    real.write_text("old\n")
    real.chmod(0o444)
    link = tmp_path / "bootlog.prom"
    link.symlink_to(real)
    assert run(db, "export", str(link)).exit_code == 0
    # written through (the link stays), its mode as the user left it (a rename reset it to 644)
    assert link.is_symlink() and real.read_text().endswith("# EOF\n")
    assert stat.S_IMODE(real.stat().st_mode) == 0o444


@pytest.mark.parametrize("db_arg", ["/dev/stdout", "/dev/null"])
def test_a_database_that_is_a_device_is_refused(tmp_path, db_arg):
    p = subprocess.run(
        [sys.executable, "-m", "bootlog.cli", "--db", db_arg, "ingest", str(READY)], capture_output=True, timeout=60
    )
    assert p.returncode == 1 and b"SQLite format" not in p.stdout
    assert p.stderr.decode().strip() == (
        f"bootlog: cannot open database {db_arg}: not a regular file (a device or a pipe); give a database file"
    )
