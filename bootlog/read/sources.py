"""Where log bytes come from: files (plain or gzip), stdin, and `podman logs --timestamps NAME`.

Every source streams fixed-size byte chunks; nothing here reads a whole log into memory or
knows anything about log formats (envelope.py does that).
"""

from __future__ import annotations

import io
import os
import stat
import sys
from dataclasses import dataclass, field
from typing import IO, BinaryIO, Callable, Iterable, Iterator

from bootlog.errors import InputError

GZIP_MAGIC = b"\x1f\x8b"
CHUNK = 1 << 20
BLOCK = 2 << 20  # bytes per block of lines (a search's unit): big enough that per-block costs vanish
LINE_MAX = 1 << 20  # bytes of one line that are kept: a longer line is cut (and counted)


def cut_note(label: str, n: int) -> str:
    """What ingest and watch say (once per input, once per read) of the lines cut at LINE_MAX."""
    return f"{label}: {n:,} line(s) longer than 1 MiB were cut there"


@dataclass
class Source:
    name: str  # path, "-" (stdin) or "podman:NAME"
    kind: str  # "file" | "gzip" | "stdin" (also a FIFO or device path) | "container"
    mtime: float | None = None  # file mtime (gives the year of vLLM's MM-DD dates), else None
    size: int | None = None  # bytes on disk (compressed size for gzip), else None
    # why the bytes ended early ("truncated gzip"): the read stopped at its last whole line
    stopped: str | None = field(default=None, compare=False)
    _reader: Callable[[int, int], Iterator[bytes]] | None = field(default=None, compare=False, repr=False)

    def chunks(self, start: int = 0, size: int = CHUNK) -> Iterator[bytes]:
        """Yield the source's bytes from offset `start` (uncompressed offset for gzip) in pieces
        of about `size` bytes. Raises InputError / SourceError when the bytes stop being readable."""
        if self._reader is None:
            raise InputError(f"source has no reader: {self.name}")
        return self._reader(start, size)


def open_source(spec: str) -> Source:
    """Open a path (plain or gzip, told apart by magic bytes) or "-" for stdin."""
    if spec == "-":
        src = Source(name="-", kind="stdin")
        src._reader = lambda start, n: _stdin_reader(start, n, src)
        return src
    try:
        st = os.stat(spec)
    except OSError as e:
        raise input_error(spec, e) from None
    if stat.S_ISDIR(st.st_mode):
        raise InputError(f"is a directory: {spec}", path=spec)
    if not stat.S_ISREG(st.st_mode):
        # a FIFO or device (`bootlog ingest <(zcat x.gz)`): read once, as "-" is (kind "stdin": no
        # size, no stored position, no second open for a head fingerprint: that would wait on a
        # FIFO's writer, or read nothing), its magic bytes peeked when reading starts
        if not os.access(spec, os.R_OK):  # opening it here would consume the writer
            raise InputError(f"permission denied: {spec}", path=spec)
        src = Source(name=spec, kind="stdin", mtime=st.st_mtime)
        src._reader = lambda start, n: _opened(spec, _peeked_chunks, start, n, src)
        return src
    if _read_magic(spec) == GZIP_MAGIC:
        src = Source(name=spec, kind="gzip", mtime=st.st_mtime, size=st.st_size)
        src._reader = lambda start, n: _opened(spec, _gzip_stream, start, n, src)
        return src
    return Source(
        name=spec,
        kind="file",
        mtime=st.st_mtime,
        size=st.st_size,
        _reader=lambda start, n: _file_chunks(spec, start, n),
    )


def input_error(path: str, e: OSError) -> InputError:
    """One line for an unreadable path, by what went wrong."""
    if isinstance(e, (FileNotFoundError, NotADirectoryError)):
        return InputError(f"no such file: {path}", path=path)
    if isinstance(e, IsADirectoryError):
        return InputError(f"is a directory: {path}", path=path)
    if isinstance(e, PermissionError):
        return InputError(f"permission denied: {path}", path=path)
    return InputError(f"cannot read {path}: {e.strerror or e}", path=path)


def _open_rb(path: str) -> BinaryIO:
    try:
        return open(path, "rb")
    except OSError as e:
        raise input_error(path, e) from None


# compressions bootlog does not read: said so, instead of "no vLLM boot found" in the bytes
_OTHER_MAGIC = (
    (b"\xfd7zXZ\x00", "xz", "xz -dc"),
    (b"\x28\xb5\x2f\xfd", "zstd", "zstd -dc"),
    (b"\x04\x22\x4d\x18", "lz4", "lz4 -dc"),
)


