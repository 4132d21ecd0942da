"""A plain file's bytes a block at a time, each block ending at a newline, read into two reused
buffers and handed out as views of them.

The reader process (reader.py) reads a big plain log this way for hyperscan and the native line
cut (scan.py, _linecut.c), which read a view where it is.  A block costs one read() into a
buffer that stays in the CPU's cache, and the partial line at its end is the only byte copied
twice (moved to the start of the other buffer, ahead of the next read).  This replaced views of
8 MiB memory-map windows: faulting the map's pages in cost more than read()'s copy (the scan of
a 512 MiB log: 0.43 s mapped, 0.35 s read, on this project's 2-core VM; bench/README.md).

A view is good until the next block but one is asked for: its buffer then takes that block, and
the view is released (a consumer that kept it gets an error, never other bytes).  The scanner
looks one block ahead, so it holds at most two.

A file that ends before `stop` (truncated, or rotated in place, while it was read) is an error,
never a silently shorter log.
"""
from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:  # (typing for the annotations only: importing it costs ~5 ms of every start)
    from typing import BinaryIO, Iterator

SHORTER = ("the log got shorter while it was read (truncated or rotated in place?): "
           "ingest it again")


def blocks(path: str, start: int, stop: int | None, block: int) -> Iterator[memoryview] | None:
    """Views of the bytes start..stop of the file at `path` (stop None: up to its end, as read()
    goes on), about `block` bytes each, each ending just after a newline except the last (a
    longer line makes its block that one line); None when the file cannot be opened (the caller
    reads it another way)."""
    try:
        # (opened here, so that a file that is not there is None; a file object: its descriptor
        # is closed even if the views are never asked for)
        f = open(path, "rb", buffering=0)
    except OSError:
        return None
    try:
        if start < 0 or (stop is not None and stop < start):
            raise ValueError(start)
        if start:
            f.seek(start)
    except (OSError, ValueError, OverflowError):
        f.close()
        return None
    return _views(f, path, stop if stop is None else stop - start, max(1, block))


def _fill(f: BinaryIO, path: str, view: memoryview) -> int:
    """Read into `view` until it is full or the file ends; the bytes read."""
    got = 0
    n = len(view)
    while got < n:
        try:
            k = f.readinto(view[got:])
        except OSError as e:
            from bootlog.sources import input_error

            raise input_error(path, e) from None
        if not k:
            break
        got += k
    return got


def _views(f: BinaryIO, path: str, left: int | None, block: int) -> Iterator[memoryview]:
    """left: the bytes still to read (None: on to the end)."""
    from bootlog.errors import InputError

    with f:
        bufs = [bytearray(block), bytearray(block)]
        given: list[memoryview | None] = [None, None]  # the view last handed out of each buffer
        k = 0  # the buffer the next block is read into
        tail = b""  # the line the last block did not end: the next block starts with it
        while True:
            if given[k] is not None:
                given[k].release()  # (its bytes are about to be overwritten)
                given[k] = None
            carry = len(tail)
            # a block's bytes: `block` of them, or twice the line so far when one line is
            # longer than that (each read doubles what it holds of it)
            size = block if carry < block else 2 * carry
            if len(bufs[k]) < size:
                bufs[k] = bytearray(size)
            buf = bufs[k]
            mv = memoryview(buf)
            mv[:carry] = tail
            room = size - carry
            want = room if left is None else min(room, left)
            n = _fill(f, path, mv[carry:carry + want]) if want else 0
            if left is not None:
                left -= n
                if n < want:
                    mv.release()
                    raise InputError(f"{path}: {SHORTER}", path=path)
            filled = carry + n
            if not filled:
                mv.release()
                return
            last = n < room or left == 0  # (the file's, or the range's, end)
            if last:
                cut = filled
            else:
                # the block ends after its last newline; a line longer than a block ends its own
                # block (at its newline, once the buffer holds it)
                nl = buf.rfind(b"\n", 0, min(filled, block))
                if nl < 0:
                    nl = buf.find(b"\n", block, filled)
                if nl < 0:  # (no newline yet: more of the line, in a bigger buffer)
                    tail = bytes(mv[:filled])
                    mv.release()
                    continue
                cut = nl + 1
            tail = bytes(mv[cut:filled])
            view = mv[:cut]
            mv.release()
            given[k] = view
            k = 1 - k
            yield view
            if last:  # (its block took every byte read: nothing carried)
                return
