"""Hostile log text reaches no output alive (issue 23, items 1-3, 6, 7).

Each attack is written into a REAL fixture log (the model path of seed logs 01 and 05, and the
root cause of 05's failed boots), ingested, and every output that shows it is checked: the
terminal text (list, show, diff, explain, history, watch, ingest, hook, errors; through a pipe
and on a pty) holds no raw control byte, the Markdown no live HTML, link or code span, the CSV
no formula, the HTML report no raw control.  Then the outputs that grew with the input are
bounded, and a container engine's malformed JSON is one line.
"""

from __future__ import annotations

import csv
import io
import json
import re
import time

import pytest
from click.testing import CliRunner

import markdown_util
from bootlog import safe
from bootlog.cli import cli
from paths import FIXTURES
from pty_util import on_a_tty

SEED = FIXTURES / "seed"
READY = SEED / "01-shape-d-fp8-200704x3.log"  # ready, TP=2
OTHER = SEED / "02-shape-e-precise-memory.log"  # ready, another config: the diff's other side
FAILED = SEED / "05-util-1.00-crash-loop.log"  # two boots failing with a ValueError
MODEL = b"/home/dank/models/Qwen3.8-Flash-Next-Uncensored-FP8"
CAUSE = b"Decrease GPU memory utilization"

ATTACKS = {
    "osc-title": "\x1b]0;pwned\x07",
    "osc8-link": "\x1b]8;;http://evil\x1b\\click\x1b]8;;\x1b\\",
    "csi-8bit": "\u009b31m\u009b2J",
    "cr": "\rOK ",
    "bs": "\b\b\b\bfine",
    "html": "<img src=x onerror=alert(1)>",
    "backticks": "`` ` ```x",
    "formula": '=HYPERLINK("http://evil","x")',
}
# what a terminal acts on: C0 but tab and newline, DEL, C1; and the bidi overrides
RAW = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def run(db, *args, input=None):
    return CliRunner().invoke(cli, ["--db", str(db), *args], input=input, catch_exceptions=False)


def hostile(src, attack: str, out, day: bytes | None = None) -> str:
    data = src.read_bytes().replace(MODEL, attack.encode() + b"Qwen3-8B")
    if day:  # started later than the crash loop (10-03): boots are ordered by their start
        data = data.replace(b"2026-10-02T", b"2026-10-" + day + b"T").replace(b" 10-02 ", b" 10-" + day + b" ")
    out.write_bytes(data.replace(CAUSE, attack.encode() + b" " + CAUSE))
    return str(out)


def no_raw(text: str) -> None:
    m = RAW.search(text)
    assert m is None, f"raw {m.group()!r} in: {text[max(0, m.start() - 60) : m.end() + 20]!r}"


@pytest.fixture(scope="module", params=list(ATTACKS))
def stored(request, tmp_path_factory):
    """A database: boots 1-2 failed (hostile model and root cause), 3 another config, 4 ready
    with the hostile model; `ingest` is the text the ingests printed."""
    attack = ATTACKS[request.param]
    tmp = tmp_path_factory.mktemp(request.param)
    db = tmp / "h.db"
    other = tmp / "other.log"
    other.write_bytes(OTHER.read_bytes().replace(b"2026-10-02T", b"2026-10-04T").replace(b" 10-02 ", b" 10-04 "))
    logs = [hostile(FAILED, attack, tmp / "failed.log"), str(other), hostile(READY, attack, tmp / "ready.log", b"05")]
    said = [run(db, "ingest", p) for p in logs]
    assert [r.exit_code for r in said] == [0, 0, 0]
    return {
        "attack": attack,
        "name": request.param,
        "db": db,
        "tmp": tmp,
        "ready": logs[2],
        "failed": logs[0],
        "ingest": "".join(r.output for r in said),
    }


TERMINAL = [
    ("list",),
    ("show", "4"),
    ("show", "1"),
    ("show", "1", "--lines"),
    ("diff",),
    ("diff", "1", "3"),
    ("explain", "last"),
    ("history", "--metric", "model,status,tokenizer"),
]


@pytest.mark.parametrize("args", TERMINAL, ids=lambda a: " ".join(a))
def test_terminal_text_holds_no_raw_control(stored, args):
    res = run(stored["db"], *args)
    assert res.exit_code in (0, 3, 4), res.output  # (4: boot 1 failed)
    no_raw(res.output)


