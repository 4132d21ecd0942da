"""sources.py: files, gzip (by magic bytes), stdin, and `podman logs -t` through a fake podman."""

from __future__ import annotations

import gzip
import zlib
import io
import os
import stat
import sys
import time
from pathlib import Path

import pytest

from bootlog.errors import InputError, SourceError
from bootlog.read.sources import container_source, open_source

CORPUS = Path(__file__).resolve().parent.parent / "fixtures" / "logs"  # the corpus, copied
LOG = CORPUS / "057-rocm-rdna4-gfx12-tp2-v0.22.69-fork-boot.log"


def test_plain_file_streams_in_chunks(tmp_path):
    data = LOG.read_bytes()
    src = open_source(str(LOG))
    assert (src.kind, src.name, src.size) == ("file", str(LOG), len(data))
    assert src.mtime == pytest.approx(LOG.stat().st_mtime)
    chunks = list(src.chunks(size=4096))
    assert b"".join(chunks) == data
    assert max(len(c) for c in chunks) == 4096 and len(chunks) == -(-len(data) // 4096)
    assert b"".join(src.chunks(start=1000)) == data[1000:]


def test_gzip_is_detected_by_magic_not_extension(tmp_path):
    data = LOG.read_bytes()
    disguised = tmp_path / "vllm.log"  # gzip bytes, no .gz
    disguised.write_bytes(gzip.compress(data))
    src = open_source(str(disguised))
    assert src.kind == "gzip"
    assert b"".join(src.chunks(size=10_000)) == data
    assert b"".join(src.chunks(start=123)) == data[123:]
    fake = tmp_path / "plain.log.gz"  # a .gz name on plain text
    fake.write_bytes(data)
    assert open_source(str(fake)).kind == "file"


def test_truncated_gzip_ends_at_the_last_whole_line_before_the_cut(tmp_path):
    data = LOG.read_bytes() * 4
    gz = gzip.compress(data)
    p = tmp_path / "cut.log.gz"
    p.write_bytes(gz[: len(gz) // 2])
    src = open_source(str(p))  # opening is fine: the cut only shows while reading
    assert src.stopped is None
    got = b"".join(src.chunks(size=4096))
    assert src.stopped == "truncated gzip"
    whole = zlib.decompressobj(31).decompress(gz[: len(gz) // 2])  # all that the cut leaves
    assert got == whole[: whole.rfind(b"\n") + 1] and len(got) > 10_000  # its cut last line dropped


def test_corrupt_gzip_is_an_input_error(tmp_path):
    p = tmp_path / "bad.gz"
    p.write_bytes(b"\x1f\x8b\x08\x00" + b"\xff" * 200)
    with pytest.raises(InputError, match="gzip"):
        list(open_source(str(p)).chunks())


def test_missing_directory_and_empty(tmp_path):
    with pytest.raises(InputError) as e1:
        open_source(str(tmp_path / "nope.log"))
    assert str(e1.value) == f"no such file: {tmp_path / 'nope.log'}"
    with pytest.raises(InputError) as e2:
        open_source(str(tmp_path))
    assert str(e2.value) == f"is a directory: {tmp_path}"
    empty = tmp_path / "empty.log"
    empty.write_bytes(b"")
    src = open_source(str(empty))
    assert src.kind == "file" and src.size == 0 and list(src.chunks()) == []


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads files whatever their mode")
def test_unreadable_file(tmp_path):
    p = tmp_path / "secret.log"
    p.write_bytes(b"x\n")
    p.chmod(0)
    with pytest.raises(InputError, match="permission denied"):
        open_source(str(p))


class _Stdin:
    def __init__(self, data: bytes) -> None:
        self.buffer = io.BufferedReader(io.BytesIO(data))


def test_stdin_plain_and_gzip(monkeypatch):
    data = LOG.read_bytes()
    monkeypatch.setattr(sys, "stdin", _Stdin(data))
    src = open_source("-")
    assert (src.kind, src.name, src.mtime) == ("stdin", "-", None)
    assert b"".join(src.chunks(size=1000)) == data
    monkeypatch.setattr(sys, "stdin", _Stdin(gzip.compress(data)))
    assert b"".join(open_source("-").chunks()) == data


# ---------------------------------------------------------------- container_source


def _fake_podman(tmp_path: Path, body: str, monkeypatch=None) -> dict:
    """A `podman` on PATH that runs `body` (Python) and records its argv."""
    if monkeypatch is not None:  # real-podman tests export a private store for bootlog
        monkeypatch.delenv("BOOTLOG_PODMAN", raising=False)
        monkeypatch.delenv("BOOTLOG_PODMAN_ARGS", raising=False)
    script = tmp_path / "bin" / "podman"
    script.parent.mkdir(exist_ok=True)
    script.write_text(
        f"#!{sys.executable}\nimport sys, os, time\n"
        f"open({str(tmp_path / 'argv')!r}, 'w').write(' '.join(sys.argv[1:]))\n"
        "out, err = sys.stdout.buffer, sys.stderr.buffer\n" + body
    )
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return {"PATH": f"{script.parent}:{os.environ.get('PATH', '')}"}


def test_engine_missing_from_path(monkeypatch, tmp_path):
    monkeypatch.delenv("BOOTLOG_PODMAN", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(SourceError) as err:
        container_source("frank-primary-qwen")
    assert str(err.value) == "podman not found on PATH"


def test_no_such_container(monkeypatch, tmp_path):
    env = _fake_podman(tmp_path, "err.write(b'Error: no such container ghost\\n'); sys.exit(125)\n", monkeypatch)
    monkeypatch.setenv("PATH", env["PATH"])
    src = container_source("ghost")
    assert (src.kind, src.name) == ("container", "podman:ghost")
    with pytest.raises(SourceError) as err:
        list(src.chunks())
    assert str(err.value) == "no such container: ghost"
    assert (tmp_path / "argv").read_text() == "logs --timestamps ghost"


def test_other_podman_failure_carries_its_message(monkeypatch, tmp_path):
    # docs/podman.md: the 'none' log driver, exit 125
    msg = "Error: this container is using the 'none' log driver, cannot read logs: this container is not logging output"
    env = _fake_podman(tmp_path, f"err.write({msg!r}.encode() + b'\\n'); sys.exit(125)\n", monkeypatch)
    monkeypatch.setenv("PATH", env["PATH"])
    with pytest.raises(SourceError) as err:
        list(container_source("quiet").chunks())
    assert "'none' log driver" in str(err.value) and "Error: Error" not in str(err.value)


def test_merges_stdout_and_stderr_by_timestamp(monkeypatch, tmp_path):
    # docs/podman.md "run -d + logs -f -t on a slow printer": stdout and stderr as podman splits them
    body = (
        "out.write(b'2026-11-29T14:25:20.436989717Z tick 1\\n'); out.flush()\n"
        "out.write(b'2026-11-29T14:25:21.438088399Z tick 2\\n'); out.flush()\n"
        "err.write(b'2026-11-29T14:25:20.437102618Z err 1\\n'); err.flush()\n"
        "err.write(b'2026-11-29T14:25:21.438320845Z err 2\\n'); err.flush()\n"
        "out.write(b'2026-11-29T14:25:23.442154919Z bye'); out.flush()\n"
        "err.write(b'2026-11-29T14:25:23.5Z late err\\n'); err.flush()\n"
    )
    env = _fake_podman(tmp_path, body, monkeypatch)
    monkeypatch.setenv("PATH", env["PATH"])
    # the fake writes each stream in one go: the merge must order by stamp, not by arrival
    data = b"".join(container_source("slow", since="10m").chunks())
    assert (tmp_path / "argv").read_text() == "logs --timestamps --since 10m slow"
    assert data.split(b"\n") == [
        b"2026-11-29T14:25:20.436989717Z tick 1",
        b"2026-11-29T14:25:20.437102618Z err 1",
        b"2026-11-29T14:25:21.438088399Z tick 2",
        b"2026-11-29T14:25:21.438320845Z err 2",
        # the unterminated stdout line is ended instead of glued to the stderr record
        b"2026-11-29T14:25:23.442154919Z bye",
        b"2026-11-29T14:25:23.5Z late err",
        b"",
    ]


def test_merge_does_not_deadlock_when_one_stream_floods(monkeypatch, tmp_path):
    # 20,000 stderr records before the first stdout one: more than the pipe and queue hold
    body = (
        "for i in range(20000):\n"
        "    err.write(b'2026-11-29T14:00:00.%09dZ err %d\\n' % (i, i))\n"
        "err.flush()\n"
        "out.write(b'2026-11-29T14:00:01.000000000Z out last\\n')\n"
    )
    env = _fake_podman(tmp_path, body, monkeypatch)
    monkeypatch.setenv("PATH", env["PATH"])
    lines = b"".join(container_source("flood").chunks(size=65536)).splitlines()
    assert len(lines) == 20001
    assert lines[0].endswith(b" err 0") and lines[-1].endswith(b" out last")
    assert lines == sorted(lines)


def test_podman_warnings_on_stderr_are_not_log_lines(monkeypatch, tmp_path):
    body = (
        'err.write(b\'time="2026-11-29T14:00:00Z" level=warning msg="cgroupv1 is deprecated"\\n\')\n'
        "out.write(b'2026-11-29T14:25:20.436989717Z tick 1\\n')\n"
    )
    env = _fake_podman(tmp_path, body, monkeypatch)
    monkeypatch.setenv("PATH", env["PATH"])
    assert b"".join(container_source("w").chunks()) == b"2026-11-29T14:25:20.436989717Z tick 1\n"


def test_fifo_is_read_once_and_gzip_sniffed_on_the_fly(tmp_path):
    import threading

    data = LOG.read_bytes()
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)

    def feed():
        with open(fifo, "wb") as w:
            w.write(gzip.compress(data))

    t = threading.Thread(target=feed)
    t.start()
    src = open_source(str(fifo))
    assert src.size is None
    assert b"".join(src.chunks()) == data
    t.join()


def test_engine_binary_and_args_from_the_environment(monkeypatch, tmp_path):
    env = _fake_podman(tmp_path, "out.write(b'2026-11-29T14:25:20.436989717Z x\\n')\n", monkeypatch)
    monkeypatch.setenv("PATH", env["PATH"])
    monkeypatch.setenv("BOOTLOG_PODMAN_ARGS", "--root /tmp/r --runroot '/tmp/run root'")
    assert b"".join(container_source("c").chunks()) == b"2026-11-29T14:25:20.436989717Z x\n"
    assert (tmp_path / "argv").read_text() == "--root /tmp/r --runroot /tmp/run root logs --timestamps c"
    monkeypatch.setenv("BOOTLOG_PODMAN", "podman-remote-nowhere")
    with pytest.raises(SourceError, match=r"^podman \(podman-remote-nowhere\) not found on PATH$"):
        container_source("c")


# ---------------------------------------------------------------- real podman 4.3.1

from podman_util import Boot, wait_exit  # noqa: E402


def test_real_podman_logs_through_the_envelope(replayer):
    from bootlog.read.envelope import read as records
    from bootlog.read.scan import Lines, Search

    log = (CORPUS / "022-v0.13.0-oom-engine-failed.log").read_bytes()
    long_line = b"long:" + b"A" * 20000 + b":END\n"  # conmon: 8 KiB P records, each stamped
    first = Boot().out(log + long_line).err(b"to stderr\n").out(b"tail-no-newline").exit(1)
    second = Boot().out(b"boot two\n").exit(0)
    name = replayer.start([first, second], attach=True)
    replayer.restart(name)
    wait_exit(name)

    src = container_source(name)
    got = [r.text for r in records(src.chunks())]
    want = [r.text for r in records([log])] + ["long:" + "A" * 20000 + ":END", "tail-no-newline", "boot two"]
    assert got.count("to stderr") == 1
    assert [t for t in got if t != "to stderr"] == want  # joined P chains, split boot glue
    lits = ["KV cache", "Error", "out of memory", "Traceback (most recent call last)"]
    from bootlog.read.envelope import records as envelope_records

    def kept(recs):  # what the parser keeps: literal lines, the 5 after a traceback start
        out, owed = [], 0
        for r in recs:
            hit = r.hit if r.hit is not None else any(x in r.text for x in lits)
            if hit or owed > 0:
                out.append((r.lineno, r.text, r.ts))
            owed = 5 if "Traceback (most recent call last)" in r.text else max(owed - 1, 0)
        return out

    scanned = envelope_records(Lines(src.chunks(), "podman_ts", Search(lits), context=5), "podman_ts")
    assert kept(scanned) == kept(records(src.chunks()))


def test_real_podman_partial_line_in_a_full_read_before_a_restart(replayer):
    # measured: conmon read the end of the 20 KB line and "tail-no-newline" in ONE read
    # (5.7 KB under one stamp), so only the restart's pause tells the glue apart
    from bootlog.read.envelope import read as records

    log = (CORPUS / "022-v0.13.0-oom-engine-failed.log").read_bytes()
    first = Boot().out(log + b"long:" + b"A" * 20000 + b":END\n").out(b"tail-no-newline").exit(0)
    name = replayer.start([first, Boot().out(b"boot two\n").exit(0)], attach=True)
    replayer.restart(name)
    wait_exit(name)
    got = [r.text for r in records(container_source(name).chunks())]
    assert got[-3:] == ["long:" + "A" * 20000 + ":END", "tail-no-newline", "boot two"]
    assert got[:-3] == [r.text for r in records([log])]


def test_a_fifo_with_no_writer_is_one_line_not_a_hang(tmp_path, monkeypatch):
    # `bootlog ingest FIFO` with nobody writing it waited in open() forever
    from bootlog.read import sources
    from bootlog.errors import InputError

    monkeypatch.setattr(sources, "FIFO_WAIT_S", 0.3, raising=False)
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    t0 = time.monotonic()
    with pytest.raises(InputError) as info:
        b"".join(open_source(str(fifo)).chunks())
    assert time.monotonic() - t0 < 2
    assert str(info.value) == (
        f"{fifo} is a FIFO that no program writes (none came in 0.3 s): start its "
        "writer first, or pipe it: PROGRAM | bootlog ingest -"
    )


def test_a_fifo_whose_writer_comes_late_is_read_whole(tmp_path, monkeypatch):
    import threading

    from bootlog.read import sources

    monkeypatch.setattr(sources, "FIFO_WAIT_S", 5)
    data = LOG.read_bytes()
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)

    def feed():
        time.sleep(0.3)  # (after the reader opened it)
        with open(fifo, "wb") as w:
            w.write(data[:100])
            w.flush()
            time.sleep(0.2)  # (a writer that pauses: EAGAIN, then more)
            w.write(data[100:])

    t = threading.Thread(target=feed)
    t.start()
    assert b"".join(open_source(str(fifo)).chunks()) == data
    t.join()
