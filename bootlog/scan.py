"""Fast candidate search: only the Records whose text holds a literal (plus context after some).

Scanner.records(chunks) yields exactly what `select(envelope.records(chunks), ...)` yields, with
the same line numbers, without decoding most lines:

* plain logs: big blocks cut at a newline; ANSI codes and NULs are stripped from the whole
  block (neither spans a newline, so line numbers stay and the bytes equal envelope.clean()'s
  per line); literal hits are searched over the whole block; only lines holding a hit (and
  the context owed to an `after` key) are decoded and re-checked on their text.  A raw read
  (the reader process) cuts a block's lines all at once: in native code where bootlog/_linecut.c
  was built (then numpy is never imported, and a big file's blocks are views of reused
  buffers, blockread.py), else with numpy (_np_lines).
* podman -t: the same search over raw blocks (plus every line holding ESC or NUL); lines of
  the usual shape only advance envelope.PodmanTs' run state, the rest go through it in full.
  With numpy (a read past NUMPY_AFTER bytes; a raw read takes it at once) the odd lines of a
  block are found at once (their line table in native code where it was built) and
  the usual ones are never looked at one by one: the run state a read line needs is worked out
  from the lines just before it (_podman_gap).  A raw read with hyperscan also sends the usual
  lines with a hit in their text as they are, stamp included, a run at a time (_podman_runs).
  Without numpy, line by line: the same records.
* CRI, docker/journald JSON, compose: joining decides what a line is, so envelope.records()
  plus the same filter (with an Aho-Corasick text test when available).

Hit engines (ENGINES): "hyperscan" (Intel Hyperscan's literal matcher, in process: the fastest),
"rg"/"grep" (the system's ripgrep / GNU grep on each block, run one block ahead in the
background), "ahocorasick" (pyahocorasick) and "find" (bytes.find per literal, pure Python). Every engine only *proposes* lines, and every proposal is re-checked on
its text, so all give identical output. BOOTLOG_NO_ACCEL=1 forces "find"; BOOTLOG_ACCEL=NAME
picks one.
"""
from __future__ import annotations

import math
import os
import re
from bisect import bisect_left, bisect_right

TYPE_CHECKING = False
if TYPE_CHECKING:  # (typing for the annotations only: importing it costs ~5 ms of every start)
    from typing import Callable, Iterable, Iterator

from bootlog import envelope
from bootlog.records import Record

# bytes per search block: big enough that per-block overhead vanishes (an in-process search costs
# the same per byte from ~1 MiB up, and every block in flight is resident: 8 MiB blocks took
# 70 MiB in a reader process, 2 MiB 41 MiB); rg/grep start a process per block: 4x that
BLOCK = 2 << 20
NUMPY_AFTER = 16 << 20  # bytes read before a Scanner imports numpy (see Scanner.__init__)
_TOOL_BLOCKS = 4

_AC: list = []  # pyahocorasick (or None), imported on first use: a plain read never needs it


def _aho():
    """The ahocorasick module, or None where it is not installed."""
    if not _AC:
        try:  # optional accelerator
            import ahocorasick
        except ImportError:  # pragma: no cover - depends on the environment
            ahocorasick = None
        _AC.append(ahocorasick)
    return _AC[0]


def _load_hyperscan():
    """hyperscan's compiled module (all that `import hyperscan` re-exports), loaded without the
    package's __init__: that imports typing for a NamedTuple bootlog never uses, ~5 ms of a
    ~50 ms re-ingest.  The package itself where its module cannot be found that way."""
    import sys

    name = "hyperscan._hs_ext"
    mod = sys.modules.get(name)
    if mod is None:
        try:
            try:  # (what importlib.machinery re-exports, loaded at every start: importing
                # importlib.machinery itself costs ~0.5 ms)
                import _frozen_importlib_external as machinery
            except ImportError:  # pragma: no cover - not CPython
                from importlib import machinery
            ExtensionFileLoader, PathFinder = machinery.ExtensionFileLoader, machinery.PathFinder
            pkg = PathFinder.find_spec("hyperscan")
            where = pkg.submodule_search_locations if pkg is not None else None
            spec = PathFinder.find_spec(name, list(where)) if where else None
            if spec is not None and isinstance(spec.loader, ExtensionFileLoader):
                mod = spec.loader.create_module(spec)
                spec.loader.exec_module(mod)
                sys.modules[name] = mod  # (a later `import hyperscan` takes it from here)
        except Exception:  # pragma: no cover - an unusual install: the package, as it is
            mod = None
    if mod is None or not hasattr(mod, "Database"):
        try:
            import hyperscan as mod
        except ImportError:  # pragma: no cover - depends on the environment
            return None
    return mod


_hs = _load_hyperscan()
try:  # bootlog's own (_linecut.c, built by `pip install .` where a C compiler is): _np_lines'
    # cut, _podman_table's line table and _clean_block's test, in native code
    from bootlog._linecut import clean as _native_clean, cut as _native_cut, podman_lines as _native_podman
except ImportError:  # pragma: no cover - depends on the build
    _native_clean = _native_cut = _native_podman = None

# Hit finders, fastest first. "rg"/"grep" run the system's ripgrep / GNU grep over each block
# (`-F -a -o -b`: byte offset of every literal hit); pure Python cannot search ~70 literals
# at more than a few tens of MB/s. "find" (bytes.find per literal) is the pure-Python fallback.
ENGINES = ("hyperscan", "rg", "grep", "ahocorasick", "find")
_TMPDIR = "/dev/shm" if os.access("/dev/shm", os.W_OK) else None


def available_engines() -> list[str]:
    import shutil  # (not at import: a re-ingest's start never looks for tools)

    out = ["hyperscan"] if _hs is not None else []
    out += [e for e in ("rg", "grep") if shutil.which(e)]
    if _aho() is not None:
        out.append("ahocorasick")
    return out + ["find"]


