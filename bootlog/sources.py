"""Where log bytes come from: files (plain or gzip), stdin, and `podman logs --timestamps NAME`.

Every source streams fixed-size byte chunks; nothing here reads a whole log into memory or
knows anything about log formats (envelope.py does that).
"""
from __future__ import annotations

import gzip
import os
import queue
import re
import shlex
import shutil
import stat
import subprocess
import sys
import threading
import time
import zlib
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import BinaryIO, Callable, Iterator

from bootlog.errors import InputError, SourceError

GZIP_MAGIC = b"\x1f\x8b"
CHUNK = 1 << 20


@dataclass
class Source:
    name: str  # path, "-" (stdin) or "podman:NAME"
    kind: str  # "file" | "gzip" | "stdin" | "container"
    mtime: float | None = None  # file mtime (gives the year of vLLM's MM-DD dates), else None
    size: int | None = None  # bytes on disk (compressed size for gzip), else None
    _reader: Callable[[int, int], Iterator[bytes]] | None = field(default=None, repr=False, compare=False)

    def chunks(self, start: int = 0, size: int = CHUNK) -> Iterator[bytes]:
        """Yield the source's bytes from offset `start` (uncompressed offset for gzip) in pieces
        of about `size` bytes. Raises InputError / SourceError when the bytes stop being readable."""
        if self._reader is None:
            raise InputError(f"source has no reader: {self.name}")
        return self._reader(start, size)


# ---------------------------------------------------------------- files and stdin

def open_source(spec: str) -> Source:
    """Open a path (plain or gzip, told apart by magic bytes) or "-" for stdin."""
    if spec == "-":
        return Source(name="-", kind="stdin", _reader=_stdin_reader)
    try:
        st = os.stat(spec)
    except FileNotFoundError:
        raise InputError(f"no such file: {spec}", path=spec) from None
    except NotADirectoryError:
        raise InputError(f"no such file: {spec}", path=spec) from None
    except PermissionError:
        raise InputError(f"permission denied: {spec}", path=spec) from None
    except OSError as e:
        raise InputError(f"cannot read {spec}: {e.strerror or e}", path=spec) from None
    if stat.S_ISDIR(st.st_mode):
        raise InputError(f"is a directory: {spec}", path=spec)
    if not stat.S_ISREG(st.st_mode):
        # a FIFO or device (`bootlog ingest <(zcat x.gz)`): it can be read only once, so the
        # magic bytes are peeked when reading starts
        if not os.access(spec, os.R_OK):  # opening it here would consume the writer
            raise InputError(f"permission denied: {spec}", path=spec)
        return Source(name=spec, kind="file", mtime=st.st_mtime,
                      _reader=lambda start, n: _stream_chunks(spec, start, n))
    magic = _read_magic(spec)
    size = st.st_size
    if magic == GZIP_MAGIC:
        return Source(name=spec, kind="gzip", mtime=st.st_mtime, size=size,
                      _reader=lambda start, n: _gzip_chunks(spec, start, n))
    return Source(name=spec, kind="file", mtime=st.st_mtime, size=size,
                  _reader=lambda start, n: _file_chunks(spec, start, n))


def _open_rb(path: str) -> BinaryIO:
    try:
        return open(path, "rb")
    except FileNotFoundError:
        raise InputError(f"no such file: {path}", path=path) from None
    except IsADirectoryError:
        raise InputError(f"is a directory: {path}", path=path) from None
    except PermissionError:
        raise InputError(f"permission denied: {path}", path=path) from None
    except OSError as e:
        raise InputError(f"cannot read {path}: {e.strerror or e}", path=path) from None


def _read_magic(path: str) -> bytes:
    with _open_rb(path) as f:
        try:
            return f.read(2)
        except OSError as e:
            raise InputError(f"cannot read {path}: {e.strerror or e}", path=path) from None


def _file_chunks(path: str, start: int, size: int) -> Iterator[bytes]:
    with _open_rb(path) as f:
        if start:
            f.seek(start)
        while True:
            try:
                b = f.read(size)
            except OSError as e:
                raise InputError(f"cannot read {path}: {e.strerror or e}", path=path) from None
            if not b:
                return
            yield b


