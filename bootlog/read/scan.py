"""Candidate lines: the physical lines of a log that hold a scan literal, plus the lines owed as
context after a traceback start, found without decoding the rest.

A log is read in blocks of about sources.BLOCK bytes that end at a newline.  One search per block
finds every literal at once: hyperscan (Intel's multi-pattern matcher) where it can be imported,
else one bytes.find pass per literal (the same lines, several times slower).  Only the lines found
are cut out and handed on, as (line number, raw bytes, hit): `hit` says whether the line holds a
literal, or is None where only the text can tell (a context line, a podman line to join).

Per format (envelope.detect):
* plain, compose, journal_short: ANSI colour codes and NUL bytes are removed from the whole
  block first (neither spans a newline: line numbers stay), so a literal they split is found.
* podman_ts: raw lines (the envelope needs podman's bytes); a line holding ESC or NUL, or a
  second podman stamp (podman continued a partial line on it), goes on with hit None, with the
  lines before it under the same stamp (the joining rule counts the bytes of one conmon read).
* cri, docker_json, journal_json: joining pieces (and JSON escapes) decide what a line says, so
  every line goes on; parse.py filters the envelope's records on their text.
"""

from __future__ import annotations

import re
from typing import Iterable, Iterator

from bootlog.read.sources import Blocks

TRACEBACK = "Traceback (most recent call last)"
CONTEXT = 200  # lines after a traceback start kept whatever they hold

try:  # a native dependency: its import fails only where it ships no wheel
    import hyperscan as _hs
except ImportError:  # pragma: no cover - depends on the platform
    _hs = None

PREFILTERED = ("plain", "podman_ts", "compose", "journal_short")
# a podman stamp inside a line (not at its start): where podman continued a partial line
_EMBEDDED_STAMP = rb"[^\n]\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:\d\d) "
_STAMP = re.compile(_EMBEDDED_STAMP)
_LEAD_STAMP = re.compile(rb"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:\d\d) ?")
_PODMAN_RUN = 8192  # bytes looked back over: a whole conmon read (envelope.CONMON_BUF)


ANSI_B = re.compile(rb"\x1b\[[0-9;?]*[A-Za-z]")


def strip_codes(raw: bytes) -> bytes:
    """Bytes without NULs and ANSI colour codes, removed until none is left (removing one can
    join the bytes around it into another), so that stripping twice is stripping once (the scan
    strips a whole block, then the envelope each line)."""
    if b"\x00" in raw:
        raw = raw.replace(b"\x00", b"")
    while b"\x1b" in raw:
        done = ANSI_B.sub(b"", raw)
        if done == raw:
            break
        raw = done
    return raw


def minimal(literals: Iterable[str]) -> list[bytes]:
    """The literals without those that contain another: a line holding the longer holds the
    shorter, so searching for the shorter alone finds the same lines.  Sorted, so the order
    never depends on the process."""
    lits = sorted({x.encode("utf-8") for x in literals if x}, key=lambda b: (len(b), b))
    kept: list[bytes] = []
    for lit in lits:
        if not any(k in lit for k in kept):
            kept.append(lit)
    return kept


def _escape(lit: bytes) -> bytes:
    """A literal as a hyperscan regex that matches exactly its bytes."""
    return b"".join(bytes([c]) if chr(c).isalnum() and c < 128 else b"\\x%02x" % c for c in lit)


