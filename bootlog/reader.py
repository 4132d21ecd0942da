"""Read a big log in a second process, so reading and parsing run on two cores at once.

Scanning a log (read, the literal search, decoding the candidate lines) and parsing them into
boots take about the same time, one after the other on one core.  For a big source, ingest forks
a reader: the child runs the same record reader (ingest.read_records) and sends the Records back
through a pipe, block by block, while the parent parses the ones that arrived.  The Records are
the ones the reader makes in process, in the same order (the child *is* that reader), so the
boots are identical; tests/test_reader.py checks it on every fixture.

What the child cannot send (it died, the pipe broke) is an error, never a silently shorter log.
"""
from __future__ import annotations

import os
import struct
import sys
from array import array

TYPE_CHECKING = False
if TYPE_CHECKING:  # (typing for the annotations only: importing it costs ~5 ms of every start)
    from typing import Callable, Iterable, Iterator

from bootlog.errors import InputError
from bootlog.records import LineBatch, Record

_BATCH = 4096  # records per message
_HEAD = struct.Struct("<Q")


class Finished:
    """What the reader knew at its end (the in-process Scanner's attributes ingest reads)."""

    lines_seen: int | None = None
    format: str | None = None
    peak_rss_kib: int = 0  # the reader process's own peak resident memory
    pid: int = 0  # the reader process (reaped when the records end or are abandoned)


# the highest reader peak of this process (bench/run.py adds it to the ingest's own peak: GNU
# time reports the larger of the two, and both are resident at once)
last_peak_rss_kib = 0


def _send(out, obj) -> None:
    import pickle  # (here: ingest imports this module for every file, most of them small)

    data = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    out.write(_HEAD.pack(len(data)))
    out.write(data)


def _read_exact(fd: int, n: int) -> bytes:
    parts, got = [], 0
    while got < n:
        b = os.read(fd, min(n - got, 1 << 20))
        if not b:
            break
        parts.append(b)
        got += len(b)
    return b"".join(parts)


def _child(w: int, make: Callable[[], tuple[Iterable[Record], object]]) -> None:
    """Runs in the forked reader; never returns."""
    code = 0
    import gc

    gc.disable()  # (this process makes no reference cycles and ends with os._exit)
    try:
        out = os.fdopen(w, "wb", buffering=1 << 20)
        try:
            recs, scanner = make()
            batch: list = []
            add = batch.append
            # a plain log's lines come as (lineno, bytes) (read_records(raw=True)) and go as one
            # array of line numbers and one blob of the lines: pickling a tuple and a str per
            # line, and unpickling them, cost both processes more than the parse of most lines
            nums = array("q")
            blob: list[bytes] = []

            def flush() -> None:
                """Send what waits, in order: only one kind ever waits (the other is sent
                before a record of this kind is added)."""
                if blob:
                    _send(out, ("lines", nums.tobytes(), b"\n".join(blob)))
                    del nums[:]
                    blob.clear()
                if batch:
                    _send(out, ("recs", batch))
                    batch.clear()

            for rec in recs:
                if rec.__class__ is tuple and len(rec) == 2:
                    if batch:
                        flush()
                    nums.append(rec[0])
                    blob.append(rec[1])
                    if len(blob) >= _BATCH:
                        flush()
                    continue
                if rec.__class__ is tuple and len(rec) == 3:  # a block's lines, already so (scan._np_lines, _podman_runs)
                    flush()
                    _send(out, rec)
                    continue
                if blob:
                    flush()
                add(rec if rec.__class__ is tuple else (rec.lineno, rec.text, rec.ts, rec.stream))
                if len(batch) >= _BATCH:
                    flush()
            flush()

            import resource

            peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux
            _send(out, ("end", getattr(scanner, "lines_seen", None), getattr(scanner, "format", None), peak))
        except BaseException as err:  # the parent raises it where the in-process read would have
            import pickle

            code = 1
            try:
                pickle.dumps(err)
            except Exception:
                err = InputError(str(err) or type(err).__name__)
            _send(out, ("error", err))
        out.flush()
    except BaseException:
        code = 2  # the parent has gone (broken pipe): nothing to tell
    finally:
        os._exit(code)