def _pick_engine(accel: bool | str | None) -> str:
    """accel: None = from the environment (BOOTLOG_NO_ACCEL=1 -> "find", BOOTLOG_ACCEL=NAME
    picks one), True = fastest available, False = "find", or an engine name."""
    if accel is None:
        if os.environ.get("BOOTLOG_NO_ACCEL", "") in ("1", "true", "yes"):
            return "find"
        accel = os.environ.get("BOOTLOG_ACCEL") or True
    if accel is False or accel == "none":
        return "find"
    if accel is True and _hs is not None:
        return "hyperscan"  # the fastest: no need to look for the others on PATH
    have = available_engines()
    if accel is True:
        return have[0]
    if accel not in ENGINES:
        raise ValueError(f"unknown scan engine: {accel}")
    return accel if accel in have else "find"


def _minimal(literals: Iterable[bytes]) -> list[bytes]:
    """Drop literals that contain another literal: a line holding the longer one holds the
    shorter, so searching for the shorter alone finds the same lines.  In one order whatever the
    process's hash seed (shortest first, then bytewise): the kept hyperscan database is found
    again by it."""
    lits = sorted(set(x for x in literals if x), key=lambda x: (len(x), x))
    # kept: the literals that hold no other (one that holds a dropped literal holds what that
    # one holds).  Each literal is looked for once in all of them joined, not in each: a few
    # dozen searches instead of thousands of `in` tests (~0.4 ms of every start); a hit that
    # runs across the join is no hit, which `in` on the one literal tells
    hay = b"\0".join(lits)
    starts: list[int] = []
    at = 0
    for lit in lits:
        starts.append(at)
        at += len(lit) + 1
    held = set()
    find = hay.find
    for i, m in enumerate(lits):
        p = find(m)
        while p >= 0:
            j = bisect_right(starts, p) - 1
            if j != i and m in lits[j]:
                held.add(j)
            p = find(m, p + 1)
    return [lit for j, lit in enumerate(lits) if j not in held]


def select(records: Iterable[Record], literals: Iterable[str],
           after: dict[str, int] | None = None) -> Iterator[Record]:
    """The reference filter: records holding any literal (or an `after` key), plus the next N
    records after each record holding an `after` key."""
    after = dict(after or {})
    lits = [x for x in dict.fromkeys([*literals, *after]) if x]
    remaining = 0
    for rec in records:
        text = rec.text
        keep = remaining > 0 or any(lit in text for lit in lits)
        if remaining > 0:
            remaining -= 1
        for key, n in after.items():
            if key in text and n > remaining:
                remaining = n
        if keep:
            yield rec


