"""Ingest: source -> envelope -> vLLM lines -> boots -> store, in one transaction per source.

Everything is parsed before anything is written, so bad input (a truncated gzip half-way through)
leaves the database exactly as it was.  Memory stays bounded whatever the log's length: the
source is streamed, finished stats samples are spilled to a temporary file while parsing (see
"bounded memory" below), so are the boots the splitter retires (a crash loop's thousands: see
Boots), and the store inserts rows in bounded batches.
"""
from __future__ import annotations

import os
import sys
import time
from datetime import datetime

TYPE_CHECKING = False
if TYPE_CHECKING:  # (typing for the annotations only: importing it costs ~5 ms of every start)
    from typing import Iterable, Iterator

from bootlog.plain import record
from bootlog.records import Boot, Metric, Record, Sample


class IngestedBoot:
    """A stored boot of this ingest: its id, whether this ingest created it, and the Boot (read
    back from the spill file when it was retired while parsing: see Boots)."""

    __slots__ = ("id", "created", "_boot", "_boots", "_i")

    def __init__(self, id: int, created: bool, boot: Boot | None = None, *,
                 boots: "Boots | None" = None, index: int = 0) -> None:
        self.id, self.created, self._boot, self._boots, self._i = id, created, boot, boots, index

    @property
    def boot(self) -> Boot:
        return self._boot if self._boot is not None else self._boots[self._i]

    def __repr__(self) -> str:
        return f"IngestedBoot(id={self.id}, created={self.created})"


def default_host() -> str:
    try:
        return os.uname().nodename  # what socket.gethostname() returns, without importing socket
    except AttributeError:  # pragma: no cover - not a POSIX system
        import socket

        return socket.gethostname()


def _year_hint(source) -> int:
    if getattr(source, "mtime", None):
        return datetime.fromtimestamp(source.mtime).year
    return datetime.now().year


def scan_literals() -> tuple[str, ...]:
    from bootlog import boots, patterns

    return tuple(dict.fromkeys((*boots.LITERALS, *patterns.LITERALS)))


_PROGRESS_DELAY = 1.0  # seconds of reading before a bar appears: small ingests never draw one
_PROGRESS_EVERY = 0.2  # seconds between redraws


class _Progress:
    """A bytes-read counter on stderr, only when a human is watching and the read takes a while.

    The caller enables it only when stderr is a terminal; even then nothing is drawn during the
    first _PROGRESS_DELAY seconds, and the line is erased when reading ends (or fails).
    """

    def __init__(self, total: int | None, enabled: bool, start: int = 0) -> None:
        self.total, self.enabled, self.done = total, enabled, start
        self.t0 = time.monotonic()
        self.last = 0.0
        self.drawn = False

    def wrap(self, chunks: Iterable[bytes]) -> Iterator[bytes]:
        if not self.enabled:
            yield from chunks
            return
        try:
            for chunk in chunks:
                self.done += len(chunk)
                now = time.monotonic()
                if now - self.t0 >= _PROGRESS_DELAY and now - self.last >= _PROGRESS_EVERY:
                    self.last = now
                    self._draw()
                yield chunk
        finally:
            if self.drawn:
                sys.stderr.write("\r\x1b[K")
                sys.stderr.flush()

    def _draw(self) -> None:
        pct = f" {min(100.0, 100 * self.done / self.total):5.1f}%" if self.total else ""
        sys.stderr.write(f"\rbootlog: read {self.done / 2**20:,.0f} MiB{pct}")
        sys.stderr.flush()
        self.drawn = True


def read_records(source, *, fast: bool = True, progress: bool = False, start: int = 0, limit: int | None = None,
                 start_line: int = 1, fmt: str | None = None,
                 extra_literals: tuple[str, ...] = (), raw: bool = False) -> tuple[Iterator[Record], object]:
    """Records of a source: only candidate lines on the fast path, every line otherwise.

    start/limit: byte range to read (a resumed read); start_line: the line number at `start`;
    raw: records as the reader process sends them (reader.py; Scanner.records(raw=True) says
    which shapes).
    """
    chunks = _block_views(source, start, limit, fmt) if raw and _scanning(fast) else None
    if chunks is not None:
        # (a plain log, as _block_views found: not sniffed again, which would hold on to more
        # views than the two a block read keeps good)
        fmt = "plain"
    else:
        chunks = source.chunks(start) if start else source.chunks()
        if limit is not None:
            chunks = _upto(chunks, limit - start)
        if not start:  # (after the limit: a BOM counts among the file's bytes)
            chunks = _no_bom(chunks)
    # a gzip source's size is the compressed one: bytes read cannot be a share of it
    total = None if getattr(source, "kind", None) == "gzip" else getattr(source, "size", None)
    chunks = _Progress(limit if limit is not None else total, progress, start).wrap(chunks)
    if _scanning(fast):
        from bootlog.scan import Scanner

        scanner = Scanner(tuple(dict.fromkeys((*scan_literals(), *extra_literals))),
                          after={"Traceback (most recent call last)": 200})
        return scanner.records(chunks, fmt, start_line=start_line, raw=raw), scanner
    from bootlog.envelope import records

    if start_line != 1:
        return _shift(records(chunks, fmt), start_line - 1), None
    return records(chunks, fmt), None


