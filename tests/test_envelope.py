"""envelope.py on the verbatim podman.md samples (tests/data/envelope, see make_samples.py),
on every corpus log, and on corpus logs re-wrapped the way conmon / docker / compose write them."""

from __future__ import annotations

import json
import random
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from bootlog.read.envelope import clean, detect, read

DATA = Path(__file__).parent / "data" / "envelope"
CORPUS = sorted((Path(__file__).resolve().parent.parent / "fixtures" / "logs").glob("*.log"))  # the corpus, copied
LONG = "long:" + "A" * 20000 + ":END"
UTC = timezone.utc


def recs(name: str, fmt: str | None = None, chunk: int = 4096):
    data = (DATA / name).read_bytes()
    return list(read([data[i : i + chunk] for i in range(0, len(data), chunk)], fmt))


def ts(s: str) -> datetime:
    return datetime.fromisoformat(s).astimezone(UTC)


# ---------------------------------------------------------------- detection


@pytest.mark.parametrize(
    "name,fmt",
    [
        ("k8s_mix_run2.log", "cri"),
        ("k8s_restarts.log", "cri"),
        ("k8s_tty.log", "cri"),
        ("podman_t_mix_run2.stdout", "podman_ts"),
        ("podman_t_restarts_2to1.log", "podman_ts"),
        ("docker_mix.json.log", "docker_json"),
        ("journal.json.log", "journal_json"),
    ],
)
def test_detect_samples(name, fmt):
    assert detect((DATA / name).read_bytes()[:65536]) == fmt


@pytest.mark.parametrize("path", CORPUS, ids=lambda p: p.name[:3])
def test_corpus_logs_are_plain_and_every_line_is_a_record(path):
    data = path.read_bytes()
    assert detect(data[:65536]) == "plain"
    got = list(read([data[i : i + 65536] for i in range(0, len(data), 65536)]))
    lines = data.split(b"\n")
    if lines[-1] == b"":
        lines.pop()
    assert [r.lineno for r in got] == list(range(1, len(lines) + 1))
    assert [r.text for r in got] == [clean(x) for x in lines]
    assert all("\x1b" not in r.text and not r.text.endswith("\r") and r.ts is None for r in got)


def test_ansi_crlf_and_tqdm_carriage_returns():
    ansi = next(p for p in CORPUS if p.name.startswith("019"))
    raw_first = ansi.read_bytes().split(b"\n")
    assert any(b"\x1b[" in x for x in raw_first)
    crlf = next(p for p in CORPUS if p.name.startswith("031"))
    got = list(read([crlf.read_bytes()]))
    assert got[0].text == "(APIServer pid=103793) INFO 03-08 20:37:09 [utils.py:287] "
    # a tqdm bar keeps its inner \r (corpus line numbers count \n only); only the last goes
    data = b"Loading: 0%\rLoading: 50%\rLoading: 100%\r\nnext\r\n"
    assert [r.text for r in read([data])] == ["Loading: 0%\rLoading: 50%\rLoading: 100%", "next"]


# ---------------------------------------------------------------- raw k8s-file / CRI


def test_cri_mixed_sample_joins_partials_per_stream():
    got = recs("k8s_mix_run2.log")
    assert [(r.lineno, r.stream) for r in got] == [
        (1, "stdout"),
        (2, "stdout"),
        (3, "stdout"),
        (4, "stdout"),
        (5, "stdout"),
        (6, "stdout"),
        (8, "stderr"),
        (10, "stdout"),
        (11, "stdout"),
    ]
    texts = [r.text for r in got]
    assert texts[:3] == ["first stdout line", "tab\there  two spaces  ", ""]
    assert texts[3] == "non-utf8: \ufffd\ufffd caf\ufffd end"
    assert texts[4] == "crlf line"
    assert texts[5] == LONG  # P 8117 + P 8192 (stderr record between) + F 3700
    assert texts[6:] == ["to stderr", "last line without newline", "after stderr"]
    assert got[5].ts == ts("2026-11-29T14:25:19.320146+00:00")  # first piece's time
    assert got[6].ts == ts("2026-11-29T14:25:19.320297+00:00")