class Scanner:
    """Candidate lines of a log. After a records() run, lines_seen holds the number of physical
    lines read (the envelope's line count), also for lines that were never decoded."""

    def __init__(self, literals: Iterable[str], after: dict[str, int] | None = None, *,
                 accel: bool | str | None = None, vectorize: bool | None = None,
                 native: bool = True) -> None:
        self.after = {k: int(v) for k, v in (after or {}).items() if k}
        self.literals = [x for x in dict.fromkeys([*literals, *self.after]) if x]
        self._bmin = _minimal(x.encode("utf-8") for x in self.literals)
        self._tmin = [b.decode("utf-8") for b in self._bmin]
        self.engine = _pick_engine(accel) if self._bmin else "find"
        self._hs_db = None
        if self.engine == "hyperscan":
            # the binding passes patterns as C strings: a NUL would cut a literal short
            if not any(b"\x00" in b for b in self._bmin):
                self._hs_db = _hs_database(self._bmin)
            if self._hs_db is None:  # cannot use it here: the next engine, same answer
                self.engine = next(e for e in available_engines() if e != "hyperscan")
        if self.engine in ("rg", "grep") and any(b"\x00" in b for b in self._bmin):
            self.engine = "ahocorasick" if _aho() is not None else "find"  # argv cannot hold NUL
        self._hs_sorted = any(b"\n" in b for b in self._bmin)  # hits of such may start a line earlier
        self._hs_len = [len(b) for b in self._bmin]
        # a literal the byte search finds in a line's bytes is in its decoded text too (UTF-8
        # resynchronises after bad bytes), unless it ends in "\r" (cut off the text) or spans lines
        self._exact = not any(lit.endswith("\r") or "\n" in lit for lit in self._tmin)
        # ids of the literals inside an `after` key: a block where none of them hit holds no key
        # (the key holds one of the minimal literals), and the raw read skips looking for it
        keys_b = [k.encode("utf-8") for k in self.after]
        self._hs_key_ids = [i for i, b in enumerate(self._bmin) if any(b in k for k in keys_b)]
        self._hs_ids = bytearray(len(self._bmin))
        self._key_block: bytes | None = None  # the block _starts_hs scanned last ...
        self._key_seen = False  # ... and whether it holds one (see _key_in)
        self.accelerated = self.engine != "find"
        self._auto = None
        self._argv: list[str] | None = None
        self._raw_hits = False  # _starts_hs gives the hits' own offsets, not their lines' starts
        if self.engine in ("rg", "grep"):
            import shutil
        if self.engine == "rg":
            self._argv = [shutil.which("rg") or "rg", "--no-config", "-F", "-a", "-o", "-b", "-N",
                          "--no-filename", "--color=never", "--encoding", "none"]
        elif self.engine == "grep":
            self._argv = [shutil.which("grep") or "grep", "-F", "-a", "-o", "-b", "--color=never"]
        if self._argv is not None:
            for b in self._bmin:
                self._argv += ["-e", b.decode("utf-8")]
        if self.engine not in ("find", "hyperscan") and _aho() is not None:  # also the fallback if rg/grep fail
            auto = _aho().Automaton()
            for b in self._bmin:
                # latin-1 maps every byte to one code point: string offsets == byte offsets
                auto.add_word(b.decode("latin-1"), len(b))
            auto.make_automaton()
            self._auto = auto
        self.lines_seen = 0
        self.format: str | None = None
        # numpy finds a podman log's odd lines many times faster than Python can look at each
        # line; importing it costs ~0.15 s, so a read takes it once NUMPY_AFTER bytes went by
        # (vectorize None), from the start (True) or never (False, or BOOTLOG_NO_NUMPY=1)
        self._np = None
        self._np_after: float = NUMPY_AFTER if vectorize is None else (0 if vectorize else math.inf)
        if os.environ.get("BOOTLOG_NO_NUMPY"):
            self._np_after = math.inf
        self._read_bytes = 0
        self._has: Callable[[str], bool] | None = None
        # a plain log's raw read cuts a block's lines in native code where it was built (the
        # same bytes as _np_lines, without numpy: its import is ~60 ms of the reader's time);
        # native False, or BOOTLOG_NO_NATIVE=1, leaves it out
        native = native and not os.environ.get("BOOTLOG_NO_NATIVE")
        self._cut = _native_cut if native else None
        self._podman_cut = _native_podman if native else None  # (a podman -t block's line table)
        if self._np_after == 0:
            self._take_numpy()

    def _take_numpy(self) -> None:
        self._np_after = math.inf  # (one try)
        try:
            import numpy

            self._np = numpy
        except ImportError:  # the same answers without it, slower
            pass

    def _counted(self, block: bytes) -> None:
        self._read_bytes += len(block)
        if self._read_bytes >= self._np_after:
            self._take_numpy()

    # ------------------------------------------------------------ public

    def records(self, chunks: Iterable[bytes], fmt: str | None = None, *, start_line: int = 1,
                raw: bool = False) -> Iterator[Record]:
        """raw: a plain log's records as (lineno, line bytes) tuples, a block's at once as
        ("lines", line numbers as int64 bytes, the lines joined by newlines) (_np_lines), or
        (lineno, text, None, None) when a literal or context key is not plain ASCII (the reader
        process sends those: no Record made only to be taken apart again); a podman -t log's
        runs of usual lines as ("plines", line numbers, the lines with their stamps joined by
        newlines) (_podman_runs) among Records; other formats give Records."""
        self.lines_seen = 0
        self._raw_hits = False  # (_plain and _podman set it for their own read)
        self._key_block = None
        if fmt is None:
            fmt, chunks = envelope.sniff(chunks)
        self.format = fmt
        if any("\ufffd" in lit for lit in self._tmin):
            fmt = "_filter"  # U+FFFD also stands for bad bytes: no byte search can find it
        if fmt == "plain":
            return self._plain(chunks, start_line, raw)
        if fmt == "podman_ts":
            return self._podman(chunks, start_line, raw)
        if fmt == "cri":
            return self._cri(chunks, start_line)
        counted = self._count(chunks)
        return self._filter(envelope.records(counted, self.format, start_line=start_line))

    def _filter(self, records: Iterable[Record]) -> Iterator[Record]:
        """select() with a faster literal test: one Aho-Corasick pass per text when the
        automaton is available, instead of one `in` per literal."""
        return self._kept(records, [0])

    def _kept(self, recs: Iterable[Record], owed: list[int]) -> Iterator[Record]:
        """The records holding a literal or owed as context; owed[0]: the context lines still
        owed, carried from call to call."""
        after, has = self.after, self._text_test()
        remaining = owed[0]
        for rec in recs:
            text = rec.text
            keep = remaining > 0 or has(text)
            if remaining > 0:
                remaining -= 1
            for key, n in after.items():
                if n > remaining and key in text:
                    remaining = n
            owed[0] = remaining
            if keep:
                yield rec

    def _text_test(self) -> Callable[[str], bool]:
        """The literal test of a record's text, made on first use (an automaton: not free)."""
        if self._has is None:
            self._has = literal_test(self._tmin, accel=self.engine != "find")
        return self._has

    # ------------------------------------------------------------ helpers

    def _count(self, chunks: Iterable[bytes]) -> Iterator[bytes]:
        last = b"\n"
        for c in chunks:
            if c.__class__ is memoryview:  # (a block view, blockread.py: these read bytes)
                c = bytes(c)
            if c:
                self.lines_seen += c.count(b"\n")
                last = c
            yield c
        if not last.endswith(b"\n"):
            self.lines_seen += 1

    def _blocks(self, chunks: Iterable[bytes], views: bool = False) -> Iterator[bytes]:
        """Blocks of about BLOCK bytes that end at a newline (the last one may not).  A chunk that
        is a memoryview is a block already (blockread.blocks): with `views` it goes on as it is,
        else as bytes (the reads below need them)."""
        limit = BLOCK * (_TOOL_BLOCKS if self._argv is not None else 1)
        pending: list[bytes] = []
        size = 0
        nl_at = -1  # index in pending of the newest chunk holding a newline
        for c in chunks:
            if c.__class__ is memoryview:
                if views and not pending:
                    yield c  # type: ignore[misc]
                    continue
                c = bytes(c)
            if not c:
                continue
            pending.append(c)
            size += len(c)
            if b"\n" in c:
                nl_at = len(pending) - 1
            if size < limit or nl_at < 0:
                continue  # (nl_at < 0: one huge line so far, keep collecting)
            tail = pending[nl_at]
            cut = tail.rfind(b"\n") + 1
            yield b"".join([*pending[:nl_at], tail[:cut]])  # one copy per block
            pending = ([tail[cut:]] if cut < len(tail) else []) + pending[nl_at + 1:]
            size = sum(len(x) for x in pending)
            nl_at = -1
        if pending:
            yield b"".join(pending)

    @staticmethod
    def _lines_with(cb: bytes, needles: Iterable[bytes]) -> set[int]:
        """Start offsets of the lines of `cb` holding any of `needles` (bytes.find)."""
        find, rfind = cb.find, cb.rfind
        seen: set[int] = set()
        for lit in needles:
            i = find(lit)
            while i >= 0:
                seen.add(rfind(b"\n", 0, i) + 1)
                nl = find(b"\n", i)
                if nl < 0:
                    break
                i = find(lit, nl + 1)
        return seen

    def _starts(self, cb: bytes) -> list[int]:
        """Sorted start offsets of lines of `cb` that may hold a literal."""
        return self._begin(cb)()

    def _begin(self, cb: bytes) -> Callable[[], list[int]]:
        """Start the hit search of a block; the returned call gives its line starts. rg/grep
        run in the background meanwhile, so Python works on the previous block in parallel."""
        if self._hs_db is not None:
            return lambda: self._starts_hs(cb)
        if cb.__class__ is memoryview:  # (hyperscan gave up on an earlier block: bytes for these)
            cb = bytes(cb)
        if self._argv is not None:
            env = dict(os.environ, LC_ALL="C")
            f = None
            try:
                # a temporary file, not a pipe: 8 MiB through a pipe costs thousands of small
                # writes and polls, more than the search itself
                import subprocess  # (only this engine runs a tool: imported here, not at every start)
                import tempfile

                f = tempfile.NamedTemporaryFile(prefix="bootlog-scan-", dir=_TMPDIR)
                f.write(cb)
                f.flush()
                proc = subprocess.Popen([*self._argv, f.name], stdout=subprocess.PIPE,
                                        stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL,
                                        env=env)
            except (OSError, ValueError):
                if f is not None:
                    f.close()
                self._argv = None
                return lambda: self._starts_py(cb)

            def finish() -> list[int]:
                try:
                    out, _ = proc.communicate()
                finally:
                    f.close()
                if proc.returncode == 1 and not out:
                    return []
                if proc.returncode != 0:
                    self._argv = None  # the tool fails here: Python for the rest, same answer
                    return self._starts_py(cb)
                return self._hit_lines(cb, (int(row[:row.find(b":")])
                                            for row in out.split(b"\n") if b":" in row))
            return finish
        return lambda: self._starts_py(cb)

    @staticmethod
    def _hit_lines(cb: bytes, hits: Iterable[int]) -> list[int]:
        """Ordered hit offsets -> start offsets of the lines holding them."""
        out: list[int] = []
        line_end = -1
        find, rfind = cb.find, cb.rfind
        for pos in hits:
            if pos <= line_end:
                continue  # another hit in a line already taken
            out.append(rfind(b"\n", 0, pos) + 1)
            line_end = find(b"\n", pos)
            if line_end < 0:
                break
        return out

    def _starts_hs(self, cb: bytes) -> list[int]:
        """Hyperscan: one in-process pass over the block, every literal at once."""
        starts: list[int] = []
        add = starts.append
        lens = self._hs_len
        ids = self._hs_ids
        ids[:] = bytes(len(ids))
        self._key_block = None

        def on_match(i: int, _from: int, to: int, _flags: int, _ctx: object) -> None:
            add(to - lens[i])  # (one callback per hit: keep it small)
            ids[i] = 1
        try:
            self._hs_db.scan(cb, match_event_handler=on_match)
        except Exception:  # hyperscan.HyperscanError: Python for the rest, same answer
            self._hs_db = None
            return self._starts_py(bytes(cb) if cb.__class__ is memoryview else cb)
        self._key_block, self._key_seen = cb, any(ids[i] for i in self._hs_key_ids)
        if self._hs_sorted:
            starts.sort()
        if self._raw_hits:  # (the caller finds their lines)
            return starts
        # reported in order of end offset; without a newline inside a literal, a later start
        # in an earlier line is impossible, so starts only go backwards within one line
        return self._hit_lines(cb, starts)

    def _key_in(self, cb: bytes) -> bool | None:
        """Whether block cb holds an `after` key, as hyperscan's scan of it found (the literals
        inside a key hit); None when that scan was not of this very block (another engine, or
        hyperscan gave up): then the caller looks itself."""
        return self._key_seen if self._key_block is cb else None

    def _starts_py(self, cb: bytes) -> list[int]:
        if self._auto is not None:
            return self._hit_lines(cb, (end - n + 1 for end, n in
                                        self._auto.iter(cb.decode("latin-1"))))
        return sorted(self._lines_with(cb, self._bmin))

    def _searched(self, blocks: Iterable[bytes], prep: Callable[[bytes], bytes]
                  ) -> Iterator[tuple[bytes, list[int]]]:
        """(prepared block, candidate line starts), searching one block ahead."""
        pending: tuple[bytes, Callable[[], list[int]]] | None = None
        try:
            for block in blocks:
                cb = prep(block)
                nxt = (cb, self._begin(cb))
                if pending is not None:
                    yield pending[0], pending[1]()
                pending = nxt
            if pending is not None:
                cb, done = pending
                pending = None
                yield cb, done()
        finally:
            if pending is not None:
                pending[1]()  # reap the background search of an abandoned run

    def _plain(self, chunks: Iterable[bytes], start_line: int, raw: bool = False) -> Iterator[Record]:
        owed = [0]  # context lines still owed to an `after` key, carried across blocks
        lineno = start_line
        after = tuple(self.after.items())
        tmin = self._tmin
        exact = self._exact
        bom = b"\xef\xbb\xbf"
        # raw: the reader process sends a line's bytes, decoded in the parent a batch at a time
        # (reader.py); an ASCII key is in the bytes exactly when it is in the decoded text
        in_bytes = raw and exact and all(key.isascii() for key, _ in after)
        after_b = tuple((key.encode(), n) for key, n in after)
        # in_bytes with the native cut or numpy: a block's lines found at once (_np_lines), and
        # hyperscan's hits left as they are (the cut finds their lines; the per-line path
        # below, _hit_lines)
        self._raw_hits = in_bytes and self._hs_db is not None
        # block views (memoryviews, blockread.py) stay views for hyperscan and the native cut,
        # which read them where they are; a block that takes any other way becomes bytes
        views = self._raw_hits and self._cut is not None and _native_clean is not None
        for cb, starts in self._searched(self._blocks(chunks, views), _view_or_clean):
            seen = self._key_in(cb)
            if cb.__class__ is memoryview:
                # (looked at after the search: the block is in the CPU's cache by then)
                if not _native_clean(cb):  # ANSI codes or NULs: cleaned, and searched again
                    cb = _clean_block(bytes(cb))
                    starts = self._starts(cb)
                    seen = self._key_in(cb)
                elif owed[0] > 0 or seen is not False:
                    cb = bytes(cb)  # (context owed, or a key here: the per-line path below)
            if in_bytes:
                cut = self._cut
                if cut is None:
                    self._counted(cb)
                    np = self._np
                    # (not for a block that one huge line made: numpy's arrays are a few times it)
                    if np is not None and len(cb) <= 2 * BLOCK:
                        cut = lambda cb, hits, at: _np_lines(np, cb, hits, at)  # noqa: E731
                # (seen: hyperscan's answer for this block's bytes, also once they were copied)
                if cut is not None and owed[0] <= 0 and not (
                        seen if seen is not None else any(key in cb for key, _ in after_b)):
                    nums, blob, nlines = cut(cb, starts, lineno)
                    if len(nums):
                        yield ("lines", nums, blob)  # type: ignore[misc]
                    self.lines_seen += nlines
                    lineno += nlines
                    continue
                if self._raw_hits:
                    starts = self._hit_lines(cb, starts)
            before, nlines = self._line_index(cb, starts)
            if in_bytes:
                for pos, end, at_line in _walk(cb, starts, before, lineno, owed):
                    e = end - 1 if end > pos and cb[end - 1] == 13 else end
                    line = cb[pos + 3:e] if cb[pos] == 0xEF and cb.startswith(bom, pos, e) else cb[pos:e]
                    remaining = owed[0] - 1 if owed[0] > 0 else 0  # (every line here is kept)
                    for key, n in after_b:
                        if n > remaining and key in line:
                            remaining = n
                    owed[0] = remaining
                    yield (at_line, line)  # type: ignore[misc]
                self.lines_seen += nlines
                lineno += nlines
                continue
            for pos, end, at_line in _walk(cb, starts, before, lineno, owed):
                # the line without a trailing "\r", then without a leading BOM (one slice)
                e = end - 1 if end > pos and cb[end - 1] == 13 else end
                text = (cb[pos + 3:e] if cb[pos] == 0xEF and cb.startswith(bom, pos, e) else cb[pos:e]
                        ).decode("utf-8", "replace")
                # a line we look at is either owed as context or was proposed by the search,
                # and a proposal in cleaned bytes is a hit in the text (UTF-8 resynchronises
                # after bad bytes), unless a literal ends in "\r" or spans lines
                remaining = owed[0]
                if remaining > 0:
                    remaining -= 1
                    keep = True
                elif exact:
                    keep = True
                else:
                    keep = False
                    for lit in tmin:
                        if lit in text:
                            keep = True
                            break
                for key, n in after:
                    if n > remaining and key in text:
                        remaining = n
                owed[0] = remaining
                if keep:
                    yield (at_line, text, None, None) if raw else Record(at_line, text)  # type: ignore[misc]
            # (_clean_block ends every block with a newline: its lines are its newlines)
            self.lines_seen += nlines
            lineno += nlines
        self._key_block = None  # (the last block: no view of a reader's buffer kept past the read)

    @staticmethod
    def _line_index(cb: bytes, starts: list[int]) -> tuple[list[int], int]:
        """([newlines in cb before each of the sorted `starts`], newlines in cb).  (numpy finds
        them faster, but not by enough to pay for its import and arrays: measured slower.)"""
        count = cb.count
        before: list[int] = []
        add = before.append
        c = prev = 0
        for s in starts:
            if s < prev:  # (never for sorted starts)
                c = prev = 0
            c += count(b"\n", prev, s)
            prev = s
            add(c)
        return before, c + count(b"\n", prev)

    def _podman(self, chunks: Iterable[bytes], start_line: int, raw: bool = False) -> Iterator[Record]:
        """`podman logs -t`: lines in the usual shape (one stamp "…nnnnnnnnnZ ", no second
        "Z " later in the line) only advance the parser's run state, unless the hit search
        proposed them or context is owed; every other line goes to envelope.PodmanTs in full.
        With numpy the odd lines of a block are found at once and the run state is worked out
        from the few lines before each line read (_podman_gap); else line by line.  raw (the
        reader process), with hyperscan and numpy: the usual lines whose text holds a hit go
        out as one message per run (_podman_runs), stamp and text as the line has them."""
        parser = envelope.PodmanTs()
        state = [0, start_line]  # context lines owed, the line number of the next block
        self._raw_hits = raw and self._exact and self._hs_db is not None
        if raw and self._np_after < math.inf:
            # a raw read is the reader process's, forked for a big log only (reader.py): numpy
            # pays for its import within a few blocks (~60 ms, and each block read line by line
            # costs ~15 ms more than with it)
            self._take_numpy()
        for block, starts in self._searched(self._blocks(chunks), _same):
            self._counted(block)
            # raw lines: ESC or NUL bytes can hide a literal from the byte search
            odd = self._lines_with(block, (b"\x1b", b"\x00"))
            # (numpy's arrays are a few times the block: not for a block that one huge line made)
            if self._np is not None and len(block) <= 2 * BLOCK:
                # (a block without the context key, as hyperscan's scan of this very block says,
                # and no context owed: its hits' lines at once)
                fast = self._raw_hits and self._key_in(block) is False and state[0] <= 0
                if self._raw_hits and not fast:
                    starts = self._hit_lines(block, starts)
                yield from self._podman_np(block, starts, odd, parser, state, fast)
            else:
                if self._raw_hits:
                    starts = self._hit_lines(block, starts)
                yield from self._podman_py(block, starts, odd, parser, state)

    def _podman_py(self, block: bytes, starts: list[int], odd: set[int], parser, state: list[int]
                   ) -> Iterator[Record]:
        if odd:
            starts = sorted(odd.union(starts))
        normal = _PODMAN_NORMAL.match
        line_of = parser.line
        lines = _marked_lines(block, starts)
        self.lines_seen += len(lines)
        n = state[1] - 1
        state[1] += len(lines)
        for raw, cand in lines:
            n += 1
            if not cand and state[0] <= 0 and normal(raw) and raw.find(b"Z ", 31) < 0:
                tsb = raw[:30]
                if tsb != parser.run_ts:
                    parser.run_ts, parser.run_bytes = tsb, 0
                parser.run_bytes += len(raw) - 30
                continue
            yield from self._kept(line_of(n, raw), state)

    def _podman_np(self, block: bytes, starts: list[int], odd: set[int], parser, state: list[int],
                   fast: bool = False) -> Iterator[Record]:
        """fast: `starts` are hyperscan's hit offsets, and the block holds no context key."""
        np = self._np
        size = len(block)
        arr = np.frombuffer(block, dtype=np.uint8)
        ls, le, usual = _podman_table(np, arr, self._podman_cut)
        nl = le if block.endswith(b"\n") else le[:-1]  # (the newlines)
        if fast:
            yield from self._podman_runs(np, block, arr, starts, odd, parser, state, ls, le, usual)
            return
        starts = sorted(set(starts).union(odd, ls[~usual].tolist()))
        before = np.searchsorted(nl, starts).tolist() if starts else []
        nlines = len(ls)
        self.lines_seen += nlines
        lineno = state[1]
        state[1] += nlines
        line_of = parser.line
        done = 0  # the parser's run state stands for the lines before this offset
        for pos, end, line in _walk(block, starts, before, lineno, state):
            if pos > done:
                _podman_gap(parser, block, done, pos)
            done = end + 1
            yield from self._kept(line_of(line, block[pos:end]), state)
        if done < size:
            _podman_gap(parser, block, done, size, whole=True)

    def _podman_runs(self, np, block: bytes, arr, hits: list[int], odd: set[int], parser,
                     state: list[int], ls, le, usual) -> Iterator:
        """_podman_np's raw read of a block without the context key: a usual line (not odd, no
        BOM after its stamp) with a hit in its text is kept as the stamp's parser would keep it
        (its text holds a literal: the byte search saw one there), so the runs of such lines go
        out as ("plines", their line numbers as int64 bytes, the lines with their stamps and
        without a last "\r", joined by newlines), and they move the run state as any other usual
        line (_podman_gap).  Every other line the search proposed, or that is not in the usual
        shape, goes through the parser as in _podman_np (an odd line among the runs' lines
        too: the parser's way wins), and so do the lines after one that turned out to owe
        context (a key split by ANSI codes or by podman's stamps)."""
        size = len(block)
        nlines = len(ls)
        self.lines_seen += nlines
        lineno = state[1]
        state[1] += nlines
        h = np.array(hits, dtype=np.int64)
        hl = np.searchsorted(ls, h, side="right") - 1  # the line of each hit
        take = np.zeros(nlines, dtype=bool)
        take[hl[h >= ls[hl] + 31]] = True
        take &= usual
        # (a BOM where the text starts: envelope.clean drops it; those lines go the parser's way)
        room = np.flatnonzero(take & (le - ls >= 34))
        at = ls[room] + 31
        bom = room[(arr[at] == 0xEF) & (arr[at + 1] == 0xBB) & (arr[at + 2] == 0xBF)]
        take[bom] = False
        t = np.flatnonzero(take)
        slow = np.union1d(np.flatnonzero(~usual), bom)
        if odd:
            slow = np.union1d(slow, np.searchsorted(ls, sorted(odd)))
        ends = le[t]
        ends -= (arr[np.maximum(ends - 1, 0)] == 13) & (ends > ls[t] + 31)
        fast_lines, fast_starts, fast_ends = t.tolist(), ls[t].tolist(), ends.tolist()
        slow_lines = slow.tolist()
        line_of = parser.line
        nfast = len(fast_lines)
        a = 0  # the next fast line not yet sent
        done = 0  # the parser's run state stands for the lines before this offset

        def run(b: int) -> tuple:
            return ("plines", (np.array(fast_lines[a:b], dtype=np.int64) + lineno).tobytes(),
                    b"\n".join([block[i:j] for i, j in zip(fast_starts[a:b], fast_ends[a:b])]))

        k, nslow = 0, len(slow_lines)
        cur = -1  # the last line read through the parser
        while True:
            if state[0] > 0:  # context owed: the next line, whatever it is
                idx = cur + 1
                if idx >= nlines:
                    break
            else:
                while k < nslow and slow_lines[k] <= cur:
                    k += 1
                if k >= nslow:
                    break
                idx = slow_lines[k]
            b = bisect_left(fast_lines, idx, a)
            if b > a:
                yield run(b)
                a = b
            if a < nfast and fast_lines[a] == idx:
                a += 1  # (owed as context: read below instead)
            pos, end = int(ls[idx]), int(le[idx])
            if pos > done:
                _podman_gap(parser, block, done, pos)
            done = end + 1
            yield from self._kept(line_of(lineno + idx, block[pos:end]), state)
            cur = idx
        if a < nfast:
            yield run(nfast)
        if done < size:
            _podman_gap(parser, block, done, size, whole=True)

    def _cri(self, chunks: Iterable[bytes], start_line: int) -> Iterator[Record]:
        """Raw k8s-file: whole (F) lines the search did not propose, with no partial line open,
        only advance the joiner's per-stream run; everything else goes through envelope.Cri."""
        parser = envelope.Cri()
        state = [0]  # context records still owed
        n = start_line - 1
        for block, starts in self._searched(self._blocks(chunks), _same):
            odd = self._lines_with(block, (b"\x1b", b"\x00"))
            if odd:
                starts = sorted(odd.union(starts))
            lines = _marked_lines(block, starts)
            self.lines_seen += len(lines)
            for raw, cand in lines:
                n += 1
                if not cand and state[0] <= 0 and parser.skip_whole(raw):
                    continue
                yield from self._kept(parser.line(n, raw), state)
        yield from self._kept(parser.finish(), state)