def test_show_and_list_show_the_name_escaped_whole(stored):
    shown = safe.term(stored["attack"] + "Qwen3-8B", one_line=True)
    assert f"  model          {shown}\n" in run(stored["db"], "show", "4").output
    assert run(stored["db"], "list").output.splitlines()[4].endswith(shown)
    assert safe.term(stored["attack"], one_line=True) in run(stored["db"], "show", "1").output  # root cause


def test_ingest_explain_and_watch_lines_hold_no_raw_control(stored, tmp_path):
    no_raw(stored["ingest"])
    no_raw(run(stored["db"], "explain", stored["ready"]).output)
    res = run(tmp_path / "w.db", "watch", "--file", stored["failed"], "--once")
    assert res.exit_code == 4 and "boot_failed" in res.output  # (a failed boot: cron hears of it)
    no_raw(res.output)


def test_json_is_exact_and_holds_no_raw_c1(stored):
    out = run(stored["db"], "show", "4", "--json").output
    no_raw(out)  # (json.dumps escapes C0 itself; C1 and bidi are \\uXXXX too)
    assert json.loads(out)["boot"]["model"] == stored["attack"] + "Qwen3-8B"


def test_a_pty_gets_no_raw_control_either(stored):
    # on a TTY, as through a pipe: nothing is left raw because "it is a terminal"
    for args in (("show", "4"), ("list",), ("diff",)):
        code, shown = on_a_tty(["--db", str(stored["db"]), *args], timeout=30)
        assert code in (0, 3)
        no_raw(shown)


@pytest.mark.parametrize("pad", [55, 56, 57, 117, 118])
def test_a_cut_cell_never_ends_in_half_an_escape(tmp_path, pad):
    # cells are cut at 60 (diff values) and 120 (list's model): the cut falls inside `\x1b`
    db = tmp_path / "c.db"
    run(db, "ingest", str(OTHER))
    run(db, "ingest", hostile(READY, "a" * pad + "\x1b]0;t\x07\x1b]0;u\x07", tmp_path / "c.log"))
    for args in (("diff",), ("list",), ("diff", "--markdown")):
        out = run(db, *args).output
        no_raw(out)
        assert not re.search(r"\\x(?![0-9a-f]{2})", out.replace("\\\\x", "\\x")), out


def test_an_error_quoting_hostile_text_is_one_escaped_line(tmp_path):
    res = CliRunner().invoke(cli, ["explain", f"{tmp_path}/\x1b]0;x\x07\u009b2J\nnext.log"])
    assert res.exit_code == 1
    assert len(res.output.splitlines()) == 1 and "\\x1b]0;x\\x07\\x9b2J\\nnext.log" in res.output
    no_raw(res.output)


# ------------------------------------------------------------------------------ Markdown


def inert(md: str) -> list[str]:
    """Check a Markdown document renders (markdown-it-py) to bootlog's own structure only: no
    raw HTML, link, image or emphasis of log text; the texts a reader sees."""
    no_raw(md)
    return markdown_util.inert(md)


def test_diff_markdown_is_inert_and_says_what_the_log_said(stored):
    md = run(stored["db"], "diff", "--markdown").output
    seen = inert(md)
    value = json.loads(run(stored["db"], "show", "4", "--json").output)["config"]["model"]
    model = safe.cut(value, 60, "...")  # (a CR in the line: the config reads what follows it)
    assert any(model in s for s in seen), md
    assert any("model" == s.strip() for s in seen)  # the key: a code span


def test_hook_summary_markdown_and_text_are_inert(stored):
    from bootlog.run.hook import HookResult, render_markdown, render_text
    from bootlog.store.db import open_store
    from bootlog.store.reads import show_boot

    store = open_store(str(stored["db"]), create=False)
    try:
        show = show_boot(store, 1)
    finally:
        store.close()
    r = HookResult("vllm", "failed", 1, show, None, None, None, 1.0, 4, [f"note {stored['attack']}"])
    md = render_markdown(r)
    seen = inert(md)
    cause = safe.term(show["boot"]["failure_message"], one_line=True)
    assert cause in seen, md  # the root cause: one code span holding all of it
    text = render_text(r)
    no_raw(text)
    assert safe.term(stored["attack"], one_line=True) in text