def test_cri_earlier_run_with_short_first_read_and_empty_f():
    got = recs("k8s_mix_run1.log")
    assert [r.text for r in got][5:] == [LONG, "last line without newline", "after stderr", "to stderr"]
    assert [r.lineno for r in got][5:] == [6, 9, 11, 12]


def test_cri_restarts_split_a_boots_trailing_partial_line():
    got = recs("k8s_restarts.log")
    assert [(r.lineno, r.text, r.stream) for r in got] == [
        (1, "boot up 773.45 466.66", "stdout"),
        (2, "tail-no-newline", "stdout"),
        (3, "boot err", "stderr"),
        (4, "boot up 775.36 466.70", "stdout"),
        (5, "tail-no-newline", "stdout"),
        (6, "boot err", "stderr"),
        (7, "boot up 777.23 466.72", "stdout"),
        (8, "tail-no-newline", "stdout"),
        (9, "boot err", "stderr"),
    ]
    assert got[3].ts == ts("2026-11-29T14:25:27.019282+00:00")


def test_cri_final_partial_and_tty():
    slow = recs("k8s_slow.log")
    assert [r.text for r in slow] == ["tick 1", "err 1", "tick 2", "err 2", "tick 3", "err 3", "bye"]
    assert [r.stream for r in slow[:2]] == ["stdout", "stderr"]
    tty = recs("k8s_tty.log")
    assert [(r.text, r.stream) for r in tty] == [("tty out", "stdout"), ("tty err", "stdout")]


# ---------------------------------------------------------------- podman logs --timestamps


def test_podman_t_joins_continuations_inside_a_line():
    got = recs("podman_t_mix_run2.stdout")
    assert [r.text for r in got] == [
        "first stdout line",
        "tab\there  two spaces  ",
        "",
        "non-utf8: \ufffd\ufffd caf\ufffd end",
        "crlf line",
        LONG,
        "last line without newline",
        "after stderr",
    ]
    assert [r.lineno for r in got] == list(range(1, 9))
    assert got[5].ts == ts("2026-11-29T14:25:19.320146+00:00") and got[5].stream is None
    assert [r.text for r in recs("podman_t_mix_run2.stderr")] == ["to stderr"]


def test_podman_t_2to1_earlier_run():
    # "…last line without newline<TS> " : an F that only carries the newline is a continuation
    got = recs("podman_t_mix_run1_2to1.log")
    assert [r.text for r in got][5:] == [LONG, "last line without newline", "after stderr", "to stderr"]


def test_podman_t_restarts_verbatim_2to1_splits_glued_records():
    got = recs("podman_t_restarts_2to1.log")
    assert [(r.lineno, r.text) for r in got] == [
        (1, "boot up 773.45 466.66"),
        (2, "tail-no-newline"),
        (2, "boot err"),
        (3, "boot up 775.36 466.70"),
        (4, "tail-no-newline"),
        (4, "boot err"),
        (5, "boot up 777.23 466.72"),
        (6, "tail-no-newline"),
        (6, "boot err"),
    ]
    assert got[2].ts == ts("2026-11-29T14:25:25.111315+00:00")


def test_podman_t_restarts_stdout_only():
    got = recs("podman_t_restarts.stdout")
    assert [r.text for r in got] == [
        "boot up 773.45 466.66",
        "tail-no-newline",
        "boot up 775.36 466.70",
        "tail-no-newline",
        "boot up 777.23 466.72",
        "tail-no-newline",
    ]
    assert got[2].ts == ts("2026-11-29T14:25:27.019282+00:00")


def test_podman_t_dates_inside_messages_stay_text():
    data = (
        b"2026-11-29T14:25:19.320146538Z cache from 2024-01-01T00:00:00Z is stale\n"
        b"2026-11-29T14:25:19.320146538Z next\n"
    )
    assert [r.text for r in read([data])] == ["cache from 2024-01-01T00:00:00Z is stale", "next"]


# ---------------------------------------------------------------- docker, journald, compose


