"""One clock everywhere: `list` and `show` (text and JSON) give each boot's times on its log's
own clock, always with the zone, as the report does; `list` says its order is the start order."""

from __future__ import annotations

import json
import re
from datetime import datetime

import pytest
from click.testing import CliRunner

from bootlog.cli import cli
from bootlog.store.db import open_store
from paths import FIXTURES
from pgutil import pg_base_url, pg_schema

# PostgreSQL too when BOOTLOG_TEST_PG_URL names one (its timestamps are text columns as in SQLite)
BACKENDS = ["sqlite"] + (["postgresql"] if pg_base_url() else [])

SEED = FIXTURES / "seed"
LOOP, SHAPE_D, LADDER = (
    SEED / "05-util-1.00-crash-loop.log",
    SEED / "01-shape-d-fp8-200704x3.log",
    SEED / "09-night-ladder-4-boots.log",
)
PLAIN = FIXTURES / "engine" / "e01-v0.32.0-cpu-cold-requests-sigterm.log"  # a real vLLM 0.32, no envelope
PODMAN = FIXTURES / "engine" / "e11-v0.32.0-cpu-podman-auto-kv-engine-core-killed.log"  # podman, a UTC container


def run(db, *args):
    return CliRunner().invoke(cli, ["--db", str(db), *args], catch_exceptions=False)


def vllm_stamp(log, line: int) -> str:
    """vLLM's own `MM-DD HH:MM:SS` on a line of the log, read by hand (its local clock)."""
    text = log.read_text(encoding="utf-8", errors="replace").splitlines()[line - 1]
    return re.search(r" (\d\d-\d\d \d\d:\d\d:\d\d) \[", text)[1]


@pytest.fixture(params=BACKENDS)
def db(request, tmp_path):
    if request.param == "sqlite":
        yield str(tmp_path / "b.db")
    else:
        with pg_schema(pg_base_url()) as url:
            yield url


def test_list_and_show_give_the_seed_logs_times_on_their_own_pdt_clock(db):
    assert run(db, "ingest", str(LOOP), str(SHAPE_D)).exit_code == 0
    boots = json.loads(run(db, "list", "--json").stdout)
    store = open_store(db)
    try:
        stored = dict(store.rows("SELECT id, started_at FROM boots"))
    finally:
        store.close()
    for b in boots:
        log = SEED / b["source"].rsplit("/", 1)[1]
        # the contract's shape: ISO with the log's offset, the instant the database holds (UTC)
        assert b["started_at"].endswith("-07:00")
        assert datetime.fromisoformat(b["started_at"]) == datetime.fromisoformat(stored[b["id"]])
        assert stored[b["id"]].endswith("+00:00")
        # and the wall-clock time vLLM printed on the boot's first line
        assert b["started_at"][5:19].replace("T", " ") == vllm_stamp(log, b["first_line"])
    # the notes' crash loop: "on BOTH ranks at 09:53 and 09:54" (the second start at 09:53:59)
    text = run(db, "list").stdout
    loop = [ln for ln in text.splitlines() if "05-util-1.00-crash-loop.log" in ln]
    assert [re.search(r"2026-10-03 (\S+) -07:00", ln)[1] for ln in loop] == ["09:52:57", "09:53:59"]

    shown = json.loads(run(db, "show", "2", "--json").stdout)
    assert shown["boot"]["started_at"] == "2026-10-03T09:53:59.709954-07:00"
    assert shown["boot"]["ended_at"].endswith("-07:00")
    assert all(e["ts"].endswith("-07:00") for e in shown["events"] if e["ts"])
    assert all(p["start"].endswith("-07:00") for p in shown["timeline"])
    lines = run(db, "show", "2").stdout.splitlines()
    assert (
        "  started_at     2026-10-03 09:53:59 -07:00  — times in -07:00, the log's offset "
        "(vLLM's own clock against the envelope's UTC stamps)"
    ) in lines
    assert any(re.fullmatch(r"  ended_at       2026-10-03 09:5\d:\d\d -07:00", ln) for ln in lines)


def test_a_log_without_a_zone_says_so_and_a_utc_container_says_utc(tmp_path):
    db = tmp_path / "b.db"
    assert run(db, "ingest", str(PLAIN), str(PODMAN)).exit_code == 0
    boots = {b["source"].rsplit("/", 1)[1]: b for b in json.loads(run(db, "list", "--json").stdout)}
    plain, podman = boots[PLAIN.name], boots[PODMAN.name]
    # vLLM prints no zone: the JSON time stays as the log printed it (no invented offset)
    assert re.fullmatch(r"2026-12-06T02:58:54(\.\d+)?", plain["started_at"])
    assert podman["started_at"].endswith("+00:00")
    rows = {ln.split()[0]: ln for ln in run(db, "list").stdout.splitlines()[1:] if ln.split()[0].isdigit()}
    assert f"2026-12-06 {vllm_stamp(PLAIN, plain['first_line'])[6:]} (no zone)" in rows[str(plain["id"])]
    # the container's vLLM printed 03:08:54 beside envelope stamps of 03:08:54Z: its clock is UTC
    assert f"2026-12-06 {vllm_stamp(PODMAN, podman['first_line'])[6:]} UTC" in rows[str(podman["id"])]
    assert (
        "  started_at     2026-12-06 02:58:54 (no zone)  — times as the log printed them (its lines carry "
        "no zone)" in run(db, "show", str(plain["id"])).stdout.splitlines()
    )


def test_list_is_in_start_order_and_says_so_when_ids_are_not(tmp_path):
    db = tmp_path / "b.db"
    # shape D (10-02) stored first, the night ladder (09-29, four starts) after it
    assert run(db, "ingest", str(SHAPE_D)).exit_code == 0
    assert run(db, "ingest", str(LADDER)).exit_code == 0
    out = run(db, "list").stdout.splitlines()
    ids = [int(ln.split()[0]) for ln in out[1:] if ln.split()[0].isdigit()]
    assert ids == [2, 3, 4, 5, 1]
    starts = [re.search(r"(2026-\S+ \S+) -07:00", ln)[1] for ln in out[1:6]]
    assert starts == sorted(starts) and starts[0] == "2026-09-29 22:04:31"  # the ladder's 262144 rung
    assert out[-1] == "(in the order the boots started, oldest first; ids count the order they were stored in)"
    # stored in time order: nothing to explain
    in_order = tmp_path / "o.db"
    assert run(in_order, "ingest", str(LADDER), str(SHAPE_D)).exit_code == 0
    assert "ids count" not in run(in_order, "list").stdout