def literal_test(literals: Iterable[str], *, accel: bool = True) -> Callable[[str], bool]:
    """A test for "the text holds one of these literals": one Aho-Corasick pass when
    pyahocorasick is there (and accel), else plain substring tests (slower, same answer)."""
    lits = tuple(literals)
    if not accel or not lits or _aho() is None:
        return lambda text: any(lit in text for lit in lits)
    auto = _aho().Automaton()
    for lit in lits:
        auto.add_word(lit, True)
    auto.make_automaton()

    def has(text: str) -> bool:
        for _ in auto.iter(text):
            return True
        return False
    return has


def _hs_database(literals: list[bytes]):
    """A compiled Hyperscan block-mode database of the literals, or None.  Kept in the user's
    cache directory once compiled (_hs_cached): compiling bootlog's ~70 literals is ~1.7 ms of
    every start, loading the compiled one ~0.05 ms."""
    if _hs is None or not literals:
        return None
    path = _hs_cache_path(literals)
    db = _hs_cached(path)
    if db is not None:
        return db
    try:
        db = _hs.Database(mode=_hs.HS_MODE_BLOCK)
        db.compile(expressions=list(literals), ids=list(range(len(literals))),
                   elements=len(literals), flags=0, literal=True)
    except Exception:  # pragma: no cover - an old libhs without the literal compiler
        return None
    _hs_keep(path, db)
    return db