def test_docker_json_file():
    got = recs("docker_mix.json.log")
    texts = [r.text for r in got]
    assert texts[5] == LONG and got[5].lineno == 6 and got[5].stream == "stdout"
    assert (texts[6], got[6].stream, got[6].lineno) == ("to stderr", "stderr", 7)
    assert got[6].ts == ts("2026-11-29T14:25:19.320297+00:00")  # 7-digit fraction
    assert texts[7] == ("(APIServer pid=1) INFO 11-29 14:25:20 [api_server.py:1] vLLM API server version 0.22.69")
    assert texts[4] == "crlf line"


def test_journald_json():
    got = recs("journal.json.log")
    assert [(r.text, r.stream) for r in got] == [
        ("hello journald", "stdout"),
        ("journald err", "stderr"),
        ("non-utf8: \ufffd\ufffd caf\ufffd end", "stdout"),
        (LONG, "stdout"),
        ("no nl", "stdout"),
    ]
    assert got[0].ts == ts("2026-11-29T14:18:47.216224+00:00")
    assert [r.lineno for r in got] == [1, 2, 3, 4, 6]


def test_compose_prefixes_are_removed():
    src = next(p for p in CORPUS if p.name.startswith("057")).read_bytes()
    lines = src.split(b"\n")[:-1]
    wrapped = b"".join(b"\x1b[36mfrank-primary-qwen-1  |\x1b[0m " + x + b"\n" for x in lines)
    assert detect(wrapped[:65536]) == "compose"
    assert [r.text for r in read([wrapped])] == [r.text for r in read([src])]
    # podman-compose style "[name] | msg" with compose logs -t time after the bar
    data = b"[vllm] | 2026-11-29T14:25:19.320146538Z INFO a\n[vllm] | INFO b\n[vllm] | c\n"
    got = list(read([data]))
    assert [r.text for r in got] == ["INFO a", "INFO b", "c"]
    assert got[0].ts == ts("2026-11-29T14:25:19.320146+00:00") and got[1].ts is None


def test_a_few_bar_lines_do_not_make_compose():
    data = b"INFO 11-29 start\nLoading | 1/2\nshards | 2/2\nINFO done\nINFO more\n"
    assert detect(data) == "plain"


# ---------------------------------------------------------------- real logs, re-wrapped


def _conmon(lines: list[bytes], rng: random.Random, t0: datetime, final_nl: bool = True):
    """Simulate conmon writing one stream: the program writes whole lines in bursts, conmon
    read()s at most 8192 bytes at a time and stamps each read; a read ending mid-line gives a
    P record. Yields (time, tag, msg)."""
    stream = b"\n".join(lines) + (b"\n" if final_nl else b"")
    pos, t = 0, t0
    while pos < len(stream):
        burst_end = min(len(stream), pos + rng.choice([50, 400, 3000, 20000, 70000]))
        nl = stream.find(b"\n", burst_end - 1)
        burst_end = len(stream) if nl < 0 else nl + 1
        t += timedelta(milliseconds=rng.choice([5, 80, 900]))
        while pos < burst_end:
            data = stream[pos : min(pos + 8192, burst_end)]
            pos += len(data)
            t += timedelta(microseconds=rng.randint(3, 40))
            parts = data.split(b"\n")
            for p in parts[:-1]:
                yield t, b"F", p
            if parts[-1]:
                yield t, b"P", parts[-1]


def _stamp(t: datetime, z: bool) -> bytes:
    s = t.strftime("%Y-%m-%dT%H:%M:%S.%f") + "123"
    return (s + ("Z" if z else "+00:00")).encode()