def _gzip_stream(f: BinaryIO, name: str, start: int, size: int) -> Iterator[bytes]:
    # Truncation only shows when the decompressor reaches the cut, so it surfaces mid-stream;
    # the caller must treat the InputError as "abort the whole ingest".
    try:
        with gzip.GzipFile(fileobj=f, mode="rb") as g:
            skip = start
            while skip > 0:
                b = g.read(min(skip, size))
                if not b:
                    return
                skip -= len(b)
            while True:
                b = g.read(size)
                if not b:
                    return
                yield b
    except EOFError:
        raise InputError(f"truncated gzip: {name}", path=name) from None
    except (gzip.BadGzipFile, zlib.error) as e:
        raise InputError(f"corrupt gzip: {name}: {e}", path=name) from None


def _gzip_chunks(path: str, start: int, size: int) -> Iterator[bytes]:
    with _open_rb(path) as f:
        yield from _gzip_stream(f, path, start, size)


def _peeked_chunks(buf: BinaryIO, name: str, start: int, size: int) -> Iterator[bytes]:
    # peek() shows the magic bytes without consuming them (a pipe cannot be rewound)
    head = buf.peek(2)[:2] if hasattr(buf, "peek") else b""
    if head == GZIP_MAGIC:
        yield from _gzip_stream(buf, name, start, size)
        return
    skip = start
    while skip > 0:
        b = buf.read(min(skip, size))
        if not b:
            return
        skip -= len(b)
    while True:
        b = buf.read(size)
        if not b:
            return
        yield b


def _stdin_reader(start: int, size: int) -> Iterator[bytes]:
    yield from _peeked_chunks(sys.stdin.buffer, "-", start, size)


def _stream_chunks(path: str, start: int, size: int) -> Iterator[bytes]:
    with _open_rb(path) as f:
        yield from _peeked_chunks(f, path, start, size)


# ---------------------------------------------------------------- podman logs

_LEAD_TS = re.compile(rb"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(?:\.(\d+))?(Z|[+-]\d\d:\d\d) ")
_QMAX = 2048  # lines buffered per stream: bounds memory while the other stream is quiet
_SETTLE = 0.05  # seconds a line waits for an earlier record on the other, quiet stream


def container_source(name: str, engine: str = "podman", since: str | None = None) -> Source:
    """`ENGINE logs --timestamps [--since X] NAME`, stdout and stderr merged by timestamp.

    Like bootlog.podman, $BOOTLOG_<ENGINE> names the binary and $BOOTLOG_<ENGINE>_ARGS
    (shlex-split) goes before the subcommand (e.g. a private `--root X --runroot Y`)."""
    var = re.sub(r"\W", "_", engine.upper())
    binary = os.environ.get(f"BOOTLOG_{var}") or engine
    exe = shutil.which(binary)
    if exe is None:
        shown = engine if binary == engine else f"{engine} ({binary})"
        raise SourceError(f"{shown} not found on PATH", engine=engine, binary=binary)
    argv = [exe, *shlex.split(os.environ.get(f"BOOTLOG_{var}_ARGS", "")), "logs", "--timestamps"]
    if since:
        argv += ["--since", since]
    argv.append(name)
    return Source(name=f"{engine}:{name}", kind="container",
                  _reader=lambda start, n: _container_chunks(argv, name, engine, start, n))


def _sort_key(line: bytes, last: str) -> str:
    """Canonical UTC text of a line's leading timestamp (sorts as a string), else `last`."""
    m = _LEAD_TS.match(line)
    if m is None:
        return last
    frac = (m.group(2) or b"").decode()
    if m.group(3) == b"Z":
        return m.group(1).decode() + "." + frac[:9].ljust(9, "0")
    try:
        dt = datetime.fromisoformat(m.group(1).decode() + "." + frac[:6].ljust(6, "0")
                                    + m.group(3).decode())
    except ValueError:
        return last
    utc = dt.astimezone(timezone.utc).replace(tzinfo=None).isoformat(timespec="seconds")
    return utc + "." + frac[:9].ljust(9, "0")


def _pump(pipe: BinaryIO, q: queue.Queue, stop: threading.Event) -> None:
    item: tuple[float, bytes | None]
    try:
        for line in iter(pipe.readline, b""):
            item = (time.monotonic(), line)
            while True:
                try:
                    q.put(item, timeout=0.1)
                    break
                except queue.Full:
                    if stop.is_set():
                        return
    except (OSError, ValueError):
        pass
    finally:
        while not stop.is_set():
            try:
                q.put((time.monotonic(), None), timeout=0.1)  # end marker
                break
            except queue.Full:
                pass


