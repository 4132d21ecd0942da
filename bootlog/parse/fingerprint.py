"""A boot's identity: the hash of its lines (FpHash), made one run's by its start time
(run_fingerprint), and the API-server identity a line belongs to (api_key)."""

from __future__ import annotations

import re
from datetime import datetime, timezone
from hashlib import sha256

LINE_START = re.compile(
    r"\((?:[A-Za-z_][\w\-]*(?: [^()]*?)? )?pid=\d+|"
    r"(?:DEBUG|INFO|WARNING|ERROR|CRITICAL) \d\d-\d\d \d\d:|(?:INFO|WARNING|ERROR):  "
)


def fp_text(text: str) -> str:
    """A line from its vLLM part on: a partial line podman glued in front is not boot content."""
    m = LINE_START.search(text)
    return text[m.start() :] if m else text


def run_fingerprint(content: str, started: datetime | None) -> str:
    """The content hash made one run's: two starts of a server can print the same lines (a
    restart replaying its output, a crash loop's identical failures) and are still two boots;
    the envelope's time of the first line tells them apart (it is the same however much of the
    boot a read saw).  Without an envelope time the content hash stands: vLLM's own MM-DD
    HH:MM:SS is among the hashed lines."""
    if started is None or started.tzinfo is None:
        return content
    try:
        stamp = started.astimezone(timezone.utc).isoformat()
    except OverflowError:  # (a stamp at the edge of the date range has no UTC form: as printed)
        stamp = started.isoformat()
    return sha256(f"{content}|{stamp}".encode()).hexdigest()


def api_key(api_pids: dict[str, int]) -> tuple:
    """An API-server identity as a key: two boots' api_pids are equal iff their api_key are."""
    return tuple(sorted(api_pids.items()))


class FpHash:
    """sha256 of "\n".join(texts) for texts appended one by one, with their count (kept lines
    were most of the memory of a log of thousands of boots)."""

    __slots__ = ("h", "n")

    def __init__(self) -> None:
        self.h = sha256()
        self.n = 0

    def __len__(self) -> int:
        return self.n

    def append(self, text: str) -> None:
        self.h.update((text if not self.n else "\n" + text).encode("utf-8", "replace"))
        self.n += 1

    def hexdigest(self) -> str:
        return self.h.hexdigest()
