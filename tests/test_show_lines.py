"""`bootlog show REF --lines [N]`: the stored source's lines around each event, with their line
numbers, escaped; one clear line when the source is gone or changed."""

from __future__ import annotations

import json
import re
import shutil

from click.testing import CliRunner

from bootlog.cli import cli
from paths import FIXTURES

E05 = FIXTURES / "engine" / "e05-v0.32.0-cpu-fail-max-model-len.log"  # a failed start: traceback 11-54
SEED08 = FIXTURES / "seed" / "08-gdn-hip-burst-prefix-caching.log"  # a gdn_hip burst, lines 332-365


def run(db, *args):
    return CliRunner().invoke(cli, ["--db", str(db), *args], catch_exceptions=False)


def physical(path) -> list[str]:
    """The file's lines as bootlog numbers them (only \\n ends a line)."""
    return path.read_bytes().decode().split("\n")


def numbered(out: str) -> dict[int, tuple[bool, str]]:
    """line number -> (marked as an event's line, text) of show --lines output."""
    got = {}
    for ln in out.splitlines():
        m = re.match(r"^([> ]) +([\d,]+) │ (.*)$", ln)
        if m:
            got[int(m.group(2).replace(",", ""))] = (m.group(1) == ">", m.group(3))
    return got


def test_a_failed_start_shows_its_whole_traceback_with_the_files_line_numbers(db_path, tmp_path):
    log = tmp_path / E05.name
    shutil.copy(E05, log)
    assert run(db_path, "ingest", str(log)).exit_code == 0
    res = run(db_path, "show", "last", "--lines")
    assert res.exit_code == 0, res.output
    file = physical(log)
    # read by hand: the traceback starts on line 11, the Value error reason is line 53, the boot ends at 54
    assert file[10] == "Traceback (most recent call last):" and file[52].startswith("  Value error, User-specified")
    got = numbered(res.stdout)
    assert sorted(got) == list(range(8, 55))  # 3 lines before the traceback, then to the boot's end
    assert all(text == file[n - 1] for n, (_, text) in got.items() if len(file[n - 1]) < 1000)
    assert [n for n, (mark, _) in got.items() if mark] == [11, 53]  # the traceback, the value_error
    assert "── traceback line 11, value_error line 53 ──" in res.stdout
    assert res.stdout.splitlines()[0] == f"boot #1 failed (value_error): {log}, lines 4-54"
    # ±0: the events' own lines and the traceback's body only
    zero = numbered(run(db_path, "show", "last", "--lines", "0").stdout)
    assert min(zero) == 11 and max(zero) == 54


def test_a_fault_burst_is_one_block_named_once(db_path):
    assert run(db_path, "ingest", str(SEED08)).exit_code == 0
    res = run(db_path, "show", "1", "--lines", "2")
    assert "── gdn_hip_fault x32, lines 332-364, gdn_hip_fault_cap line 365 ──" in res.stdout, res.stdout
    got = numbered(res.stdout)
    assert all(n in got for n in range(330, 368))
    assert got[333][1].startswith("[gdn_hip] NOTE: this is a known Qwen3.8-Flash-Next")  # (context, not marked)
    assert not got[333][0] and got[332][0]


def test_hostile_text_is_escaped(db_path, tmp_path):
    log = tmp_path / "hostile.log"
    data = E05.read_bytes().replace(
        b"1 validation error for ModelConfig", b"1 validation error for \xe2\x80\xaeModelConfig\x07\x1b]0;pwned\x07"
    )
    log.write_bytes(data)
    assert run(db_path, "ingest", str(log)).exit_code == 0
    res = run(db_path, "show", "last", "--lines")
    assert "\u202e" not in res.stdout and "\x07" not in res.stdout and "\x1b" not in res.stdout
    assert "\\u202eModelConfig" in res.stdout


def test_a_source_gone_or_rewritten_is_one_line(db_path, tmp_path):
    log = tmp_path / "vllm.log"
    shutil.copy(E05, log)
    assert run(db_path, "ingest", str(log)).exit_code == 0
    log.write_bytes((FIXTURES / "engine" / "e01-v0.32.0-cpu-cold-requests-sigterm.log").read_bytes())
    res = run(db_path, "show", "1", "--lines")
    assert res.exit_code == 1 and res.stdout == ""
    assert res.stderr.strip().splitlines() == [
        f"bootlog: the lines of boot #1 cannot be shown: {log} no longer holds this boot "
        "(rewritten or rotated since it was stored)"
    ]
    log.unlink()
    res = run(db_path, "show", "1", "--lines")
    assert res.exit_code == 1 and len(res.stderr.strip().splitlines()) == 1
    assert "cannot be shown" in res.stderr and "no such file" in res.stderr and "Traceback" not in res.output


def test_json_twin(db_path):
    assert run(db_path, "ingest", str(E05)).exit_code == 0
    doc = json.loads(run(db_path, "show", "last", "--lines", "1", "--json").stdout)
    (block,) = doc["source_lines"]["blocks"]
    assert (block["first"], block["last"]) == (10, 54)
    assert block["events"] == [
        {"kind": "traceback", "line": 11, "rank": None},
        {"kind": "value_error", "line": 53, "rank": None},
    ]
    file = physical(E05)
    assert [x["text"] for x in block["lines"]] == file[9:54]


def test_a_containers_boot_is_read_again_from_podman_and_gone_with_it(replayer, db_path):
    from podman_util import all_at_once, run_podman, wait_exit

    log = E05.read_bytes()
    name = replayer.start([all_at_once(log, exit_code=1)])
    wait_exit(name)
    assert run(db_path, "ingest", "--container", name).exit_code == 0
    res = run(db_path, "show", "last", "--lines", "1")
    assert res.exit_code == 0, res.output
    got = numbered(res.stdout)
    file = physical(E05)
    # (podman's own timestamps are the envelope: the text is the log's line, under its number)
    assert sorted(got) == list(range(10, 55)) and all(got[n][1] == file[n - 1] for n in (10, 11, 52, 53))
    run_podman("rm", "-f", "-t", "0", name)
    gone = run(db_path, "show", "last", "--lines")
    assert gone.exit_code == 1 and len(gone.stderr.strip().splitlines()) == 1, gone.output
    assert "the lines of boot #1 cannot be shown" in gone.stderr and name in gone.stderr
