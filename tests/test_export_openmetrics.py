"""`bootlog export --format openmetrics [FILE]` and `bootlog hook --openmetrics FILE` on stored
seed boots, read back with the Prometheus client library's own OpenMetrics parser."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest
from click.testing import CliRunner
from prometheus_client.openmetrics.parser import text_string_to_metric_families

from bootlog.cli import cli
from paths import FIXTURES
from podman_util import all_at_once, fixture_log, wait_exit

SEED = FIXTURES / "seed"
CONTAINER, HOST = "frank-primary-qwen", "dankserver"
OTHER = FIXTURES / "051-v0.27.1-tp2-compilation-split.log"  # a plain file on another host


def run(db, *args):
    return CliRunner().invoke(cli, ["--db", str(db), *args], catch_exceptions=False)


@pytest.fixture(scope="module")
def db(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("om") / "fleet.db"
    seeds = sorted(map(str, SEED.glob("*.log")))
    assert run(path, "ingest", "--container", CONTAINER, "--host", HOST, *seeds).exit_code == 0
    assert run(path, "ingest", "--host", "gpu2", str(OTHER)).exit_code == 0
    return path


def families(text: str) -> dict:
    return {f.name: f for f in text_string_to_metric_families(text)}


def by_labels(fam, *keys: str) -> dict:
    return {tuple(s.labels.get(k) for k in keys): s.value for s in fam.samples}


def show(db, ref: str, *args: str) -> dict:
    return json.loads(run(db, "show", ref, "--json", *args).stdout)


def test_stdout_holds_the_latest_boot_of_each_series(db):
    res = run(db, "export", "--format", "openmetrics")
    assert res.exit_code == 0 and res.stdout.endswith("# EOF\n")
    fams = families(res.stdout)
    last = show(db, "last", "--container", CONTAINER)
    other = show(db, "last", "--host", "gpu2")
    ids = by_labels(fams["bootlog_boot_id"], "host", "container")
    # one series per host/container: the container's latest (seed 04, shape G) and the file's
    assert ids == {(HOST, CONTAINER): last["boot"]["id"], ("gpu2", OTHER.name): other["boot"]["id"]}
    kv = by_labels(fams["bootlog_kv_cache_tokens"], "host", "container")
    assert kv[(HOST, CONTAINER)] == next(m["value"] for m in last["metrics"] if m["name"] == "kv_cache_tokens")
    gc = by_labels(fams["bootlog_graph_capture_gib"], "container", "rank")
    want = {str(m["rank"]): m["value"] for m in last["metrics"] if m["name"] == "graph_capture_gib"}
    assert {r: v for (c, r), v in gc.items() if c == CONTAINER} == want and len(want) == 2
    assert by_labels(fams["bootlog_boot_ready"], "container") == {(CONTAINER,): 1, (OTHER.name,): 1}
    assert fams["bootlog_boot_started_timestamp_seconds"].unit == "seconds"


def test_a_filter_keeps_its_series_only(db):
    fams = families(run(db, "export", "--format", "openmetrics", "--host", "gpu2").stdout)
    assert set(by_labels(fams["bootlog_boot_id"], "host")) == {("gpu2",)}


def test_file_is_written_whole_and_a_prom_name_picks_the_format(db, tmp_path):
    out = tmp_path / "textfile" / "bootlog.prom"
    out.parent.mkdir()
    res = run(db, "export", str(out))  # (.prom: no --format needed)
    assert res.exit_code == 0, res.output
    assert res.output == f"exported 2 boots (the latest of each host/container) to {out}\n"
    assert out.read_text() == run(db, "export", "--format", "openmetrics").stdout
    assert os.listdir(out.parent) == ["bootlog.prom"] and oct(out.stat().st_mode & 0o777) == "0o644"


def test_a_device_is_written_to_never_renamed_over_and_a_symlink_stays(db, tmp_path):
    res = run(db, "export", "--format", "openmetrics", "/dev/full")
    assert res.exit_code == 1 and "No space left on device" in res.stderr, res.output
    assert stat.S_ISCHR(os.stat("/dev/full").st_mode)  # (a rename would have put a file there)
    res = run(db, "report", "-o", "/dev/full")
    assert res.exit_code == 1 and stat.S_ISCHR(os.stat("/dev/full").st_mode)
    real = tmp_path / "real.prom"
    real.write_text("old\n")
    link = tmp_path / "bootlog.prom"
    link.symlink_to(real)
    assert run(db, "export", str(link)).exit_code == 0
    assert link.is_symlink() and real.read_text().endswith("# EOF\n")


def test_bad_targets_are_one_line(db, tmp_path):
    res = run(db, "export", "--format", "openmetrics", str(tmp_path / "nowhere" / "b.prom"))
    assert res.exit_code == 1 and res.output.strip() == f"bootlog: directory {tmp_path / 'nowhere'} does not exist"
    res = run(db, "export", "--format", "csv")
    assert res.exit_code == 2 and "give FILE to write the csv export to" in res.output


SMALL = "012-v0.10.2-v1-small.log"


def test_hook_refreshes_the_file_after_every_deploy(replayer, db_path, tmp_path):
    """Two deploys of one container: after each hook the file holds that deploy's boot."""
    log = fixture_log(SMALL).read_bytes()
    smaller = log.replace(b"433,456 tokens", b"420,100 tokens").replace(b"09-26 05:", b"09-26 07:")
    name = replayer.start([all_at_once(log, exit_code=0), all_at_once(smaller).hold()])
    prom = tmp_path / "bootlog.prom"
    wait_exit(name)
    first = run(db_path, "hook", "--container", name, "--poll", "0.2", "--timeout", "60", "--openmetrics", str(prom))
    assert first.exit_code == 0, first.output
    fams = families(prom.read_text())
    assert by_labels(fams["bootlog_kv_cache_tokens"], "container") == {(name,): 433456}
    replayer.restart(name)
    second = run(db_path, "hook", "--container", name, "--poll", "0.2", "--timeout", "60", "--openmetrics", str(prom))
    assert second.exit_code == 3, second.output  # (the KV drift is the hook's verdict, unchanged)
    fams = families(prom.read_text())
    assert by_labels(fams["bootlog_kv_cache_tokens"], "container") == {(name,): 420100}
    assert by_labels(fams["bootlog_boot_id"], "container") == {(name,): 2}


def test_hook_refuses_an_unwritable_textfile_before_waiting(db_path, tmp_path):
    res = run(db_path, "hook", "--container", "nope", "--timeout", "1", "--openmetrics", str(tmp_path / "x" / "b.prom"))
    assert res.exit_code == 1 and res.output.strip() == f"bootlog: directory {tmp_path / 'x'} does not exist"