def check_compression(head: bytes, path: str) -> None:
    for magic, name, cmd in _OTHER_MAGIC:  # noqa: B007  (the for-else below uses the one found)
        if head.startswith(magic):
            break
    else:
        if not (head[:3] == b"BZh" and head[3:4].isdigit() and head[4:10] == b"1AY&SY"):
            return
        name, cmd = "bzip2", "bzip2 -dc"
    shown = "-" if path == "-" else path
    raise InputError(
        f"{shown} is {name}-compressed: bootlog reads plain and gzip logs "
        f"({cmd} {'FILE' if path == '-' else path} | bootlog ingest -)",
        path=path,
    )


def _read_magic(path: str) -> bytes:
    with _open_rb(path) as f:
        try:
            head = f.read(10)
        except OSError as e:
            raise InputError(f"cannot read {path}: {e.strerror or e}", path=path) from None
    check_compression(head, path)
    return head[:2]


def _file_chunks(path: str, start: int, size: int) -> Iterator[bytes]:
    with _open_rb(path) as f:
        f.seek(start)
        try:
            yield from _read_from(f, 0, size)
        except OSError as e:
            raise InputError(f"cannot read {path}: {e.strerror or e}", path=path) from None


def _opened(path: str, read: Callable[..., Iterator[bytes]], start: int, size: int, src: Source) -> Iterator[bytes]:
    with _open_rb(path) if src.kind != "stdin" else _open_stream(path) as f:
        yield from read(f, path, start, size, src)


FIFO_WAIT_S = 10.0  # seconds a FIFO may go without a writer before the read gives up


def _open_stream(path: str) -> BinaryIO:
    """A FIFO or device, opened without waiting for a writer (open() of a FIFO nobody writes
    blocks forever): a FIFO is read once a writer has come, and is an error when none came in
    FIFO_WAIT_S."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError as e:
        raise input_error(path, e) from None
    try:
        head = _writer_came(fd, path) if stat.S_ISFIFO(os.fstat(fd).st_mode) else b""
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return io.BufferedReader(_Prefixed(head, fd))


def _writer_came(fd: int, path: str) -> bytes:
    """Wait until the FIFO `fd` (non-blocking) has a writer: the bytes it wrote meanwhile.  A
    read gives EAGAIN while a writer is there with nothing written yet, and end-of-file while
    no writer is (not yet, or no more)."""
    import select
    import time

    deadline = time.monotonic() + FIFO_WAIT_S
    while True:
        try:
            got = os.read(fd, CHUNK)
        except BlockingIOError:
            return b""  # a writer is there: read on, blocking
        if got:
            return got
        left = deadline - time.monotonic()
        if left <= 0:
            raise InputError(
                f"{path} is a FIFO that no program writes (none came in {FIFO_WAIT_S:g} s): start "
                f"its writer first, or pipe it: PROGRAM | bootlog ingest -",
                path=path,
            )
        select.select([fd], [], [], min(left, 0.5))
        time.sleep(0.02)  # (after a writer came and went, select returns at once)


class _Prefixed(io.RawIOBase):
    """A file descriptor's bytes, after `head` (bytes read from it already)."""

    def __init__(self, head: bytes, fd: int) -> None:
        super().__init__()
        self.head, self.fd = head, fd

    def readable(self) -> bool:
        return True

    def readinto(self, b) -> int:
        if self.head:
            n = min(len(b), len(self.head))
            b[:n], self.head = self.head[:n], self.head[n:]
            return n
        got = os.read(self.fd, len(b))
        b[: len(got)] = got
        return len(got)

    def close(self) -> None:
        if not self.closed:
            os.close(self.fd)
        super().close()


def _gzip_stream(f: BinaryIO, name: str, start: int, size: int, src: Source) -> Iterator[bytes]:
    """The decompressed bytes.  Truncation only shows when the decompressor reaches the cut: the
    bytes end at the last whole line before it and src.stopped says so (read1: one raw read per
    call, so nothing decompressed is lost to the error); corrupt data is an InputError."""
    import gzip  # (here, not at import: a plain file's re-ingest never needs it)
    import zlib

    held = b""  # the bytes after the last newline given out: a cut line is dropped, not read
    try:
        with gzip.GzipFile(fileobj=f, mode="rb") as g:
            for b in _read_from(g, start, size, read=g.read1):
                cut = b.rfind(b"\n") + 1
                if cut:
                    yield held + b[:cut]
                    held = b[cut:]
                elif len(held) + len(b) > LINE_MAX:
                    # a line past LINE_MAX is cut there anyway (Blocks): nothing of it to hold
                    # back, and a bomb without a newline costs LINE_MAX, not its expanded size
                    yield held + b
                    held = b""
                else:
                    held += b
    except EOFError:
        src.stopped = "truncated gzip"
        return
    except (gzip.BadGzipFile, zlib.error) as e:
        raise InputError(f"corrupt gzip: {name}: {e}", path=name) from None
    if held:
        yield held


