"""Where the last read of a log file stopped, and whether the file is still the one it was read
from: the one reading of a stored position, for `ingest` (a re-ingest of a grown file resumes)
and `watch --file` (a restarted watch resumes).

A position is (key, byte offset, head text).  The head text starts "n:digest": the length and
hash of the file's first n bytes (at most HEAD_BYTES) when it was read; the file is the same one
while it is at least that long (and at least `offset`) and starts with the same bytes.  A file
truncated in place (copytruncate), rotated, or emptied and written again has another head, and
is read from its top.  Ingest adds its own fields after the head (lines read, envelope format,
the boot the read ended in); CUT instead of a head says the read stored ended inside a line.
"""

from __future__ import annotations

import hashlib
import os
from typing import BinaryIO

HEAD_BYTES = 4096
CUT = "cut"  # a position's head text: the read stored ended inside a line (a copy of a live log)


def digest(f: BinaryIO, n: int) -> str:
    """The hash of the first `n` bytes of the open file `f` (its position is kept)."""
    at = f.tell()
    try:
        f.seek(0)
        return hashlib.sha256(f.read(n)).hexdigest()[:32]
    finally:
        f.seek(at)


def read_head(path: str, n: int = HEAD_BYTES) -> tuple[bytes, str]:
    """(the file's first `n` bytes, fewer when it is shorter; their head text "n:digest")."""
    with open(path, "rb") as f:
        head = f.read(n)
    return head, f"{len(head)}:{hashlib.sha256(head).hexdigest()[:32]}"


def still_holds(path: str, offset: int, head: str) -> bool:
    """Whether the file at `path` is still the one a read up to `offset` with head text `head`
    ("n:digest[:...]") read: as long, and starting with the same bytes."""
    n, digest_text = head.split(":")[:2]
    try:
        with open(path, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            return size >= max(offset, int(n)) and digest(f, int(n)) == digest_text
    except (OSError, ValueError):
        return False


def end_of_lines(path: str, size: int) -> int | None:
    """Offset just past the last newline before `size` (None if the tail has no newline)."""
    if size == 0:
        return 0
    with open(path, "rb") as f:
        back = min(size, 1 << 16)
        f.seek(size - back)
        block = f.read(back)
    i = block.rfind(b"\n")
    if i < 0:
        return None if back < size else 0
    return size - back + i + 1


def position_key(reader: str, path: str, host: str | None = None) -> str:
    """The key of a stored position: who reads (`ingest`, `watch:file`), on which host (a
    database serves a fleet: two hosts' /var/log/vllm.log are two files; None: the key earlier
    versions wrote), which file (its stored path)."""
    return f"{reader}:" + (f"{host}:" if host is not None else "") + path