@pytest.mark.parametrize("path", CORPUS[::4], ids=lambda p: p.name[:3])
def test_corpus_through_conmon_cri_and_podman_t(path):
    data = path.read_bytes()
    lines = data.split(b"\n")
    final_nl = lines[-1] == b""
    if final_nl:
        lines.pop()
    want = [clean(x) for x in lines]
    rng = random.Random(path.name)
    t0 = datetime(2026, 11, 29, 14, 0, tzinfo=UTC)
    out = list(_conmon(lines, rng, t0, final_nl))
    err_lines = [b"Traceback (most recent call last):", b"  boom", b"RuntimeError: x"] * 3
    err = list(_conmon(err_lines, rng, t0 + timedelta(microseconds=7)))
    merged = sorted(
        [(t, 0, i, b"stdout", tag, m) for i, (t, tag, m) in enumerate(out)]
        + [(t, 1, i, b"stderr", tag, m) for i, (t, tag, m) in enumerate(err)]
    )
    cri = b"".join(_stamp(t, False) + b" " + s + b" " + tag + b" " + m + b"\n" for t, _, _, s, tag, m in merged)
    got = list(read([cri[i : i + 65536] for i in range(0, len(cri), 65536)]))
    assert [r.text for r in got if r.stream == "stdout"] == want
    assert [r.text for r in got if r.stream == "stderr"] == [x.decode() for x in err_lines]
    assert [r.lineno for r in got] == sorted(r.lineno for r in got)

    podman_t = b"".join(_stamp(t, True) + b" " + m + (b"\n" if tag == b"F" else b"") for t, tag, m in out)
    got_t = list(read([podman_t]))
    assert detect(podman_t[:65536]) == "podman_ts"
    assert [r.text for r in got_t] == want
    assert all(r.ts is not None for r in got_t)


@pytest.mark.parametrize("path", CORPUS[1::6], ids=lambda p: p.name[:3])
def test_corpus_through_docker_json_file(path):
    text = path.read_bytes().decode("utf-8", "replace")
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
    rows = []
    for i, line in enumerate(lines):
        pieces = [line[k : k + 16384] for k in range(0, len(line), 16384)] or [""]
        for k, p in enumerate(pieces):
            last = k == len(pieces) - 1
            rows.append(
                json.dumps(
                    {"log": p + ("\n" if last else ""), "stream": "stdout", "time": f"2026-11-29T14:00:{i % 60:02d}.5Z"}
                )
            )
    blob = ("\n".join(rows) + "\n").encode()
    assert detect(blob[:65536]) == "docker_json"
    assert [r.text for r in read([blob])] == [clean(x.encode()) for x in lines]


# ---------------------------------------------------------------- bad inputs


def test_binary_garbage_and_nul_bytes():
    rng = random.Random(7)
    garbage = rng.randbytes(1 << 20)
    got = list(read([garbage[i : i + 10000] for i in range(0, len(garbage), 10000)]))
    assert len(got) == garbage.count(b"\n") + (0 if garbage.endswith(b"\n") else 1)
    assert all("\x00" not in r.text for r in got)
    # logrotate copytruncate leaves NUL runs before the next line
    assert [r.text for r in read([b"\x00" * 5000 + b"INFO ok\n"])] == ["INFO ok"]


def test_ten_megabyte_line_in_small_chunks():
    # a line past sources.LINE_MAX (1 MiB) is cut there: memory stays bounded, the lines after it stay
    big = b"x" * (10 << 20)
    data = b"INFO first\n" + big + b"\nINFO last"
    got = list(read([data[i : i + 65536] for i in range(0, len(data), 65536)]))
    assert [(r.lineno, len(r.text)) for r in got] == [(1, 10), (2, 1 << 20), (3, 9)]
    tsd = b"2026-11-29T14:25:19.320146538Z " + big + b"\n"
    assert len(next(read([tsd])).text) == (1 << 20) - 31


def test_non_utf8_empty_input_final_line_and_chunk_boundaries():
    assert list(read([])) == [] and list(read([b""])) == []
    data = b"caf\xe9\r\n\xff\xfeok\nlast-no-newline"
    want = ["caf\ufffd", "\ufffd\ufffdok", "last-no-newline"]
    for size in (1, 2, 3, 7, 100):
        got = list(read([data[i : i + size] for i in range(0, len(data), size)]))
        assert [r.text for r in got] == want and [r.lineno for r in got] == [1, 2, 3]
    assert [r.lineno for r in read([data], start_line=41)] == [41, 42, 43]


def test_unknown_format_is_a_programming_error():
    with pytest.raises(ValueError):
        list(read([b"x\n"], "syslog"))