# ------------------------------------------------------------------------------ CSV, HTML


def formula_free(text: str) -> list[str]:
    no_raw(text)
    cells = [c for row in csv.reader(io.StringIO(text)) for c in row]
    for c in cells:
        assert not c.startswith(("=", "+", "@", "\t", "\r")) or re.fullmatch(r"[+-]?[\d.]+(e[+-]?\d+)?", c), c
        assert not c.startswith("-") or re.fullmatch(r"-[\d.]+(e[+-]?\d+)?", c), c
    return cells


def test_csv_cells_are_never_formulas(stored, tmp_path):
    cells = formula_free(run(stored["db"], "history", "--csv", "--metric", "model,tokenizer").output)
    out = tmp_path / "boots.csv"
    assert run(stored["db"], "export", str(out), "--format", "csv").exit_code == 0
    for f in (out, tmp_path / "boots-events.csv"):
        cells += formula_free(f.read_text(encoding="utf-8"))
    if stored["name"] == "formula":
        assert "'" + ATTACKS["formula"] + "Qwen3-8B" in cells


def test_html_report_escapes_and_shows_controls(stored, tmp_path):
    out = tmp_path / "r.html"
    assert run(stored["db"], "report", "-o", str(out)).exit_code == 0
    page = out.read_text(encoding="utf-8")
    no_raw(page)
    assert "<img src=x" not in page and "Qwen3-8B" in page  # (the latest diff names the model)


# ------------------------------------------------------------------------------ bounded output


def test_explain_lists_at_most_50_unread_lines_and_counts_the_rest(tmp_path):
    odd = (
        b"2026-10-02T15:22:00.000000000Z (APIServer pid=1) INFO 10-02 08:22:00 [x.py:1] KV cache odd wording 5.00 GiB\n"
    )
    log = tmp_path / "odd.log"
    log.write_bytes(READY.read_bytes() + odd * 500)
    text = run(tmp_path / "x.db", "explain", str(log)).output
    # (+2: the fork's expert-plan lines, which only a plan's own pattern reads)
    assert "unread: 502 line(s)" in text and "  … and 452 more unread lines (--json lists the first 200)" in text
    assert sum(ln.startswith("  line ") for ln in text.splitlines()) == 50
    got = json.loads(run(tmp_path / "x.db", "explain", str(log), "--json").output)
    assert len(got["unmatched"]) == 200 and got["unmatched_more"] == 302


def test_ingest_prints_at_most_100_boot_lines_per_input(tmp_path, v1_start):
    log = tmp_path / "loop.log"
    log.write_text("".join("\n".join(v1_start(1000 + i, 5000 + i, i)) + "\n" for i in range(250)))
    res = run(tmp_path / "l.db", "ingest", str(log))
    lines = res.output.splitlines()
    assert res.exit_code == 0 and len(lines) == 101, lines[-3:]
    assert lines[-1] == f"… and 150 more boots in {log} (150 new): `bootlog list` shows them"
    assert len(json.loads(run(tmp_path / "l.db", "list", "--json").output)) == 250
    assert len(json.loads(run(tmp_path / "l.db", "ingest", str(log), "--json").output)) == 250  # (JSON: all)
    # explain and watch of the crash loop: 50 boots, then a count
    text = run(tmp_path / "x.db", "explain", str(log)).output
    assert sum(ln.startswith("boot  lines ") for ln in text.splitlines()) == 50
    assert "… and 200 more boots (--json lists them all)" in text
    lines = run(tmp_path / "w.db", "watch", "--file", str(log), "--once").output.splitlines()
    assert (
        len(lines) == 51
        and lines[-1] == f"- {log} boot #51-#250 boot_started: … and 200 more in this read (bootlog show/list)"
    )