def _block_views(source, start: int, limit: int | None, fmt: str | None = None):
    """A plain log file's blocks as views of reused buffers (blockread.py), from `start` (past a
    BOM at the file's start, as _no_bom) up to `limit`; None where they would not pay (hyperscan
    and the native line cut read a plain log's views where they are; every other read makes
    bytes of them) or cannot be had."""
    if getattr(source, "kind", None) != "file" or os.environ.get("BOOTLOG_NO_NATIVE"):
        return None
    from bootlog import scan

    if scan._native_cut is None or scan._hs is None:
        return None
    from bootlog import blockread
    from bootlog.envelope import HEAD_BYTES, detect

    stop = limit  # (None: on to the end, as the read would go)
    try:
        with open(source.name, "rb") as f:
            # (a BOM the limit cuts is no BOM: _no_bom sees fewer than its 3 bytes)
            if not start and (stop is None or stop >= 3) and f.read(3) == b"\xef\xbb\xbf":
                start = 3
            f.seek(start)
            head = f.read(HEAD_BYTES if stop is None else max(0, min(HEAD_BYTES, stop - start))) if fmt is None else b""
    except OSError:
        return None
    if (fmt or detect(head)) != "plain":  # (the format as Scanner.records will find it)
        return None
    return blockread.blocks(source.name, start, stop, scan.BLOCK)


def _scanning(fast: bool) -> bool:
    """read_records reads through scan.Scanner (candidate lines; it counts every line)."""
    return fast and not os.environ.get("BOOTLOG_FULL_SCAN")


BACKGROUND_MIN = 32 << 20  # bytes: below this, a fork and a pipe cost more than they save


def background_min() -> int:
    """BACKGROUND_MIN, or BOOTLOG_BACKGROUND_MIN (bytes; tests use 0 to read every log this way)."""
    try:
        return int(os.environ.get("BOOTLOG_BACKGROUND_MIN", BACKGROUND_MIN))
    except ValueError:
        return BACKGROUND_MIN


def _read(source, kw: dict, batches: bool = False) -> tuple[Iterator[Record], object]:
    """read_records(source, **kw); for a big file, in a forked reader process (reader.py: the
    same Records in the same order, read there while they are parsed here, on a second core).
    batches: the reader may send records.LineBatch items (for parse(), not for other readers)."""
    size = getattr(source, "size", None)
    limit = kw.get("limit")
    if getattr(source, "kind", None) in ("file", "gzip") and size is not None and \
            (limit if limit is not None else size) - kw.get("start", 0) >= background_min():
        # (imported only here: a small file's read, a re-ingest's, never needs the module)
        from bootlog import reader

        got = reader.background(lambda: read_records(source, raw=True, **kw), batches=batches)
        if got is not None:
            return got
    return read_records(source, **kw)


def _no_bom(chunks: Iterable[bytes]) -> Iterator[bytes]:
    """The chunks without a UTF-8 byte order mark at the very start (a file saved by a Windows
    tool): in front of a `podman logs -t` stamp or a JSON record it hides the envelope."""
    it = iter(chunks)
    head = b""
    for c in it:
        head += c
        if len(head) >= 3 or not c:
            break
    if head.startswith(b"\xef\xbb\xbf"):
        head = head[3:]
    if head:
        yield head
    yield from it


def _upto(chunks: Iterable[bytes], n: int) -> Iterator[bytes]:
    """Stop after n bytes: a file that grows while it is read is read up to its size at the start."""
    for chunk in chunks:
        if n <= 0:
            return
        yield chunk[:n]
        n -= len(chunk)


def _shift(recs: Iterable[Record], by: int) -> Iterator[Record]:
    for r in recs:
        r.lineno += by
        yield r