def test_a_pause_after_a_full_read_still_ends_the_partial_line():
    # as measured on podman 4.3.1: the long line's last piece and a dying boot's unterminated
    # tail came in one 5.7 KB read; the next boot's first record only after the restart
    t1, t2 = "2026-11-29T16:22:17.426893139", "2026-11-29T16:22:17.632216088"
    tail = b"A" * 5664
    cri = (
        f"{t1}+00:00 stdout F ".encode()
        + tail
        + b"\n"
        + f"{t1}+00:00 stdout P tail-no-newline\n".encode()
        + f"{t2}+00:00 stdout F boot two\n".encode()
    )
    assert [r.text for r in read([cri])] == ["A" * 5664, "tail-no-newline", "boot two"]
    podman_t = f"{t1}Z ".encode() + tail + b"\n" + f"{t1}Z tail-no-newline{t2}Z boot two\n".encode()
    assert [r.text for r in read([podman_t])] == ["A" * 5664, "tail-no-newline", "boot two"]
    # the same bytes 40 µs apart are one line still being written
    quick = podman_t.replace(t2.encode(), b"2026-11-29T16:22:17.426933139")
    assert [r.text for r in read([quick])] == ["A" * 5664, "tail-no-newlineboot two"]


def test_journalctl_text_output():
    src = next(p for p in CORPUS if p.name.startswith("057")).read_bytes().split(b"\n")[:60]
    want = [clean(x) for x in src]
    short = recs("journalctl_short.log")
    assert detect((DATA / "journalctl_short.log").read_bytes()) == "journal_short"
    assert short[0].text.startswith("-- Journal begins at") and short[0].ts is None
    assert [r.text for r in short[1:]] == want and all(r.ts is None for r in short)  # no year
    iso = recs("journalctl_short_iso.log")
    assert detect((DATA / "journalctl_short_iso.log").read_bytes()) == "journal_short"
    assert [r.text for r in iso] == want
    assert iso[3].ts == ts("2026-11-29T14:25:03+00:00")
    # podman -t lines whose message happens to hold "word word: " stay podman_ts
    assert (
        detect(
            b"2026-11-29T14:25:19.320146538Z Error executing: x\n"
            b"2026-11-29T14:25:19.320146538Z INFO 11-29 14:25:19 [a.py:1] ok\n"
            b"2026-11-29T14:25:19.320146538Z (APIServer pid=1) INFO 11-29 x\n"
        )
        == "podman_ts"
    )


def test_utf8_bom_is_not_text():
    assert [r.text for r in read([b"\xef\xbb\xbfINFO 11-29 first\r\nINFO second\n"])] == [
        "INFO 11-29 first",
        "INFO second",
    ]


def test_a_stamp_with_an_odd_digit_is_no_time_not_an_error():
    """isdigit() takes "²" and "١", which int() reads or not: parse_ts reads ASCII digits only."""
    from bootlog.read import envelope as env

    for text in ("2024-02-29T23:59:59.²23456789Z", "2024-02-29T23:59:59.1²3+01:00", "2024-02-29T23:59:59.١Z"):
        assert env.parse_ts(text) is None


def test_journal_records_without_message_text_are_warned_about(capsys):
    # journalctl -o json writes "MESSAGE": null for a field of 4 KiB or more (without --all):
    # the line is lost, and the operator is told how to export it whole
    rows = [
        {"__REALTIME_TIMESTAMP": "1758866982000000", "MESSAGE": "INFO 09-26 05:49:42 [x.py:1] a"},
        {"__REALTIME_TIMESTAMP": "1758866982001000", "MESSAGE": None},
        {"__REALTIME_TIMESTAMP": "1758866982002000", "MESSAGE": "INFO 09-26 05:49:43 [x.py:1] b"},
    ]
    data = "\n".join(json.dumps(r) for r in rows).encode() + b"\n"
    got = list(read([data], "journal_json"))
    assert [r.text for r in got] == ["INFO 09-26 05:49:42 [x.py:1] a", "", "INFO 09-26 05:49:43 [x.py:1] b"]
    err = capsys.readouterr().err
    assert "1 journal record(s) have no MESSAGE text" in err and "--all" in err
    list(read([data.replace(b"null", b'"c"')], "journal_json"))
    assert capsys.readouterr().err == ""


