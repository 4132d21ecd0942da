"""A plain file's bytes as views of a memory map, a block at a time, each ending at a newline.

The reader process's read of a big plain log (reader.py) spent a third of its time getting bytes
into blocks: read() copies every byte out of the page cache into fresh memory, and the block that
ends at a newline is a second copy (the partial line carried over, joined to the next chunk).
A view of a map copies nothing: hyperscan and the native line cut (scan.py, _linecut.c) read it
where the page cache holds it.  Anything else that reads a block makes bytes of it first.

Windows of WINDOW bytes are mapped one after another, never the whole file: the pages of a map
count in the process's resident memory while it is mapped.  A window is unmapped when the last
view of it is gone (the scanner looks one block ahead, so two may be alive).

A file cut shorter while a window of it is mapped makes the next touch of a page past its new end
a SIGBUS, which ends the reader process: reader.py tells the user so.  A window is never mapped
past the file's size as it is when the window is mapped.
"""
from __future__ import annotations

import mmap
import os

TYPE_CHECKING = False
if TYPE_CHECKING:  # (typing for the annotations only: importing it costs ~5 ms of every start)
    from typing import Iterator

WINDOW = 8 << 20


def blocks(path: str, start: int, stop: int | None, block: int) -> Iterator[memoryview] | None:
    """Views of the bytes start..stop of the file at `path` (stop None: up to its end as it is
    when each window is mapped, as read() would go on), about `block` bytes each, each ending
    just after a newline except the file's last (a longer line makes its block longer); None
    when the file cannot be mapped (the caller reads it instead)."""
    try:
        # (a file object: its descriptor is closed even if the views are never asked for)
        f = open(path, "rb", buffering=0)
    except OSError:
        return None
    try:
        first = _window(f.fileno(), start, stop, block) if stop is None or start < stop else None
    except (OSError, ValueError, OverflowError):
        f.close()
        return None
    return _views(f, first, start, stop, block)


def _end_of(fd: int, stop: int | None) -> int:
    size = os.fstat(fd).st_size
    return size if stop is None else min(stop, size)


def _window(fd: int, pos: int, stop: int | None, block: int, grow: int = 0) -> tuple[int, mmap.mmap] | None:
    """(offset, map) of a window from the page holding `pos` with room for a block (`grow`: the
    size of a window too small for the line at pos, doubled), or None if the file now ends at
    or before pos."""
    base = pos - pos % mmap.ALLOCATIONGRANULARITY
    end = _end_of(fd, stop)  # (never past the end: a page there is a SIGBUS)
    if end <= pos:
        return None
    size = min(max(WINDOW, pos - base + block + (1 << 16), 2 * grow), end - base)
    mm = mmap.mmap(fd, size, offset=base, access=mmap.ACCESS_READ)
    try:
        mm.madvise(mmap.MADV_SEQUENTIAL)
    except (AttributeError, OSError, ValueError):  # (an old kernel or Python: only slower)
        pass
    return base, mm


def _end(mm: mmap.mmap, s: int, size: int, block: int, last: bool) -> int:
    """Where the block from s ends: after the last newline in the next `block` bytes, or after
    the first newline past them (one long line); the window's end in the file's last window;
    -1 when that lies past this window (or it holds less than a block more: a new window gives
    a whole one)."""
    e = s + block
    if e >= size:
        if last:
            return size
        return -1
    nl = mm.rfind(b"\n", s, e)
    if nl < 0:
        nl = mm.find(b"\n", e)
    if nl >= 0:
        return nl + 1
    return size if last else -1


def _views(f, win: tuple[int, mmap.mmap] | None, pos: int, stop: int | None, block: int
           ) -> Iterator[memoryview]:
    fd = f.fileno()
    try:
        while win is not None:
            base, mm = win
            size = len(mm)
            last = base + size >= _end_of(fd, stop)  # (the file's last window)
            mv = memoryview(mm)  # (its slices keep the map alive: unmapped after the last one)
            s = s0 = pos - base
            while s < size:
                e = _end(mm, s, size, block, last)
                if e < 0:
                    break
                yield mv[s:e]
                s = e
            del mv, mm, win
            pos = base + s
            if (stop is not None and pos >= stop) or (last and s >= size):
                return
            try:
                # (no block in this window: its first line is longer than it)
                win = _window(fd, pos, stop, block, grow=size if s == s0 else 0)
            except (OSError, ValueError, OverflowError) as err:
                raise OSError(f"cannot map the log past byte {pos}: {err}") from err
    finally:
        f.close()