def _peeked_chunks(buf: BinaryIO, name: str, start: int, size: int, src: Source) -> Iterator[bytes]:
    # peek() shows the magic bytes without consuming them (a pipe cannot be rewound)
    if not hasattr(buf, "peek"):  # (a wrapped stream, e.g. a test runner's stdin)
        import io

        buf = io.BufferedReader(buf)  # type: ignore[type-var]  # (any raw binary stream reads)
    head = buf.peek(10)[:10]
    check_compression(head, name)
    if head[:2] == GZIP_MAGIC:
        yield from _gzip_stream(buf, name, start, size, src)
        return
    yield from _read_from(buf, start, size)


def _read_from(f: IO[bytes] | io.BufferedIOBase, start: int, size: int, read=None) -> Iterator[bytes]:
    """A stream's bytes from offset `start` (read and dropped: pipes and gzip cannot seek)."""
    read = read or f.read
    skip = start
    while skip > 0:
        b = read(min(skip, size))
        if not b:
            return
        skip -= len(b)
    while True:
        b = read(size)
        if not b:
            return
        yield b


def _stdin_reader(start: int, size: int, src: Source) -> Iterator[bytes]:
    if sys.stdin is None or getattr(sys.stdin, "buffer", None) is None:  # `bootlog ingest - <&-`
        raise InputError("stdin is closed: nothing to read from -", path="-")
    yield from _peeked_chunks(sys.stdin.buffer, "-", start, size, src)


class Blocks:
    """The bytes again in blocks of about `size` that end at a newline (the last one may not).
    A line longer than LINE_MAX is cut there (the rest of it dropped, its newline kept), so memory
    stays bounded whatever the log holds; `cut_lines` counts them (ingest reports them once)."""

    def __init__(self, chunks: Iterable[bytes], size: int | None = None) -> None:
        self.chunks, self.size = chunks, size or BLOCK
        self.cut_lines = 0

    def __iter__(self) -> Iterator[bytes]:
        parts: list[bytes] = []
        held = 0
        skipping = False  # inside a line cut at LINE_MAX: drop its bytes up to its newline
        for c in self.chunks:
            if skipping:
                nl = c.find(b"\n")
                if nl < 0:
                    continue
                c, skipping = c[nl:], False
            if not c:
                continue
            parts.append(c)
            held += len(c)
            if held < self.size:
                continue
            data = parts[0] if len(parts) == 1 else b"".join(parts)
            cut = data.rfind(b"\n") + 1
            if cut == 0:  # one line so far, longer than a block: keep its head only
                parts, held = [data[:LINE_MAX]], LINE_MAX
                self.cut_lines += 1
                skipping = True
                continue
            yield from self._bounded(data[:cut] if cut < len(data) else data)
            parts = [data[cut:]] if cut < len(data) else []
            held = len(data) - cut
        if parts:
            yield from self._bounded(b"".join(parts))

    def _bounded(self, block: bytes) -> Iterator[bytes]:
        """The block with every line longer than LINE_MAX cut to LINE_MAX bytes.  (Such a line
        covers a whole aligned half of LINE_MAX: only a half without a newline is looked into.)"""
        half = LINE_MAX // 2
        if all(block.find(b"\n", j, j + half) >= 0 for j in range(0, len(block) - half + 1, half)):
            yield block
            return
        out = []
        for line in block.split(b"\n"):
            if len(line) > LINE_MAX:
                line = line[:LINE_MAX]
                self.cut_lines += 1
            out.append(line)
        yield b"\n".join(out)


def _sliced(blocks: Iterable[bytes], start: int, size: int) -> Iterator[bytes]:
    """The bytes of `blocks` from offset `start` on, in pieces of at most `size`."""
    for block in blocks:
        if start >= len(block):
            start -= len(block)
            continue
        block, start = block[start:], 0
        for i in range(0, len(block), size):
            yield block[i : i + size]


def bytes_source(name: str, data: bytes, kind: str = "container") -> Source:
    """Bytes already read (the hook's copy of a container run that is gone now) as a Source."""
    return Source(name=name, kind=kind, _reader=lambda start, size: _sliced([data], start, size))


def container_source(name: str, engine: str = "podman", since: str | None = None) -> Source:
    """`ENGINE logs --timestamps [--since X] NAME`, stdout and stderr merged by timestamp.

    The engine is run by bootlog.read.podman (the one place that runs it): $BOOTLOG_<ENGINE> names the
    binary and $BOOTLOG_<ENGINE>_ARGS goes before the subcommand; the two streams are spooled
    and merged exactly by their timestamps."""
    from bootlog.read import podman

    podman.command(engine)  # fail now, with one line, when the engine is not installed
    return Source(
        name=f"{engine}:{name}",
        kind="container",
        _reader=lambda start, size: _sliced(podman.logs(name, since=since, engine=engine), start, size),
    )