def background(make: Callable[[], tuple[Iterable[Record], object]], batches: bool = False
               ) -> tuple[Iterator[Record | LineBatch], Finished] | None:
    """make() run in a forked child, its Records read back here in order; None if this system
    cannot fork (the caller then reads in process).  batches: a plain log's lines, and a
    podman -t log's runs of usual lines (with their stamps), come as records.LineBatch items
    among the Records (parse() reads them; nothing else does)."""
    if not hasattr(os, "fork"):
        return None
    for stream in (sys.stdout, sys.stderr):  # else the child's exit could write them twice
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    try:
        r, w = os.pipe()
    except OSError:
        return None
    try:
        import fcntl

        fcntl.fcntl(w, getattr(fcntl, "F_SETPIPE_SZ", 1031), 1 << 20)  # fewer wake-ups per MiB
    except (ImportError, OSError):
        pass
    try:
        pid = os.fork()
    except OSError:
        os.close(r)
        os.close(w)
        return None
    if pid == 0:  # pragma: no cover - the child's coverage is not collected
        os.close(r)
        try:  # (the parent's SIGTERM handler unwinds an ingest; this process has nothing to unwind)
            import signal

            for sig in (signal.SIGTERM, getattr(signal, "SIGHUP", None)):
                if sig is not None and callable(signal.getsignal(sig)):  # (nohup's SIG_IGN stays)
                    signal.signal(sig, signal.SIG_DFL)
        except (ImportError, ValueError, OSError):
            pass
        _child(w, make)
    os.close(w)
    done = Finished()
    done.pid = pid
    return _receive(r, pid, done, batches), done


def _stopped(pid: int) -> str:
    """Why the reader ended before its "end" message, as far as its exit status tells (the
    reader has ended: its pipe did; this reaps it)."""
    try:
        os.waitpid(pid, 0)
    except ChildProcessError:
        pass
    return "the log reader process stopped before the end of the log"


def _receive(r: int, pid: int, done: Finished, batches: bool = False) -> Iterator[Record | LineBatch]:
    import pickle

    from bootlog.envelope import stamp_clock

    ended = reaped = False
    try:
        while True:
            head = _read_exact(r, _HEAD.size)
            if len(head) < _HEAD.size:
                break
            (n,) = _HEAD.unpack(head)
            body = _read_exact(r, n)
            if len(body) < n:
                break
            msg = pickle.loads(body)
            if msg[0] == "lines":
                # decoded as one text: "\n" cannot be part of a bad sequence, so each line
                # decodes as it would alone (the U+FFFD replacements included)
                nums = array("q")
                nums.frombytes(msg[1])
                texts = msg[2].decode("utf-8", "replace").split("\n")
                if batches:
                    yield LineBatch(nums, texts)  # type: ignore[misc]
                    continue
                for lineno, text in zip(nums, texts):
                    yield Record(lineno, text)
            elif msg[0] == "plines":  # podman -t lines, each with its stamp (scan._podman_runs)
                nums = array("q")
                nums.frombytes(msg[1])
                lines = msg[2].decode("utf-8", "replace").split("\n")
                # (the stamp is ASCII: its 30 bytes are 30 characters, then a space)
                if batches:
                    yield LineBatch(nums, [x[31:] for x in lines], [x[:30] for x in lines])  # type: ignore[misc]
                    continue
                clock = stamp_clock()
                for lineno, line in zip(nums, lines):
                    yield Record(lineno, line[31:], clock(line[:30]))
            elif msg[0] == "recs":
                for lineno, text, ts, stream in msg[1]:
                    yield Record(lineno, text, ts, stream)
            elif msg[0] == "end":
                done.lines_seen, done.format, done.peak_rss_kib = msg[1], msg[2], msg[3]
                global last_peak_rss_kib
                last_peak_rss_kib = max(last_peak_rss_kib, msg[3])
                ended = True
                break
            else:
                raise msg[1]
        if not ended:
            reaped = True  # (by _stopped: its pid may belong to another process by now)
            raise InputError(_stopped(pid))
    finally:
        os.close(r)
        if not ended and not reaped:
            try:
                os.kill(pid, 9)  # abandoned (an error here, or the caller stopped reading)
            except ProcessLookupError:
                pass
        if not reaped:
            try:
                os.waitpid(pid, 0)
            except ChildProcessError:
                pass