def parse_source(source, *, fast: bool = True, progress: bool = False) -> list[Boot]:
    """The boots of a whole source."""
    return list(_parse(source, fast=fast, progress=progress)[0])


def _parse(source, *, fast: bool = True, progress: bool = False, resume: "Resume | None" = None,
           limit: int | None = None, plan=None) -> tuple["Boots", int]:
    """The boots of a source (of its unread tail when resuming) and the physical lines read.

    A plan's own patterns run over the same single read (stdin can be read only once): their
    literals join the scanner's, and a pattern without a literal makes every line be read."""
    from bootlog.boots import BootSplitter
    from bootlog.parse import parse

    user = getattr(plan, "patterns", None) or []
    extra = tuple(up.literal for up in user if up.literal)
    if len(extra) < len(user):
        fast = False
    if resume is not None:
        kw = dict(fast=True, progress=progress, start=resume.offset, limit=limit,
                  start_line=resume.lines + 1, fmt=resume.fmt, extra_literals=extra)
    else:
        kw = dict(fast=fast, progress=progress, limit=limit, extra_literals=extra)
    # (a plan's patterns look at every record: no batches then; _Counter only without scanner)
    recs, scanner = _read(source, kw, batches=not user and _scanning(kw["fast"]))
    hits = _UserHits(plan) if user else None
    if hits is not None:
        recs = hits.watch(recs)
    splitter = BootSplitter(resume.status if resume else None)
    spill = _Spill(splitter)
    if hits is None:  # (a plan's hits are attached to the boots after parsing: all stay in memory)
        splitter.retire = spill.retire
    # the scanner counts the lines it read; without it, _Counter notes the last record's line
    counted = None if _scanning(kw["fast"]) else _Counter(recs)

    def lines_read() -> int | None:
        """The physical lines read, once they are (the scanner's count; resumed: from line 1),
        so that every boot still running at the end ends there, as when every line is read."""
        seen = getattr(scanner, "lines_seen", None)
        return None if seen is None else resume.lines + seen if resume else seen

    # a big log's parse makes a few hundred thousand objects that all live on (samples, until
    # spilled) and hardly any reference cycles (a few per boot, collected after the parse):
    # the cyclic collector's passes over them were ~5 % of it
    import gc

    collecting = gc.isenabled()
    gc.disable()
    try:
        boots = Boots(parse(counted if counted is not None else recs, year=_year_hint(source), splitter=splitter,
                            tick=(_SPILL_EVERY, spill.drain), total_lines=lines_read), spill)
    finally:
        if collecting:
            gc.enable()
    spill.seal(boots.in_memory())
    if hits is not None:
        hits.attach(list(boots))
    seen = getattr(scanner, "lines_seen", None)
    return boots, seen if seen is not None else counted.last if counted is not None else 0


class _Counter:
    """The records, noting the line of the last one (the lines read, without a scanner)."""

    def __init__(self, it: Iterable[Record]) -> None:
        self.it, self.last = it, 0

    def __iter__(self) -> Iterator[Record]:
        for rec in self.it:
            self.last = rec.lineno
            yield rec


# ---------------------------------------------------------------- bounded memory
#
# A boot's runtime samples (one per stats line, every 10 s for as long as the server ran) are
# the only part of a parse that grows with the log: ~750 bytes each, 140,000 in a 512 MiB log.
# While parse() runs, every _SPILL_EVERY records the finished samples of each boot (all but the
# last, which the splitter may still extend) are written to one temporary SQLite file (_Spill);
# after parse, Boot.samples becomes a SpilledSamples sequence that reads them back in order when
# the store iterates it.  Peak memory then no longer depends on the log's length.
#
# They are spilled as the samples table's own column values, (line, ts ISO text, values JSON)
# (store/samplerows.py): the SQLite store attaches the spill file and copies them with one
# INSERT ... SELECT per part (no row passes through Python again: a third of the old store time
# on a 512 MiB log); PostgreSQL gets them as they come back from the file.  A Sample those
# cannot rebuild exactly (values that are not plain floats, a ts whose tzinfo is not a fixed
# offset) keeps its own ts and values beside them, pickled.  Most stats lines come from parse's
# fast path as Samples that carry their row already (records.Sample.row), made from the printed
# figures and time: those are written as they are, and read back the same way.

_SPILL_EVERY = 4096  # records between checks
_SPILL_KEEP = 1024  # samples a boot may hold in memory before its older ones are spilled