def test_watch_prints_at_most_50_lines_of_a_kind_per_read(tmp_path):
    # a burst of faults in one boot
    oom = (
        "2026-10-02T16:22:00.000000000Z (APIServer pid=1) ERROR 10-02 09:22:00 [core.py:1] "  # (after READY ends: 15:57)
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate {}.00 GiB\n"
    )
    log = tmp_path / "faults.log"
    log.write_bytes(READY.read_bytes() + "".join(oom.format(i) for i in range(300)).encode())
    lines = run(tmp_path / "w.db", "watch", "--file", str(log), "--once").output.splitlines()
    assert sum(" oom line " in ln for ln in lines) == 50
    assert lines[-2] == f"- {log} boot #1 oom: … and 250 more in this read (bootlog show/list)"
    assert lines[-1] == f"{log} boot #1 DRIFT: oom while serving; the server went on"  # (watch --once's verdict)
    shown = json.loads(run(tmp_path / "w.db", "show", "1", "--json").output)
    assert sum(e["kind"] == "oom" for e in shown["events"]) == 300  # (all stored)


# ------------------------------------------------------------------------------ engine output


@pytest.fixture
def engine(tmp_path, monkeypatch):
    """A stand-in podman: `container inspect` prints inspect.out, `events` prints events.out."""
    script = tmp_path / "podman"
    script.write_text(
        f'#!/bin/sh\ncase "$1" in\n  container) cat {tmp_path}/inspect.out ;;\n'
        f"  events) cat {tmp_path}/events.out ;;\n  *) exit 125 ;;\nesac\n"
    )
    script.chmod(0o755)
    monkeypatch.setenv("BOOTLOG_PODMAN", str(script))
    monkeypatch.delenv("BOOTLOG_PODMAN_ARGS", raising=False)
    (tmp_path / "events.out").write_text("")
    return tmp_path


GOOD = {
    "Id": "abc",
    "State": {
        "Status": "running",
        "Running": True,
        "StartedAt": "2026-11-29T14:25:19.32Z",
        "FinishedAt": "0001-01-01T00:00:00Z",
        "ExitCode": 0,
    },
    "RestartCount": 0,
}


@pytest.mark.parametrize(
    "out",
    [
        "Error: not json at all",
        '{"Id": "abc"}',
        "[1, 2]",
        '[{"State": "running"}]',
        json.dumps([{**GOOD, "State": {**GOOD["State"], "Running": "false"}}]),
        json.dumps([{**GOOD, "State": {**GOOD["State"], "ExitCode": "0"}}]),
        json.dumps([{**GOOD, "RestartCount": "many"}]),
        '[{"RestartCount": Infinity}]',
        json.dumps([{**GOOD, "Config": ["x"]}]),
        "[" * 100_000 + "]" * 100_000,
    ],
    ids=[
        "text",
        "object",
        "numbers",
        "state-text",
        "running-text",
        "exitcode-text",
        "restarts-text",
        "restarts-inf",
        "config-list",
        "deep",
    ],
)
def test_malformed_inspect_output_is_one_line_and_exit_1(engine, out):
    (engine / "inspect.out").write_text(out)
    res = CliRunner().invoke(cli, ["--db", str(engine / "p.db"), "watch", "--container", "c", "--once"])
    assert res.exit_code == 1, res.output
    assert len(res.output.splitlines()) == 1 and "internal error" not in res.output
    assert res.output.startswith("bootlog: podman inspect c: unreadable output (")


@pytest.mark.parametrize(
    "line",
    [
        '{"Status": "init", "timeNano": ',
        '{"Status": ["init"]}',
        '{"Status": "init", "timeNano": "soon"}',
        '{"Status": "init", "timeNano": Infinity}',
        '{"Status": "init", "timeNano": {"n": 1}}',
    ],
)
def test_malformed_events_output_is_a_source_error(engine, line):
    from bootlog.read import podman
    from bootlog.errors import SourceError

    (engine / "events.out").write_text('{"Status": "start", "timeNano": 1}\n' + line + "\n")
    with pytest.raises(SourceError, match=r"^podman events c: unreadable output \(") as err:
        podman.events("c", since=0)
    assert "\n" not in str(err.value)