def test_a_byte_order_mark_before_an_envelope_hides_nothing(tmp_path):
    # a file saved by a Windows tool: the BOM must not turn a podman -t log into a plain one
    from bootlog.run.ingest import parse_source
    from bootlog.read.sources import open_source

    src = next(p for p in CORPUS if p.name.startswith("012")).read_bytes().split(b"\n")[:-1]
    stamped = b"".join(b"2026-09-26T05:49:%02d.%09dZ " % (i % 60, i) + x + b"\n" for i, x in enumerate(src))
    plain, bom = tmp_path / "p.log", tmp_path / "bom.log"
    plain.write_bytes(stamped)
    bom.write_bytes(b"\xef\xbb\xbf" + stamped)
    want, got = parse_source(open_source(str(plain))), parse_source(open_source(str(bom)))
    assert [(b.status, b.first_line, b.last_line, b.started_at, b.ready_at) for b in got] == [
        (b.status, b.first_line, b.last_line, b.started_at, b.ready_at) for b in want
    ]
    assert [(m.name, m.value) for m in got[0].metrics] == [(m.name, m.value) for m in want[0].metrics]
    assert got[0].started_at.tzinfo is not None


def test_journal_pieces_given_as_bytes_join_before_they_are_decoded():
    # conmon splits a long line at a byte offset, inside a multibyte character: journald keeps
    # each piece as a byte array; the line must come back whole, not with two U+FFFD
    line = "INFO 09-26 05:49:46 [utils.py:233] non-default args: {'served_model_name': ['café-×-model']}"
    raw = line.encode()
    cut = raw.index("×".encode()) + 1
    rows = [
        {"__REALTIME_TIMESTAMP": "1758866986000000", "MESSAGE": list(raw[:cut]), "CONTAINER_PARTIAL_MESSAGE": "true"},
        {"__REALTIME_TIMESTAMP": "1758866986000001", "MESSAGE": list(raw[cut:]) + [10]},
        {"__REALTIME_TIMESTAMP": "1758866986000002", "MESSAGE": list(b"bad \xff byte")},
    ]
    data = "\n".join(json.dumps(r) for r in rows).encode() + b"\n"
    assert [r.text for r in read([data], "journal_json")] == [line, "bad \ufffd byte"]


def test_a_lone_surrogate_escaped_in_journal_json_is_a_replacement_character():
    # "\ud83d" (half of an emoji that a writer cut) is valid JSON but no UTF-8: U+FFFD, no error
    rows = [
        {"__REALTIME_TIMESTAMP": "1758866986000000", "MESSAGE": "\ud83d x INFO 09-26 05:49:46 [a.py:1] y"},
        {"__REALTIME_TIMESTAMP": "1758866986000001", "MESSAGE": "b\udcff", "CONTAINER_PARTIAL_MESSAGE": "true"},
        {"__REALTIME_TIMESTAMP": "1758866986000002", "MESSAGE": "c"},
    ]
    data = "\n".join(json.dumps(r) for r in rows).encode() + b"\n"
    assert [r.text for r in read([data], "journal_json")] == ["\ufffd x INFO 09-26 05:49:46 [a.py:1] y", "b\ufffdc"]


def test_a_byte_order_mark_counts_among_the_bytes_a_limited_read_takes(tmp_path):
    from bootlog.run.ingest import read_records
    from bootlog.read.sources import open_source

    src = next(p for p in CORPUS if p.name.startswith("012")).read_bytes()
    path = tmp_path / "bom.log"
    path.write_bytes(b"\xef\xbb\xbf" + src)
    first40 = src.split(b"\n")[:40]
    limit = 3 + sum(len(x) + 1 for x in first40)
    recs, _ = read_records(open_source(str(path)), every=True, limit=limit)
    got = list(recs)
    assert got[-1].lineno == 40 and got[-1].text == clean(first40[-1])


def test_an_impossible_offset_or_a_deeply_nested_line_is_no_crash(tmp_path):
    from bootlog.read.envelope import parse_ts

    assert parse_ts("2026-11-29T14:25:19.320146538+99:00") is None  # timezone() refuses >= 24 h
    assert parse_ts("2026-11-29T14:25:19.320146538-07:00").utcoffset().total_seconds() == -7 * 3600
    # a JSON-looking head nested deeper than the parser recurses: a plain log after all
    data = (
        b"[" * 200_000
        + b"\n"
        + (Path(__file__).parent.parent / "fixtures" / "logs" / "014-v0.10.2-nohup-multiboot.log").read_bytes()
    )
    assert detect(data) == "plain"