class Search:
    """Which lines of a block hold one of the literals (and, for podman_ts, a second stamp);
    which of the literals a text holds (which(): the catalogue's per-line test)."""

    def __init__(self, literals: Iterable[str], engine: str | None = None, *, every: bool = False) -> None:
        # every: keep each literal (which() names them); else only the minimal set
        self.literals = [x.encode("utf-8") for x in literals] if every else minimal(literals)
        self.engine = engine or ("hyperscan" if _hs is not None else "python")
        self._lens = [len(x) for x in self.literals]
        self._db = self._stamp_db = None
        if self.engine == "hyperscan" and self.literals:
            self._db = self._compile(stamps=False)
            if self._db is None:  # pragma: no cover - a libhs that refuses: the same answer in Python
                self.engine = "python"

    def _compile(self, stamps: bool):
        """The literals (and with `stamps` the second-stamp pattern, id len(literals)) as one
        hyperscan database; the stamp pattern costs a third more per byte, so only podman's
        logs are searched with it."""
        exprs = [_escape(x) for x in self.literals] + ([_EMBEDDED_STAMP] if stamps else [])
        try:
            db = _hs.Database(mode=_hs.HS_MODE_BLOCK)
            db.compile(expressions=exprs, ids=list(range(len(exprs))), elements=len(exprs), flags=[0] * len(exprs))
            return db
        except Exception:  # noqa: BLE001  # pragma: no cover - no database: the pure-Python search runs
            return None

    def which(self, text: str) -> list[int]:
        """Indexes of the literals `text` holds, ascending."""
        raw = text.encode("utf-8", "surrogatepass")
        if self._db is None:
            return [i for i, lit in enumerate(self.literals) if lit in raw]
        found: set[int] = set()
        nlit = len(self._lens)
        self._db.scan(raw, match_event_handler=lambda i, _f, _t, _fl, _c: found.add(i) if i < nlit else None)
        return sorted(found)

    def holds(self, text: str) -> bool:
        """Whether a line's text holds one of the literals."""
        raw = text.encode("utf-8", "surrogatepass")
        if self._db is None:
            return any(lit in raw for lit in self.literals)
        return bool(self.lines(raw)[0])

    def lines(self, block: bytes, stamps: bool = False) -> tuple[list[int], list[int]]:
        """(sorted start offsets of the lines holding a literal, those holding a second podman
        stamp: only when `stamps`)."""
        db = self._db
        if db is not None and stamps:
            if self._stamp_db is None:
                self._stamp_db = self._compile(stamps=True) or db
            db = self._stamp_db
        if db is not None:
            hits: list[int] = []
            stamp_hits: list[int] = []
            lens, nlit = self._lens, len(self._lens)
            add, add_stamp = hits.append, stamp_hits.append

            def on_match(i: int, _from: int, to: int, _flags: int, _ctx: object) -> None:
                if i < nlit:
                    add(to - lens[i])
                else:
                    add_stamp(to - 1)

            try:
                db.scan(block, match_event_handler=on_match)
            except Exception:  # noqa: BLE001  # pragma: no cover - hyperscan gave up on this block
                return self._python(block, stamps)
            return _line_starts(block, hits), _line_starts(block, stamp_hits) if stamps else []
        return self._python(block, stamps)

    def _python(self, block: bytes, stamps: bool) -> tuple[list[int], list[int]]:
        starts: set[int] = set()
        for lit in self.literals:
            starts.update(_holding(block, lit))
        found = sorted(starts)
        if not stamps:
            return found, []
        return found, _line_starts(block, [m.end() - 1 for m in _STAMP.finditer(block)])


def _holding(block: bytes, needle: bytes) -> Iterator[int]:
    """The start offsets of the lines that hold `needle`, in order."""
    find = block.find
    i = find(needle)
    while i >= 0:
        yield block.rfind(b"\n", 0, i) + 1
        nl = find(b"\n", i)
        if nl < 0:
            return
        i = find(needle, nl + 1)


def _line_starts(block: bytes, offsets: list[int]) -> list[int]:
    """Offsets inside lines -> the sorted, distinct start offsets of those lines."""
    offsets.sort()
    rfind = block.rfind
    out: list[int] = []
    last_end = -1
    for pos in offsets:
        if pos <= last_end:
            continue  # another hit in a line already taken
        start = rfind(b"\n", 0, pos) + 1
        out.append(start)
        end = block.find(b"\n", pos)
        last_end = end if end >= 0 else len(block)
    return out