def _merged_lines(argv: list[str], name: str, engine: str) -> Iterator[bytes]:
    try:
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE)
    except OSError as e:
        raise SourceError(f"cannot run {engine}: {e.strerror or e}", engine=engine) from None
    stop = threading.Event()
    qs = {"stdout": queue.Queue(_QMAX), "stderr": queue.Queue(_QMAX)}
    threads = [threading.Thread(target=_pump, args=(proc.stdout, qs["stdout"], stop), daemon=True),
               threading.Thread(target=_pump, args=(proc.stderr, qs["stderr"], stop), daemon=True)]
    for t in threads:
        t.start()
    heads: dict[str, tuple[str, float, bytes] | None] = {"stdout": None, "stderr": None}
    done = {"stdout": False, "stderr": False}
    last = {"stdout": "", "stderr": ""}
    # podman's own diagnostics on stderr carry no timestamp; they are not container output
    diag: list[bytes] = []

    def take(s: str, item: tuple[float, bytes | None]) -> None:
        arrived, line = item
        if line is None:
            done[s] = True
        elif s == "stderr" and _LEAD_TS.match(line) is None:
            diag.append(line)
            del diag[:-20]
        else:
            last[s] = _sort_key(line, last[s])
            heads[s] = (last[s], arrived, line)

    try:
        while True:
            for s in ("stdout", "stderr"):
                if heads[s] is None and not done[s]:
                    try:
                        take(s, qs[s].get_nowait())
                    except queue.Empty:
                        pass
            live = [s for s in ("stdout", "stderr") if heads[s] is not None]
            waiting = [s for s in ("stdout", "stderr") if heads[s] is None and not done[s]]
            if not live and not waiting:
                break
            if live and waiting:
                # One stream is quiet. podman writes records in log order and both pipes are
                # drained concurrently, so once a line has waited _SETTLE seconds any earlier
                # record of the quiet stream would have arrived; a filling queue means podman
                # is racing ahead on (or blocked on) that pipe, so waiting could only stall.
                s = live[0]
                age = time.monotonic() - heads[s][1]
                if age < _SETTLE and qs[s].qsize() < _QMAX // 2:
                    try:
                        take(waiting[0], qs[waiting[0]].get(timeout=min(_SETTLE - age, 0.005)))
                    except queue.Empty:
                        pass
                    continue
            elif not live:
                try:
                    take(waiting[0], qs[waiting[0]].get(timeout=0.05))
                except queue.Empty:
                    pass
                continue
            s = min(live, key=lambda k: (heads[k][0], k != "stdout"))  # stable: stdout first
            yield heads[s][2]
            heads[s] = None
        rc = proc.wait()
    finally:
        stop.set()
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        for p in (proc.stdout, proc.stderr):
            try:
                p.close()
            except OSError:
                pass
    if rc != 0:
        msg = b" ".join(d.strip() for d in diag).decode("utf-8", "replace").strip()
        if rc == 125 and "no such container" in msg.lower():
            raise SourceError(f"no such container: {name}", container=name, returncode=rc)
        if msg.startswith("Error: "):
            msg = msg[len("Error: "):]
        raise SourceError(f"{engine} logs {name} failed (exit {rc}): {msg or 'no message'}",
                          container=name, returncode=rc)


def _container_chunks(argv: list[str], name: str, engine: str, start: int, size: int
                      ) -> Iterator[bytes]:
    buf: list[bytes] = []
    n = 0
    skip = start
    pending_nl = False
    for line in _merged_lines(argv, name, engine):
        if pending_nl:
            # a stream ended without a newline (a trailing P record) and the other stream goes on:
            # end the line here instead of gluing the two streams' records together
            line = b"\n" + line
        pending_nl = not line.endswith(b"\n")
        if skip:
            if len(line) <= skip:
                skip -= len(line)
                continue
            line, skip = line[skip:], 0
        buf.append(line)
        n += len(line)
        if n >= size:
            yield b"".join(buf)
            buf, n = [], 0
    if buf:
        yield b"".join(buf)