def _boots_of(splitter) -> list[Boot]:
    """The boots a splitter may still be adding samples to: the current one, an older one it
    resumed (two servers interleaved), the orphan lead-in and the newest few.  Older boots get
    no more stats lines, so a log of thousands of boots costs no more per check."""
    accs = getattr(splitter, "accs", None) or []
    cands = [*accs[-4:], getattr(splitter, "cur", None), getattr(splitter, "resume", None),
             getattr(splitter, "orphan", None)]
    out: dict[int, Boot] = {}
    for acc in cands:
        b = getattr(acc, "boot", None)
        if isinstance(b, Boot):
            out[id(b)] = b
    return list(out.values())


class _Spill:
    """Finished samples of boots still being parsed, moved out of memory (see above), into a
    temporary SQLite file: table r holds the rows in the order they were spilled (a boot's part is
    a rowid range), table blob the pickles (a retired boot, a part's odd samples).  SQLite, not a
    file of pickles, so that the SQLite store copies a part with one INSERT ... SELECT from the
    attached file instead of handing each row to the driver (store/lite.py)."""

    def __init__(self, splitter) -> None:
        self.splitter = splitter
        self.conn = None
        self.path: str | None = None
        # id(boot) -> (boot, [(first rowid, last rowid, odd blob id or 0), ...]); the boot is
        # kept so its id stays unique
        self.parts: dict[int, tuple[Boot, list[tuple[int, int, int]]]] = {}
        self.counts: dict[int, int] = {}
        self.broken = False
        self.last_row = 0  # rowid of the last row in r (one writer, no deletes: rowids run on)

    def drain(self) -> None:
        for b in _boots_of(self.splitter):
            if isinstance(b.samples, list) and len(b.samples) > _SPILL_KEEP:
                self._put(b)

    def _open(self) -> bool:
        if self.conn is not None or self.broken:
            return not self.broken
        import sqlite3
        import tempfile
        import weakref

        from bootlog.store.where import PAGE_SIZE

        path = None
        try:
            _sweep_spills(tempfile.gettempdir())
            # (the pid in the name: a file whose process is gone is a leftover of a kill)
            fd, path = tempfile.mkstemp(prefix=f"{_SPILL_PREFIX}{os.getpid()}-", suffix=".db")
            os.close(fd)
            conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
            # a scratch file: no fsync (a crash loses nothing that was stored), and the rollback
            # journal in memory, so a part that hit a full disk rolls back cleanly (with no
            # journal, the rollback left the file malformed: the parts before it unreadable)
            conn.execute(f"PRAGMA page_size={PAGE_SIZE}")  # (as the store's: see where.PAGE_SIZE)
            conn.execute("PRAGMA journal_mode=MEMORY")
            conn.execute("PRAGMA synchronous=OFF")
            conn.execute("CREATE TABLE r (line INTEGER, ts TEXT, v TEXT)")
            conn.execute("CREATE TABLE blob (data BLOB)")
        except (OSError, sqlite3.Error):
            self.broken = True  # (no room, no writable temp dir: samples stay in memory)
            if path is not None:
                _remove_spill(None, path)
            return False
        self.conn, self.path = conn, path
        # removed when the last Boots or SpilledSamples reading it is gone, or at exit
        weakref.finalize(self, _remove_spill, conn, path)
        return True

    def _put(self, b: Boot, keep: int = 1) -> None:
        """Move all but the last `keep` samples of b to the file (the splitter may still add to
        the last one)."""
        import pickle
        import sqlite3

        if not self._open():
            return
        done = b.samples[:-keep] if keep else list(b.samples)
        rows, odd = _spill_part(done)
        conn = self.conn
        try:
            conn.execute("BEGIN")
            conn.executemany("INSERT INTO r (line, ts, v) VALUES (?, ?, ?)", rows)
            oid = conn.execute("INSERT INTO blob (data) VALUES (?)",
                               (pickle.dumps(odd, protocol=pickle.HIGHEST_PROTOCOL),)).lastrowid if odd else 0
            last = conn.execute("SELECT max(rowid) FROM r").fetchone()[0] or 0
            conn.execute("COMMIT")
        except sqlite3.Error:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            self.broken = True
            return
        if last != self.last_row + len(rows):  # (cannot happen with one writer: then keep them)
            self.broken = True
            return
        self.parts.setdefault(id(b), (b, []))[1].append((self.last_row + 1, last, oid))
        self.last_row = last
        self.counts[id(b)] = self.counts.get(id(b), 0) + len(done)
        if keep:
            del b.samples[:-keep]
        else:
            b.samples.clear()

    def _write(self, data: bytes) -> int | None:
        import sqlite3

        if not self._open():
            return None
        try:
            return self.conn.execute("INSERT INTO blob (data) VALUES (?)", (data,)).lastrowid
        except sqlite3.Error:
            self.broken = True
            return None

    def blob(self, oid: int) -> bytes:
        return self.conn.execute("SELECT data FROM blob WHERE rowid = ?", (oid,)).fetchone()[0]

    def retire(self, b: Boot) -> "Boot | _Retired":
        """BootSplitter's retire callback: a finished boot (it gets no more lines) moves to the
        file whole, its samples as ready-made rows, the rest pickled; Boots reads it back."""
        import pickle

        if self.broken:
            return b
        if b.samples:
            self._put(b, keep=0)
        # (samples left: the file broke meanwhile, and the boot stays here as before spilling)
        at = None if b.samples else self._write(pickle.dumps(b, protocol=pickle.HIGHEST_PROTOCOL))
        if at is None:
            return b  # (its spilled part, if any, stays in self.parts for seal())
        got = self.parts.pop(id(b), None)
        return _Retired(at, 0, tuple(got[1]) if got is not None else (), self.counts.pop(id(b), 0))

    def load(self, r: "_Retired") -> Boot:
        import pickle

        b = pickle.loads(self.blob(r.at))
        if r.count:
            b.samples = SpilledSamples(self, list(r.parts), r.count, [])
        return b

    def seal(self, boots: Iterable[Boot]) -> None:
        """Give every boot that spilled a SpilledSamples sequence (spilled part + in-memory tail)."""
        if self.conn is None:
            return
        for b in boots:
            got = self.parts.get(id(b))
            if got is not None and got[0] is b:
                b.samples = SpilledSamples(self, got[1], self.counts[id(b)], list(b.samples))
        self.parts = {}