class Lines:
    """The candidate lines of a log: iterate for (line number, raw bytes, hit); afterwards
    `lines_seen` holds the number of physical lines read, `cut_lines` the overlong ones."""

    def __init__(
        self,
        chunks: Iterable[bytes],
        fmt: str,
        search: Search | None,
        *,
        start_line: int = 1,
        context: int = CONTEXT,
        owed: int = 0,
    ) -> None:
        # owed: context lines still owed to a traceback start before these bytes (watch reads a
        # log in batches); afterwards, those owed past them
        self.owed = owed
        self.blocks = Blocks(chunks)
        self.fmt, self.search, self.start_line, self.context = fmt, search, start_line, context
        # a byte hit is a hit in the text only where the text is the line's bytes, decoded
        self.exact = fmt in ("plain", "podman_ts")
        self.lines_seen = 0
        self.joined_cut = 0  # joined lines cut by the envelope (count_cut)
        self._tb = TRACEBACK.encode()

    @property
    def cut_lines(self) -> int:
        return self.blocks.cut_lines + self.joined_cut

    def count_cut(self) -> None:
        """One more line cut at sources.LINE_MAX, where the envelope joined it from pieces."""
        self.joined_cut += 1

    def __iter__(self) -> Iterator[tuple[int, bytes, bool | None]]:
        return self._candidates() if self.fmt in PREFILTERED else self._every()

    def _every(self) -> Iterator[tuple[int, bytes, bool | None]]:
        n = self.start_line - 1
        for block in self.blocks:
            lines = block.split(b"\n")
            if block.endswith(b"\n"):
                lines.pop()
            for line in lines:
                n += 1
                yield n, line, None
        self.lines_seen = n - self.start_line + 1

    def _regions(self) -> Iterator[tuple[bytes, int]]:
        """(bytes, where the lines to read now end) per block, each ending with a newline.  A
        podman log's last _PODMAN_RUN bytes of lines are read with the next block: a line there
        may need the lines before it (_podman_odd), which must then be read first, in order."""
        podman = self.fmt == "podman_ts"
        held = b""
        for block in self.blocks:
            if not block.endswith(b"\n"):  # the log's last line: a newline, so that a line left
                block += b"\n"  # empty by the cleaning is still a line (and owed context)
            if not podman:
                yield strip_codes(block), -1
                continue
            data = held + block if held else block
            upto = data.rfind(b"\n", 0, max(0, len(data) - _PODMAN_RUN)) + 1
            held = data[upto:]
            yield data, upto
        if held:
            yield held, len(held)

    def _candidates(self) -> Iterator[tuple[int, bytes, bool | None]]:
        podman = self.fmt == "podman_ts"
        yes, no = (True, False) if self.exact else (None, None)
        lineno = self.start_line  # the number of the block's first line
        owed = self.owed  # context lines still owed, carried across blocks
        tb = self._tb
        for block, upto in self._regions():
            size = len(block) if upto < 0 else upto  # the lines to read now: up to here
            if not size:
                continue
            hits, stamped = self.search.lines(block, stamps=podman)
            odd = _podman_odd(block, stamped) if podman else set()
            starts = sorted(odd.union(hits)) if odd else hits
            nstarts = len(starts)
            count, find = block.count, block.find
            pos = prev = before = 0  # pos: the next line not looked at; before: newlines before prev
            i = 0
            while True:
                while i < nstarts and starts[i] < pos:
                    i += 1
                if owed > 0:  # context owed: the next line, whatever it holds
                    if pos >= size:
                        break
                    start = pos
                    owed -= 1
                elif i == nstarts or starts[i] >= size:
                    break
                else:  # the next proposed line
                    start = starts[i]
                if i < nstarts and starts[i] == start:
                    i += 1
                    hit = None if odd and start in odd else yes
                else:
                    hit = no
                end = find(b"\n", start)
                before += count(b"\n", prev, start)
                prev = start
                line = block[start:end]
                if tb in line:
                    owed = self.context
                yield lineno + before, line, hit
                pos = end + 1
            lineno += count(b"\n", 0, size)
        self.lines_seen = lineno - self.start_line
        self.owed = owed


def _podman_odd(block: bytes, stamped: list[int]) -> set[int]:
    """Start offsets of the podman lines the envelope must read in full: those holding ESC or NUL
    (a literal may hide behind them), those holding a second stamp, and the lines before each of
    those under the same stamp, up to half a conmon read (the envelope's joining rule counts them)."""
    odd = {*_holding(block, b"\x1b"), *_holding(block, b"\x00")}
    for start in stamped:
        odd.add(start)
        m = _LEAD_STAMP.match(block, start)
        if m is None:
            continue
        stamp, back, at = m.group().rstrip(b" "), 0, start
        while at > 0 and back < _PODMAN_RUN:
            prev = block.rfind(b"\n", 0, at - 1) + 1
            if block.startswith(stamp, prev) or _LEAD_STAMP.match(block, prev) is None:
                odd.add(prev)  # the same read (its bytes count), or a line of no read (no stamp)
            elif block.find(stamp, prev, at) >= 0:
                odd.add(prev)  # the read began inside this line (after a second stamp)
                break
            else:
                break
            back += at - prev
            at = prev
    return odd