def _hs_cache_path(literals: list[bytes]) -> str | None:
    """Where the compiled database of these literals is kept: named by a digest of the literals
    (their order makes the ids) and of the hyperscan build, in $XDG_CACHE_HOME/bootlog (else
    ~/.cache/bootlog); None when BOOTLOG_NO_CACHE is set."""
    if os.environ.get("BOOTLOG_NO_CACHE", "") not in ("", "0"):
        return None
    from bootlog.sha import sha256
    from bootlog.store.where import user_dir

    key = sha256(b"\0".join([str(getattr(_hs, "__version__", "")).encode(), getattr(_hs, "__file__", "").encode(),
                              *literals])).hexdigest()[:32]
    return os.path.join(user_dir("XDG_CACHE_HOME", ".cache"), f"hyperscan-{key}.db")


_HS_KEEP = 16  # databases kept: one per literal set (a --plan's patterns make another) and build


def _hs_prune(where: str) -> None:
    """Remove all but the _HS_KEEP newest kept databases (a new one is written only on a miss)."""
    kept = []
    for name in os.listdir(where):
        if name.startswith("hyperscan-") and name.endswith(".db"):
            try:
                kept.append((os.stat(os.path.join(where, name)).st_mtime, name))
            except OSError:
                pass
    for _, name in sorted(kept)[:-_HS_KEEP]:
        try:
            os.unlink(os.path.join(where, name))
        except OSError:
            pass