_SPILL_PREFIX = "bootlog-spill-"


def _sweep_spills(tmpdir: str) -> None:
    """Remove spill files that a killed bootlog left (SIGKILL, the OOM killer, a lost ssh session:
    no finalizer ran); a named file is what lets the SQLite store attach it."""
    try:
        names = [n for n in os.listdir(tmpdir) if n.startswith(_SPILL_PREFIX) and n.endswith(".db")]
    except OSError:
        return
    for name in names:
        pid = name[len(_SPILL_PREFIX):].split("-", 1)[0]
        if not pid.isascii() or not pid.isdigit():
            continue
        try:
            os.kill(int(pid), 0)
            continue  # alive (or reused by another process): not ours to remove
        except ProcessLookupError:
            pass
        except (PermissionError, OverflowError, ValueError):
            continue
        try:
            os.unlink(os.path.join(tmpdir, name))
        except OSError:
            pass


def _remove_spill(conn, path: str) -> None:
    if conn is not None:
        try:
            conn.close()
        except Exception:
            pass
    try:
        os.unlink(path)
    except OSError:
        pass


def _spill_part(samples: list[Sample]) -> tuple[list[tuple], dict[int, tuple]]:
    """(rows, odd): (line, ts ISO, values JSON) per sample, and {index: (ts, values)} for the
    samples those rows cannot rebuild exactly (see "bounded memory" above)."""
    try:  # the usual part: every sample made by parse's fast path, its row ready
        return [(s.line, *s.row) for s in samples], {}
    except TypeError:  # (a sample without a row: `*None`)
        pass
    from datetime import timezone

    from bootlog.jsontext import dumps
    from bootlog.store.rows import _jsonable, _plain_floats
    from bootlog.store.samplerows import plain_dumps

    rows: list[tuple] = []
    odd: dict[int, tuple] = {}
    add = rows.append
    for i, s in enumerate(samples):  # store/samplerows.sample_rows, and the odd ones noted
        row = s.row
        if row is not None:  # made by parse's fast path (records.Sample): exact by construction
            add((s.line, *row))
            continue
        v, ts = s.values, s.ts
        if _plain_floats(v):
            js = plain_dumps(v)
        else:
            js = dumps(_jsonable(v))
            odd[i] = (ts, v)
        if ts is None:
            add((s.line, None, js))
            continue
        tz = ts.tzinfo
        if tz is not None and tz.__class__ is not timezone:
            odd[i] = (ts, v)
        add((s.line, ts.isoformat(), js))
    return rows, odd