@pytest.mark.parametrize("fill", ["A", "A ", "a", "[", "(", "0", "=", ", ", "'"])
def test_a_long_run_in_a_catalogue_line_is_read_in_linear_time(fill):
    # the catalogue's own sample lines with 30,000 characters of one kind inserted before and
    # after the literal: a regex that scans to the run's end from each character of it takes
    # seconds there (two did: "[" before "torch.compile took" 2.2 s, "A" in a stats line 2.5 s,
    # and a fuzzed 859 KB stats line hung an ingest), a linear one milliseconds
    from bootlog.parse import patterns

    run = fill * (30_000 // len(fill))
    slowest = (0.0, "")
    for p in patterns.CATALOGUE:
        for line, _ in p.samples:
            at = line.find(p.literal)
            after = at + len(p.literal)
            for text in (line[:at] + run + line[at:], line[:after] + run + line[after:]):
                t0 = time.perf_counter()
                patterns.match(text)
                slowest = max(slowest, (time.perf_counter() - t0, p.id))
    assert slowest[0] < 0.5, slowest


def test_numbers_of_thousands_of_digits_are_read_around_not_an_internal_error(tmp_path):
    # Python reads no int of over 4,300 digits (ValueError); a corrupted or hostile log can hold
    # one anywhere: here the KV cache size (a catalogue figure: the ingest failed whole, "internal
    # error") and a config value (stored as text: show failed)
    data = READY.read_bytes()
    data = data.replace(b"KV cache size: 398,658 tokens", b"KV cache size: " + b"1" * 5000 + b" tokens", 1)
    data = re.sub(rb"'max_num_seqs': \d+", b"'max_num_seqs': " + b"7" * 5000, data, count=1)
    log = tmp_path / "digits.log"
    log.write_bytes(data)
    db = str(tmp_path / "d.db")
    runner = CliRunner()
    assert runner.invoke(cli, ["--db", db, "ingest", str(OTHER)]).exit_code == 0  # diff's other side
    for args in (
        ["ingest", str(log)],
        ["show", "2"],
        ["diff", "1", "2"],
        ["history"],
        ["export", "--format", "csv", str(tmp_path / "d.csv")],
    ):
        r = runner.invoke(cli, ["--db", db, *args])
        assert r.exit_code in (0, 3) and "internal error" not in r.output, (args, r.output[-300:])
    shown = json.loads(runner.invoke(cli, ["--db", db, "show", "2", "--json"]).output)
    assert shown["boot"]["status"] == "ready" and shown["config"]["max_num_seqs"] == "7" * 5000
    assert "kv_cache_tokens" not in {m["name"] for m in shown["metrics"]}  # not a number: not read


# ------------------------------------------------------------------------------ issue 31


def _backends():
    from pgutil import pg_base_url

    return ["sqlite"] + (["postgresql"] if pg_base_url() else [])


@pytest.fixture(params=_backends())
def any_db(request, tmp_path):
    if request.param == "sqlite":
        yield str(tmp_path / "s.db")
        return
    from pgutil import pg_base_url, pg_schema

    with pg_schema(pg_base_url()) as url:
        yield url


def test_a_lone_surrogate_is_stored_escaped_and_loses_nothing(any_db, tmp_path):
    # how Python prints a path holding a Latin-1 byte ('k\udcff'), as a value and as a nested
    # key: "internal error: UnicodeEncodeError ... surrogates not allowed" and NO boot of the
    # nohup.out stored (SQLite and PostgreSQL alike); nested, it was stored, and then
    # `export --format parquet` failed for the whole database
    data = (
        (FIXTURES / "014-v0.10.2-nohup-multiboot.log")
        .read_bytes()
        .replace(b"'port': 24001,", b"'port': 24001, 'chat_template': 'k\\udcff', 'extra': {'k\\udcff': 1},", 1)
    )
    log = tmp_path / "nohup.out"
    log.write_bytes(data)
    runner = CliRunner()
    r = runner.invoke(cli, ["--db", any_db, "ingest", str(log)])
    assert r.exit_code == 0, r.output
    assert [ln.split()[1] for ln in r.stdout.splitlines()] == ["failed", "ready"]
    shown = json.loads(runner.invoke(cli, ["--db", any_db, "show", "1", "--json"]).stdout)
    assert shown["config"]["chat_template"] == "k\\udcff"  # the escape Python printed, kept
    assert shown["config"]["extra"] == {"k\\udcff": 1}
    r = runner.invoke(cli, ["--db", any_db, "diff", "1", "2"])
    assert r.exit_code in (0, 3, 4) and "k\\udcff" in r.stdout and "internal error" not in r.output
    pytest.importorskip("pyarrow")
    r = runner.invoke(cli, ["--db", any_db, "export", "--format", "parquet", str(tmp_path / "b.parquet")])
    assert r.exit_code == 0, r.output


@pytest.mark.parametrize("stamp", ["9999-12-31T23:59:59.999999999-23:59", "0001-01-01T00:00:00+23:59"])
@pytest.mark.parametrize("envelope", ["podman_ts", "docker_json"])
def test_a_boot_stamped_at_the_edge_of_the_date_range_is_stored_and_shown(tmp_path, stamp, envelope):
    # the first stamps of a real podman -t log (and as docker json-file `time`) at the edge of
    # what a datetime holds: "internal error: OverflowError" in write.start_key (the boot's
    # place in time, in UTC), and the report's clock afterwards
    lines = READY.read_text().splitlines()
    # (every line: a clock going back by more than 2 s is another run appended, since issue 30)
    lines = [" ".join([stamp, ln.split(" ", 1)[1]]) for ln in lines]
    if envelope == "docker_json":
        lines = [
            json.dumps({"log": ln.split(" ", 1)[1] + "\n", "stream": "stdout", "time": ln.split(" ", 1)[0]})
            for ln in lines
        ]
    log = tmp_path / "edge.log"
    log.write_text("\n".join(lines) + "\n")
    db = str(tmp_path / "e.db")
    runner = CliRunner()
    for args in (
        ["ingest", str(log)],
        ["ingest", str(OTHER)],
        ["list"],
        ["show", "1"],
        ["diff", "1", "2"],
        ["history"],
        ["report", "-o", str(tmp_path / "r.html")],
        ["plot", "kv_cache_tokens", "-o", str(tmp_path / "p.png")],
    ):
        r = runner.invoke(cli, ["--db", db, *args])
        assert r.exit_code in (0, 3) and "internal error" not in r.output, (args, r.output[-300:])
    shown = json.loads(runner.invoke(cli, ["--db", db, "show", "1", "--json"]).stdout)
    assert shown["boot"]["started_at"].startswith(stamp[:19]) and shown["boot"]["status"] == "ready"


@pytest.mark.parametrize("depth", [500, 900])
def test_a_config_value_nested_hundreds_deep_poisons_no_command(tmp_path, depth):
    # `'x': [[[…]]]` in non-default args: ingested, then every diff/check/report touching the
    # boot was "internal error: RecursionError" (compare._norm walked the parsed value)
    data = READY.read_bytes()
    at = data.index(b"non-default args: {") + len(b"non-default args: {")
    data = data[:at] + b"'x': " + b"[" * depth + b"1" + b"]" * depth + b", " + data[at:]
    log = tmp_path / "deep.log"
    log.write_bytes(data)
    db = str(tmp_path / "d.db")
    runner = CliRunner()
    plan = FIXTURES.parent / "plans" / "frank-primary.toml"
    for args in (
        ["ingest", str(OTHER)],
        ["ingest", str(log)],
        ["diff", "1", "2"],
        ["diff", "last", "prev", "--json"],
        ["check", "2", "--plan", str(plan)],
        ["history", "--metric", "x"],
        ["report", "-o", str(tmp_path / "r.html")],
        ["show", "2", "--json"],
    ):
        r = runner.invoke(cli, ["--db", db, *args])
        assert r.exit_code in (0, 3, 4) and "internal error" not in r.output, (args, r.output[-300:])
    said = json.loads(runner.invoke(cli, ["--db", db, "diff", "1", "2", "--json"]).stdout)
    assert "x" in json.dumps(said)  # (a new key of boot 2: compared as text)


@pytest.mark.parametrize("shown", ["0x10x", "\uff11.\uff15x", "\u0663.\u0665x", "1_0x"])
def test_a_figure_is_read_only_as_ascii_decimal(tmp_path, shown):
    # "0x10x" was stored as max_concurrency 0; fullwidth "１.５x" and Arabic-Indic "٣.٥x" as 1.5
    # and 3.5 (int() and float() read them): vLLM prints ASCII decimal; read nothing rather
    # than a wrong value
    data = READY.read_bytes().replace(b"per request: 1.99x", b"per request: " + shown.encode(), 1)
    log = tmp_path / "n.log"
    log.write_bytes(data)
    db = str(tmp_path / "n.db")
    r = CliRunner().invoke(cli, ["--db", db, "ingest", str(log)])
    assert r.exit_code == 0, r.output
    shown_json = json.loads(CliRunner().invoke(cli, ["--db", db, "show", "1", "--json"]).stdout)
    got = {m["name"]: m["value"] for m in shown_json["metrics"]}
    assert "max_concurrency" not in got and got["kv_cache_tokens"] == 398658


USER_PATTERN = """
[metrics.arena_gib]
min = 1
[[pattern]]
name = "arena_gib"
regex = 'expert cache (?P<value>\\S+) GiB / '
literal = "expert cache "
samples = [{ line = "expert cache 14.87 GiB / 6,496 slots", value = 14.87 }]
"""


@pytest.mark.parametrize("value", ["1_4", "\uff11\uff14.87", "fourteen"])
def test_a_user_pattern_value_that_is_no_number_is_said_so(tmp_path, value):
    # a user pattern capturing "1_4" stored 14; one capturing text stored nothing, and check
    # then said "source no longer readable: it was read on host h1" for a file it could read
    data = READY.read_bytes().replace(b"expert cache 14.87 GiB", b"expert cache " + value.encode() + b" GiB")
    log = tmp_path / "u.log"
    log.write_bytes(data)
    plan = tmp_path / "p.toml"
    plan.write_text(USER_PATTERN)
    db = str(tmp_path / "u.db")
    runner = CliRunner()
    r = runner.invoke(cli, ["--db", db, "ingest", "--host", "h1", "--plan", str(plan), str(log)])
    assert r.exit_code == 0, r.output
    assert r.stderr.strip() == (
        f"bootlog: warning: {log}: [[pattern]] arena_gib matched line 185 (and 1 more), but "
        f"its value {safe.term(repr(value))} is not a number: no figure stored"
    )
    r = runner.invoke(cli, ["--db", db, "check", "1", "--plan", str(plan), "--json"])
    row = next(f for f in json.loads(r.stdout)["findings"] if f["key"] == "arena_gib")
    assert row["new"] is None and "matched line 185, but its value" in row["why"] and "not a number" in row["why"]
    assert "no longer readable" not in r.stdout


def test_export_json_and_openmetrics_escape_as_every_output_does(tmp_path):
    # --json escaped U+202E (and C1, line separators); `export --format json` and OpenMetrics
    # on stdout wrote it raw: one escaping rule (safe.py) for every output
    attack = "\u202egnp.exe\u2028\u009b2J"
    log = hostile(READY, attack, tmp_path / "r.log")
    db = str(tmp_path / "e.db")
    runner = CliRunner()
    assert runner.invoke(cli, ["--db", db, "ingest", log]).exit_code == 0
    out = tmp_path / "all.json"
    assert runner.invoke(cli, ["--db", db, "export", str(out)]).exit_code == 0
    text = out.read_text(encoding="utf-8")
    no_raw(text)
    assert json.loads(text)["boots"][0]["model"] == attack + "Qwen3-8B"  # (the exact text, as JSON reads it)
    om = runner.invoke(cli, ["--db", db, "export", "--format", "openmetrics"])
    assert om.exit_code == 0
    no_raw(om.stdout)
    assert 'model="\\\\u202egnp.exe\\\\u2028\\\\x9b2JQwen3-8B"' in om.stdout  # (shown as term() shows it)


def test_long_names_the_log_writes_are_stored_whole(any_db, tmp_path):
    # a 200-character config key and vLLM version: on PostgreSQL "database error: value too long
    # for type character varying(128)", the whole input lost (the columns had lengths SQLite
    # never enforced)
    key, version = "k" * 200, "0.10.2+" + "v" * 100
    data = (
        (FIXTURES / "012-v0.10.2-v1-small.log")
        .read_bytes()
        .replace(b"'port': 8001,", b"'port': 8001, '" + key.encode() + b"': 1,", 1)
        .replace(b"vLLM API server version 0.10.2", b"vLLM API server version " + version.encode(), 1)
    )
    log = tmp_path / "long.log"
    log.write_bytes(data)
    runner = CliRunner()
    r = runner.invoke(cli, ["--db", any_db, "ingest", str(log)])
    assert r.exit_code == 0 and "database error" not in r.output, r.output
    shown = json.loads(runner.invoke(cli, ["--db", any_db, "show", "last", "--json"]).stdout)
    assert shown["config"][key] == 1 and shown["boot"]["vllm_version"] == version