def _hs_cached(path: str | None):
    """The database kept at path, or None (none kept, unreadable, or refused by this libhs:
    another version or CPU; hyperscan checks both when it loads one)."""
    if path is None:
        return None
    try:
        with open(path, "rb") as f:
            db = _hs.loadb(f.read(), _hs.HS_MODE_BLOCK)
        db.scratch = _hs.Scratch(db)  # (a loaded database has none: its scans would all fail)
        return db
    except Exception:
        return None


def _hs_keep(path: str | None, db) -> None:
    """Keep a compiled database at path: written whole to a temporary file, then renamed (a
    concurrent bootlog reads the old file or the new one, never half of one).  A cache: any
    failure (a read-only home, a full disk) leaves it unkept."""
    if path is None:
        return
    tmp = f"{path}.{os.getpid()}.tmp"
    try:
        os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
        with open(tmp, "wb") as f:
            f.write(_hs.dumpb(db))
        os.replace(tmp, path)
        _hs_prune(os.path.dirname(path))
    except Exception:
        try:
            os.unlink(tmp)
        except OSError:
            pass


def _clean_block(block: bytes) -> bytes:
    """envelope.clean()'s ANSI and NUL removal over a whole block (neither spans a newline)."""
    end = b"" if block.endswith(b"\n") else b"\n"
    if b"\x1b" in block:
        block = envelope.ANSI_B.sub(b"", block)
    if b"\x00" in block:
        block = block.replace(b"\x00", b"")
    # the log's last line has no newline: add one, so that a last line left empty by the
    # cleaning still counts (and is still owed as context) like the envelope's
    return block + end if end else block