class SpilledSamples:
    """A boot's runtime samples, most of them in a temporary file: a read-only sequence that
    yields Sample objects in log order each time it is iterated (the store may retry).
    row_parts() gives the same samples as ready-made `samples` rows (the SQLite store's path)."""

    def __init__(self, spill: _Spill, parts: list[tuple[int, int, int]], spilled: int, tail: list[Sample]) -> None:
        self.spill, self.parts, self.spilled, self.tail = spill, parts, spilled, tail

    def __len__(self) -> int:
        return self.spilled + len(self.tail)

    def __bool__(self) -> bool:
        return len(self) > 0

    def _read(self) -> Iterator[tuple[list[tuple], dict[int, tuple]]]:
        import pickle

        conn = self.spill.conn
        for lo, hi, oid in self.parts:
            rows = conn.execute("SELECT line, ts, v FROM r WHERE rowid BETWEEN ? AND ? ORDER BY rowid",
                                (lo, hi)).fetchall()
            yield rows, (pickle.loads(self.spill.blob(oid)) if oid else {})

    def spilled_rows(self) -> tuple[str, list[tuple[int, int]]]:
        """(the spill file, its rowid ranges of these samples' rows, in order): the SQLite store
        attaches the file and copies them with INSERT ... SELECT (table r: line, ts, v); the
        in-memory tail is sample_rows(self.tail)."""
        return self.spill.path, [(lo, hi) for lo, hi, _ in self.parts]

    def row_parts(self) -> Iterator[list[tuple[int, str | None, str]]]:
        """Lists of (line, ts ISO text, values JSON), in log order: store/samplerows.sample_rows
        of every sample (the values JSON as json.dumps with default settings makes it)."""
        from bootlog.store.samplerows import sample_rows

        for rows, _ in self._read():
            yield rows
        if self.tail:
            yield sample_rows(self.tail)

    def __iter__(self) -> Iterator[Sample]:
        fromiso = datetime.fromisoformat
        for rows, odd in self._read():
            for i, (line, ts, values) in enumerate(rows):
                if i in odd:
                    yield Sample(line, *odd[i])
                else:  # (the values dict is made from the JSON if asked for)
                    yield Sample(line, fromiso(ts) if ts is not None else None, None, (ts, values))
        yield from self.tail

    def __eq__(self, other) -> bool:
        if isinstance(other, (list, SpilledSamples)):
            return len(self) == len(other) and all(a == b for a, b in zip(self, other))
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __getitem__(self, i):
        if isinstance(i, slice):
            return list(self)[i]
        n = len(self)
        if i < 0:
            i += n
        if not 0 <= i < n:
            raise IndexError(i)
        if i >= self.spilled:
            return self.tail[i - self.spilled]
        for j, s in enumerate(self):
            if j == i:
                return s
        raise IndexError(i)

    def __repr__(self) -> str:
        return f"SpilledSamples({len(self)} samples, {self.spilled} on disk)"


class _Retired:
    """Where _Spill.retire put a boot: its pickle and its samples' parts.  (One per retired
    boot, kept to the end: slots, no dict.)"""

    __slots__ = ("at", "nbytes", "parts", "count")

    def __init__(self, at: int, nbytes: int, parts: tuple[tuple[int, int], ...], count: int) -> None:
        self.at, self.nbytes, self.parts, self.count = at, nbytes, parts, count


class Boots:
    """The boots of one parse, in order: most in memory, those retired while parsing (a crash
    loop's thousands) in the spill file, read back one at a time whenever an item is asked for.
    Iterating gives Boot objects; nothing read back is kept, so a store going through them
    one by one holds one at a time."""

    def __init__(self, items: list, spill: "_Spill | None" = None) -> None:
        self.items, self.spill = items, spill

    def __len__(self) -> int:
        return len(self.items)

    def __getitem__(self, i: int) -> Boot:
        x = self.items[i]
        return self.spill.load(x) if isinstance(x, _Retired) else x

    def __iter__(self) -> Iterator[Boot]:
        load = self.spill.load if self.spill is not None else None
        for x in self.items:
            yield load(x) if isinstance(x, _Retired) else x

    def insert(self, i: int, b: Boot) -> None:
        self.items.insert(i, b)

    def in_memory(self) -> list[Boot]:
        """The boots that were never retired (the newest ones, and any still active at the end)."""
        return [x for x in self.items if not isinstance(x, _Retired)]

    def retired(self) -> int:
        return sum(1 for x in self.items if isinstance(x, _Retired))

    def __eq__(self, other) -> bool:
        if isinstance(other, (list, Boots)):
            return len(self) == len(other) and all(a == b for a, b in zip(self, other))
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"Boots({len(self)} boots, {self.retired()} retired)"


class _UserHits:
    """A plan's user-pattern figures and events, collected as records stream past, then put on
    the boot whose lines hold them."""

    def __init__(self, plan) -> None:
        self.plan = plan
        self.found: list[tuple[int, object, list]] = []  # (line, ts, hits)

    def watch(self, recs: Iterable[Record]) -> Iterator[Record]:
        from bootlog.plan import user_pattern_hits

        for rec in recs:
            got = user_pattern_hits(self.plan, rec.text)
            if got:
                self.found.append((rec.lineno, rec.ts, got))
            yield rec

    def attach(self, boots: list[Boot]) -> None:
        ordered = sorted(boots, key=lambda b: b.first_line)
        for lineno, ts, got in self.found:
            boot = next((b for b in reversed(ordered) if b.first_line <= lineno), None)
            if boot is None or lineno > boot.last_line:
                continue
            for h in got:
                h.line = h.line or lineno
                h.ts = h.ts or ts
                (boot.metrics if isinstance(h, Metric) else boot.events).append(h)


@record
class Resume:
    """Where a re-ingest of a grown file picks up: after the last complete line read before."""

    offset: int  # byte offset just past the last newline already read
    lines: int  # physical lines before `offset`
    fmt: str  # envelope format, detected from the file's head
    status: str  # status of the stored boot the new lines continue
    boot_id: int
    key: str = ""  # the positions row it was read from (and the one to move on)
    head: str = ""  # "length:digest" of the file's head, as stored and found again


class Ingested(list):
    """The IngestedBoot list of one source, plus how it was read."""

    resumed_at_line: int | None = None  # a resumed read started after this many lines
    up_to_date: bool = False  # a resumed read found nothing new


HEAD_BYTES = 4096
RESUMABLE = ("plain", "podman_ts")  # record formats whose lines never span a resume offset


def _position_key(source, host: str | None) -> str:
    """The stored read position of this file on this host (one database serves a fleet: two hosts'
    /var/log/vllm.log are two files); host None: the key earlier versions wrote, without it."""
    from bootlog.store.rows import stored_name

    on = f"{stored_name(host)}:" if host is not None else ""
    return f"ingest:{on}" + stored_name(os.path.realpath(source.name))


def _head(path: str, n: int) -> tuple[bytes, str]:
    from bootlog.sha import sha256

    with open(path, "rb") as f:
        head = f.read(n)
    return head, sha256(head).hexdigest()[:32]


def _end_of_lines(path: str, size: int) -> int | None:
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


def _resume_point(engine, source, info) -> Resume | None:
    """A stored position that still describes this file's beginning, else None (read it all).
    info: this ingest's SourceInfo (the boot it extends is this source's, on this host)."""
    if getattr(engine, "lite", False):  # store/lite.py: the same reads with sqlite3 alone
        get_position, last_boot_of_source, boot_status = (lambda _e, k: engine.get_position(k)), \
            (lambda _e, n, ends_at: engine.last_boot_of_source(n, ends_at)), (lambda _e, i: engine.boot_status(i))
    else:
        from bootlog.store.queries import boot_status, get_position, last_boot_of_source

    key = _position_key(source, info.host)
    pos = get_position(engine, key)
    if pos is None and info.host == default_host():
        # stored before positions were kept per host: this machine's (read on from it, and it
        # moves on under its old key, so an upgrade costs no full read)
        key = _position_key(source, None)
        pos = get_position(engine, key)
    if pos is None:
        return None
    offset, head = pos
    try:
        n, digest, lines, fmt, *tail = head.split(":")
        if os.stat(source.name).st_size < offset or _head(source.name, int(n))[1] != digest:
            return None  # truncated, rotated or replaced: read from the start
    except (OSError, ValueError):
        return None
    if int(n) == 0:
        return None  # read when empty (a rotation's fresh file): any content "matches" no head
    # the boot the last read ended in: named in the position (store/rows.with_tail), else the one
    # of this source whose last line is the position's (after a rotation, the source's older
    # boots, from the file's earlier contents, reach further)
    if tail and not tail[0].isdigit():
        return None  # that read stored no boot: nothing to continue
    if tail:
        got = boot_status(engine, int(tail[0]))
        last = (int(tail[0]), got) if got is not None else None
    else:
        last = last_boot_of_source(engine, info.key, int(lines))
    if last is None or last[1] != "ready" or fmt not in RESUMABLE:
        # a boot caught mid-start is re-read whole (its start decides its figures), and so is a
        # file whose last boot failed: lines after it may still belong to an older server
        # running beside it (two servers interleaved in one nohup.out)
        return None
    return Resume(offset=offset, lines=int(lines), fmt=fmt, status=last[1], boot_id=last[0], key=key,
                  head=f"{n}:{digest}")