def _view_or_clean(block: bytes) -> bytes:
    """_clean_block, except for a block view (memoryview, blockread.py) that ends with a newline:
    it goes to the search as it is, and _plain looks for anything to clean in it after the
    search (a first pass over it would cost a read of it from memory)."""
    if block.__class__ is memoryview:
        if len(block) and block[-1] == 10:
            return block
        block = bytes(block)
    return _clean_block(block)


def _same(block: bytes) -> bytes:
    return block


# podman's own stamp: RFC 3339 UTC with nanoseconds and "Z", then one space (31 bytes)
_PODMAN_NORMAL = re.compile(rb"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{9}Z ")
# the same test for numpy: per byte of the 31, the lowest and highest byte allowed
_STAMP_SHAPE = b"dddd-dd-ddTdd:dd:dd.dddddddddZ "
_STAMP_LO = bytes(0x30 if c == 0x64 else c for c in _STAMP_SHAPE)
_STAMP_HI = bytes(0x39 if c == 0x64 else c for c in _STAMP_SHAPE)


def _podman_table(np, arr, native=None) -> tuple:
    """(line starts, line ends, usual) of a podman -t block (numpy's uint8 view `arr`): numpy
    arrays with one item per line (the bytes after the last newline are a line too) and whether
    the line is in the usual shape: podman's stamp, and no "Z " after it (it may start an
    embedded stamp).  native: bootlog._linecut.podman_lines, the same (its arrays read-only:
    nothing here changes them in place)."""
    if native is not None:
        ls, le, usual = native(arr)
        return (np.frombuffer(ls, dtype=np.int64), np.frombuffer(le, dtype=np.int64),
                np.frombuffer(usual, dtype=np.bool_))
    size = len(arr)
    nl = np.flatnonzero(arr == 10)
    ls = np.concatenate((np.zeros(1, dtype=np.int64), nl + 1))  # line starts
    if size and arr[-1] == 10:
        ls = ls[:-1]
    le = nl if len(nl) == len(ls) else np.concatenate((nl, np.full(1, size, dtype=nl.dtype)))
    # lines in the usual shape: 31 bytes or more, the stamp's digits and signs in place
    ok = (le - ls) >= 31
    heads = arr[ls[ok][:, None] + np.arange(31)]
    lo, hi = np.frombuffer(_STAMP_LO, dtype=np.uint8), np.frombuffer(_STAMP_HI, dtype=np.uint8)
    usual = np.zeros(len(ls), dtype=bool)
    usual[ok] = ((heads >= lo) & (heads <= hi)).all(axis=1)
    # ... and no "Z " after the stamp
    # (each "Z" then its next byte: "Z" is rare outside the stamps, so this costs a fifth
    # of comparing every pair of bytes)
    zs = np.flatnonzero(arr[:-1] == 90)
    zs = zs[arr[zs + 1] == 32]
    zline = np.searchsorted(ls, zs, side="right") - 1
    usual[zline[(zs - ls[zline]) >= 31]] = False
    return ls, le, usual