def ingest(engine, spec: str | None, *, container: str | None = None, container_engine: str = "podman",
           host: str | None = None, plan=None, progress: bool = False, fast: bool = True,
           source=None, _again: int = 0) -> Ingested:
    """Parse one source completely, then store all its boots in one transaction.

    A plain file ingested before is read from where the last read stopped (if its head is
    unchanged and its last boot had finished starting): the new lines extend that boot and add
    new ones.  Anything else is read whole; the store keeps re-reads idempotent.
    """
    from bootlog.envelope import detect
    from bootlog.sources import container_source, open_source
    from bootlog.store.rows import TAIL, SourceInfo, stored_name

    if source is None:
        source = container_source(container, engine=container_engine) if container else open_source(spec)
    out = Ingested()
    info = SourceInfo(name=stored_name(source.name), kind=source.kind, container=container,
                      host=host or default_host())
    resume = limit = position = None
    if source.kind == "file" and fast and plan is None and not os.environ.get("BOOTLOG_FULL_SCAN"):
        size = os.stat(source.name).st_size
        limit = size
        resume = _resume_point(engine, source, info)
        if resume is not None:
            # a resumed read takes complete lines only: a half-written last line waits for the
            # next read (it cannot be corrected once merged into a stored boot)
            limit = _end_of_lines(source.name, size)
            if limit is None:
                resume, limit = None, size
            elif limit == resume.offset:
                out.up_to_date, out.resumed_at_line = True, resume.lines
                return out
    boots, seen = _parse(source, fast=fast, progress=progress, resume=resume, limit=limit, plan=plan)
    if limit is not None:
        end = _end_of_lines(source.name, limit)
        # a file caught mid-line gets no position: its half line was read into a boot that a
        # resumed read could no longer correct, so the next ingest reads it whole
        if end == limit:
            head, digest = _head(source.name, HEAD_BYTES)
            lines = (resume.lines if resume else 0) + seen
            key = resume.key if resume is not None else _position_key(source, info.host)
            # (the store puts the id of the boot this read ends in after the last ":")
            # (a resumed read's head is the one it resumed on: its format as stored, not detected
            # again, which costs the detection's regexes, ~1.8 ms of a ~45 ms re-ingest)
            same = resume is not None and resume.head == f"{len(head)}:{digest}"
            fmt = resume.fmt if same else detect(head)
            position = (key, end, f"{len(head)}:{digest}:{lines}:{fmt}:{TAIL}")
    extend = None
    if resume is not None:
        out.resumed_at_line = resume.lines
        if not (boots and boots[0].continued) and seen:
            # no vLLM line before the next start (or none at all): the stored boot still runs on
            end_line = boots[0].first_line - 1 if boots else resume.lines + seen
            if end_line > resume.lines:
                boots.insert(0, Boot(first_line=resume.lines + 1, last_line=end_line,
                                     status=resume.status, continued=True))
        if boots and boots[0].continued:
            extend = resume.boot_id
    if not boots and position is None:
        return out
    from bootlog.store.rows import PositionMoved

    if getattr(engine, "lite", False):  # store/lite.py: the same transaction through sqlite3
        save = engine.save_boots
    else:
        from bootlog.store.queries import save_boots

        save = lambda *a, **k: save_boots(engine, *a, **k)  # noqa: E731
    try:
        saved = save(info, boots, position=position, extend=extend, planned=plan is not None,
                     resumed_from=resume.offset if resume is not None else None)
    except PositionMoved:
        # another ingest stored these lines while this one read them: read again from its position
        if _again >= 5:
            from bootlog.errors import StoreError

            raise StoreError(f"{source.name}: other ingests keep storing this file meanwhile; try again")
        return ingest(engine, spec, container=container, container_engine=container_engine, host=host,
                      plan=plan, progress=progress, fast=fast, source=source, _again=_again + 1)
    # (a retired boot is read back when asked for, not held here: see Boots)
    out.extend(IngestedBoot(i, c, x if not isinstance(x, _Retired) else None, boots=boots, index=k)
               for k, ((i, c), x) in enumerate(zip(saved, boots.items)))
    return out