def _marked_lines(block: bytes, starts: list[int]) -> list[tuple[bytes, bool]]:
    """(line without its newline, proposed?) for every line of a block; `starts`: the sorted
    offsets of the proposed lines."""
    lines = block.split(b"\n")
    if block.endswith(b"\n"):
        lines.pop()
    out = []
    add = out.append
    ci, ncand = 0, len(starts)
    nxt = starts[0] if ncand else -1
    off = 0
    for raw in lines:
        cand = off == nxt
        if cand:
            ci += 1
            nxt = starts[ci] if ci < ncand else -1
        off += len(raw) + 1
        add((raw, cand))
    return out


def _np_lines(np, cb: bytes, hits: list[int], lineno: int) -> tuple[bytes, bytes, int]:
    """The lines of block `cb` (it ends with a newline) holding the `hits` (offsets inside
    them, in any order), as the reader process sends them: (their line numbers as native int64
    bytes, the lines joined by newlines, the newlines in cb).  Each line as _plain's per-line
    path cuts it: without a "\r" before its newline, then without a leading BOM."""
    a = np.frombuffer(cb, dtype=np.uint8)
    nl = np.flatnonzero(a == 10)
    if not hits:
        return b"", b"", len(nl)
    li = np.searchsorted(nl, np.array(hits, dtype=np.int64))  # line index of each
    # the hits come in order of their lines (hyperscan reports by end offset, and a literal
    # without a newline cannot end later yet start in an earlier line): drop repeats in one
    # pass, instead of np.unique's sort; any other order still gets the sort
    step = np.diff(li)
    if len(step) and step.min() < 0:
        li = np.unique(li)
    else:
        li = li[np.concatenate(([True], step != 0))]
    ends = nl[li]
    starts = np.concatenate(([-1], nl))[li] + 1
    ends -= (a[ends - 1] == 13) & (ends > starts)  # (ends >= 1 when ends > starts)
    bom = np.flatnonzero(ends - starts >= 3)
    if len(bom):
        at = starts[bom]
        bom = bom[(a[at] == 0xEF) & (a[at + 1] == 0xBB) & (a[at + 2] == 0xBF)]
        starts[bom] += 3
    blob = b"\n".join([cb[i:j] for i, j in zip(starts.tolist(), ends.tolist())])
    return (li + lineno).astype(np.int64).tobytes(), blob, len(nl)  # (array("q")'s layout)


def _walk(block: bytes, starts: list[int], before: list[int], lineno: int, owed: list[int]
          ) -> Iterator[tuple[int, int, int]]:
    """(offset, end offset without its newline, line number) of each line of a block to read:
    the proposed lines (sorted `starts`; `before`: the newlines ahead of each), and while
    owed[0] > 0 (context still owed: the caller keeps it current) the lines after them."""
    find, size = block.find, len(block)
    i, nstarts = 0, len(starts)
    pos, line = 0, lineno  # the next line not yet looked at (its number, when it is owed)
    while True:
        if owed[0] <= 0:  # the next proposed line at or after pos
            while i < nstarts and starts[i] < pos:
                i += 1
            if i >= nstarts:
                return
            pos, line = starts[i], lineno + before[i]
            i += 1
        elif pos >= size:
            return
        end = find(b"\n", pos)
        if end < 0:
            end = size
        yield pos, end, line
        pos, line = end + 1, line + 1


def _podman_gap(parser, block: bytes, start: int, stop: int, whole: bool = False) -> None:
    """Advance parser's run state (envelope.PodmanTs: the stamp of the last piece, and the bytes
    printed under it) over the usual-shape lines of block[start:stop], as reading them one by one
    would: only the lines under the last stamp count, and only until they reach half of conmon's
    buffer (the one test that reads run_bytes is run_bytes * 2 >= CONMON_BUF, and it stays true
    while the stamp does).  Unless `whole`, the line at `stop` is read next: when it starts with
    another stamp, it starts a run of its own, and the count is not needed (a line without a
    stamp leaves the run as it is: then it is)."""
    end = stop - 1 if block[stop - 1] == 10 else stop  # the last line, without its newline
    j = block.rfind(b"\n", start, end)
    first = j + 1 if j >= 0 else start
    tsb = block[first:first + 30]
    if not whole and not block.startswith(tsb, stop):
        m = envelope.TS_LEAD.match(block, stop)
        if m is not None and m.group(1) != tsb:
            parser.run_ts, parser.run_bytes = tsb, 0
            return
    acc = 0
    whole = False  # every line of the range is under tsb
    while True:
        acc += end - first - 30
        if first <= start:
            whole = True
            break
        if acc * 2 >= envelope.CONMON_BUF:
            break
        end = first - 1
        j = block.rfind(b"\n", start, end)
        prev = j + 1 if j >= 0 else start
        if block[prev:prev + 30] != tsb:
            break
        first = prev
    if whole and parser.run_ts == tsb:
        parser.run_bytes += acc
    else:
        parser.run_ts, parser.run_bytes = tsb, acc
