"""`bootlog watch`: follow a container (across restarts) or a growing log file and store boots,
runtime events and statistics as they happen.

Each poll reads only the new complete lines (--once the half-written last one too, which the
next run reads again), re-parses the lines of the last (still growing) boot and stores every boot
of the window in one transaction together with the read position.  The stored position is the
start of the last boot, not the end of what was read: a restarted watch re-reads that one boot
and the store updates it in place (the same boot: same source, first line and start time, more
lines), so nothing is lost and nothing is stored twice.  Finished boots leave memory as soon as
the next boot starts; what stays is the last boot's lines (from an earlier boot's start while
that one is still starting: two servers in one file, see _store).
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import time
from datetime import datetime
from typing import Any, Callable, Iterator

from bootlog.read import podman
from bootlog.read.position import HEAD_BYTES, digest, position_key, read_head, still_holds
from bootlog.errors import InputError, SourceError
from dataclasses import dataclass, field
from bootlog.records import Boot, Record

ON_EVENT_TIMEOUT_S = 60
BATCH = 8 << 20  # bytes read, parsed and stored at a time: bounds memory during a catch-up
EVENT_LINES = 50  # event lines printed per kind in one read; the rest are counted
UNSETTLED = 8  # boots a read keeps (re-reads) at most: the last, back to the oldest still starting


# ------------------------------------------------------------------------------ what is read

# A position is opaque to the loop: an int byte offset for files, a podman.Cursor for containers.


class FileTail:
    """A log file that grows (and may be truncated or replaced: then it is read from the top).

    A run knows the file by its inode and its head (read.position: the first HEAD_BYTES bytes,
    hashed as the stored position holds them): a file emptied and written again past the offset read
    before the next poll (`: > nohup.out` and a restart, logrotate's copytruncate with a fast
    writer) has another head, and is read from its top as a restarted watch would.  A line with
    no newline yet is held at most sources.LINE_MAX bytes (the rest is counted and dropped, as
    ingest cuts it); `cut_lines` counts the lines cut so."""

    kind = "file"

    def __init__(self, path: str) -> None:
        self.path = path
        from bootlog.store.write import stored_path

        self.key = position_key("watch:file", stored_path(path))
        self.label = path
        self.ino: int | None = None
        self.head: str | None = None  # "n:digest" of the file's head at the last read
        self.restarted = False  # the last read started over at the top of a new file
        self.cut_lines = 0

    def source(self, host: str | None):
        from bootlog.store.write import SourceInfo, stored_path

        # (absolute, as ingest stores a file: the same source, read again from any directory)
        return SourceInfo(name=stored_path(self.path), kind="file", container=None, host=host)

    def start(self) -> int:
        return 0

    def encode(self, pos: int) -> tuple[int, str]:
        self._size()  # (a file gone is said as such)
        return pos, read_head(self.path)[1]

    def decode(self, offset: int, head: str) -> int | None:
        """The stored offset, or None when the file is no longer the one it was read from."""
        self._size()
        return offset if still_holds(self.path, offset, head) else None

    def _size(self) -> int:
        try:
            return os.stat(self.path).st_size
        except FileNotFoundError:
            raise InputError(f"no such file: {self.path}", path=self.path) from None

    def _open(self):
        """The file, opened without waiting: a FIFO or a device (/dev/zero) is no log file that
        grows (it has no offset to come back to, and a FIFO with no writer would wait forever)."""
        import stat

        try:
            fd = os.open(self.path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
        except FileNotFoundError:
            raise InputError(f"no such file: {self.path}", path=self.path) from None
        except OSError as e:
            from bootlog.read.sources import input_error

            raise input_error(self.path, e) from None
        f = os.fdopen(fd, "rb")
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            f.close()
            raise InputError(
                f"{self.path} is not a regular file: watch --file follows a log file that grows; "
                f"read a pipe or a device once with: bootlog ingest {self.path}",
                path=self.path,
            )
        os.set_blocking(fd, True)
        return f

    def read(self, pos: int, final: bool) -> Iterator[tuple[list[tuple[int, bytes]], int]]:
        """New lines after `pos` in batches: (lines with the offset before each, offset after)."""
        with self._open() as f:
            st = os.fstat(f.fileno())
            if pos == 0 or self.ino != st.st_ino:
                from bootlog.read.sources import GZIP_MAGIC, check_compression

                head = f.read(10)
                f.seek(0)
                check_compression(head, self.path)
                if head[:2] == GZIP_MAGIC:  # (gzip appends cannot be followed line by line)
                    raise InputError(
                        f"{self.path} is gzip-compressed: watch follows a growing plain log; "
                        f"read it with: bootlog ingest {self.path}",
                        path=self.path,
                    )
            # truncated in place (copytruncate) or replaced (rotated), or emptied and written
            # again past `pos` since the last poll (its head is another): a new file, from its top
            self.restarted = pos > 0 and (
                st.st_size < pos
                or (self.ino is not None and st.st_ino != self.ino)
                or not self._same_head(f, st.st_size)
            )
            self.ino = st.st_ino
            if self.restarted:
                pos = 0
            yield from self._batches(f, pos, final)
            n = min(HEAD_BYTES, os.fstat(f.fileno()).st_size)
            self.head = f"{n}:{digest(f, n)}"

    def _same_head(self, f, size: int) -> bool:
        """Whether the file still starts as it did at the last read of this run."""
        if self.head is None:
            return True
        n, _, digest_text = self.head.partition(":")
        return size >= int(n) and digest(f, int(n)) == digest_text

    def _batches(self, f, pos: int, final: bool) -> Iterator[tuple[list[tuple[int, bytes]], int]]:
        """The lines from `pos` on, BATCH bytes at a time; a line with no newline yet is held (its
        head only: LINE_MAX) until its newline comes, or with `final` given out as it is."""
        from bootlog.read.sources import LINE_MAX

        f.seek(pos)
        part: list[bytes] = []  # the line still without its newline: its first LINE_MAX bytes
        kept = dropped = 0  # bytes of it kept, and read past LINE_MAX
        while True:
            block = f.read(BATCH)
            lines: list[tuple[int, bytes]] = []
            start = 0
            if part or dropped:
                nl = block.find(b"\n")
                if nl < 0 and block:
                    take = block[: max(0, LINE_MAX - kept)]
                    if take:
                        part.append(take)
                    kept, dropped = kept + len(take), dropped + len(block) - len(take)
                    continue
                if nl < 0 and not final:
                    return  # the half line waits for its newline
                start = nl + 1 if nl >= 0 else 0
                line = b"".join(part) + block[:start]
                if dropped or len(line.rstrip(b"\n")) > LINE_MAX:
                    line = line[:LINE_MAX] + (b"\n" if line.endswith(b"\n") else b"")
                    self.cut_lines += 1
                lines.append((pos, line))
                pos += kept + dropped + start
                part, kept, dropped = [], 0, 0
            end = block.rfind(b"\n", start) + 1
            if end > start:
                for line in split_lines(block[start:end]):
                    lines.append((pos, line))
                    pos += len(line)
            at = max(start, end)
            if at < len(block):  # (the head of the rest only: no copy of a block-long rest)
                part = [block[at : at + LINE_MAX]]
                kept = len(part[0])
                dropped = len(block) - at - kept
            if lines:
                yield lines, pos
            if not block:
                return
            del block, lines  # (before the next read: two blocks are never held at once)

    def year(self) -> int:
        try:
            return datetime.fromtimestamp(os.stat(self.path).st_mtime).year
        except OSError:
            return datetime.now().year

    def run_bounds(self) -> list:
        return []  # (a file says nothing of when its process started: its lines do)

    def new_state(self) -> bool:
        return False  # (no engine to ask)


class ContainerTail:
    """A container's log through `<engine> logs --timestamps --since`, across restarts and
    re-creations under the same name (a new container's records are all later than the cursor)."""

    kind = "container"

    def __init__(self, name: str, engine: str = "podman") -> None:
        self.name = name
        self.engine = engine
        self.key = f"watch:{engine}:{name}"
        self.label = f"{engine}:{name}"
        self._deploy: tuple[Any, dict | None] = (None, None)
        self._run: tuple | None = None  # (id, StartedAt, FinishedAt) of the run last read
        self._run_stored: tuple | None = None  # ... as it was when new_state() last looked
        self._bounds: tuple[Any, list] = (None, [])
        self.cut_lines = 0  # lines cut at sources.LINE_MAX in the parse (FileTail's doc)

    def deploy(self, boot: Boot, plan=None) -> dict | None:
        """The engine's deploy context of the run `boot` started in (with the plan's env file, as
        ingest --plan stores it): asked once per boot and run state, so the exit code is stored
        when the run ends (a server that died serving and exited 0 is why on-failure never
        fired: the seeds' lesson)."""
        from bootlog.run.ingest import deploy_of

        key = (boot.first_line, boot.started_at, self._run)
        if self._deploy[0] != key:
            self._deploy = (key, deploy_of(self.name, self.engine, plan))
        return self._deploy[1]

    def source(self, host: str | None):
        from bootlog.store.write import SourceInfo

        return SourceInfo(name=f"{self.engine}:{self.name}", kind="container", container=self.name, host=host)

    def start(self) -> podman.Cursor:
        podman.state(self.name, engine=self.engine)  # a missing container is an error up front
        return podman.Cursor()

    def encode(self, pos: podman.Cursor) -> tuple[int, str]:
        return pos.ts or 0, str(pos.at_ts)

    def decode(self, offset: int, head: str) -> podman.Cursor | None:
        try:
            return podman.Cursor(offset or None, int(head or 0))
        except ValueError:
            return None

    def read(
        self, pos: podman.Cursor, final: bool
    ) -> Iterator[tuple[list[tuple[podman.Cursor, bytes]], podman.Cursor]]:
        """New lines after `pos` in batches: (lines with the cursor before each, cursor after)."""
        st = podman.state(self.name, engine=self.engine)
        running, self._run = st.running, (st.id, st.started_at, st.finished_at)
        for data, end in podman.read_batches(
            self.name, pos, final=final or not running, engine=self.engine, batch=BATCH
        ):
            lines = []
            for line in split_lines(data):
                lines.append((pos, line))
                pos = podman.advance(pos, line)
            yield lines, end
            pos = end

    def year(self) -> int:
        return datetime.now().year

    def new_state(self) -> bool:
        """Whether the run's state changed since the last look (it ended, or another began)."""
        changed, self._run_stored = self._run != self._run_stored, self._run
        return changed

    def run_bounds(self) -> list:
        """The engine's init/died times of the container (podman.run_bounds): a restart between
        two reads files the new run's lines under a boot of their own.  Asked again only when
        the run read changed (a restart, a stop)."""
        if self._bounds[0] != self._run:
            self._bounds = (self._run, podman.run_bounds(self.name, self.engine))
        return self._bounds[1]


def split_lines(data: bytes) -> list[bytes]:
    """Physical lines, each with its newline: only \\n ends a line (a tqdm bar's \\r does not,
    as in every line number bootlog prints)."""
    lines = data.split(b"\n")
    out = [ln + b"\n" for ln in lines[:-1]]
    if lines[-1]:
        out.append(lines[-1])
    return out


# --------------------------------------------------------------------------------- the loop


@dataclass
class _Window:
    """What is not settled yet: the candidate lines of the last boot (and any after it), with
    the read position before each of them (a boot starts on a candidate line)."""

    records: list[Record] = field(default_factory=list)
    positions: dict[int, Any] = field(default_factory=dict)  # line number -> position before it
    end_line: int = 0  # last line number read
    end: Any = None  # position after the last line read
    carry: int = 0  # lines still to keep after a traceback start seen in an earlier batch
    partial: int | None = None  # the last line read, when it had no newline yet

    def cut(self, line: int) -> None:
        """Forget lines before `line`."""
        self.records = [r for r in self.records if r.lineno >= line]
        self.positions = {n: p for n, p in self.positions.items() if n >= line}

    def position_of(self, line: int) -> Any:
        return self.positions.get(line, self.end)


@dataclass
class _Known:
    """What is stored already for one boot (so only new events are printed)."""

    id: int
    status: str
    events: set = field(default_factory=set)
    died: bool = False  # boot_died announced (or stored before this watch started)


@dataclass
class Watched:
    """What one watch run stored: the number of new events, and the boots to judge (those with
    a new event that can change a verdict: a start, ready/failed, a fault, a death), in the
    order they were first touched."""

    events: int = 0
    boots: list[int] = field(default_factory=list)


# event kinds that never change a boot's verdict: a new one is no reason to judge it again
NOTES = ("warning",)


def watch(
    db,
    tail,
    *,
    once: bool = False,
    poll: float = 2.0,
    on_event: str | None = None,
    host: str | None = None,
    emit: Callable[[str], None] = print,
    warn: Callable[[str], None] | None = None,
    stop: Callable[[], bool] = lambda: False,
    plan=None,
) -> Watched:
    """Follow `tail` (FileTail / ContainerTail) until `stop()` (or, with `once`, until caught up).
    A plan's own patterns ([[pattern]]) are read and stored with the boots, as ingest --plan
    does.  Returns what was stored (each kind prints EVENT_LINES lines per read, then a count;
    a gdn_hip fault burst is one line per boot and read)."""
    from bootlog.parse.boots import BootSplitter
    from bootlog.read.envelope import detect
    from bootlog.run.ingest import default_host
    from bootlog.parse.parse import parse
    from bootlog.store.reads import get_position
    from bootlog.store.write import save_boots

    warn = warn or emit
    src = tail.source(host or default_host())
    # one position per host: a fleet's hosts watch containers (or paths) of the same name into
    # one database; a position stored before that, without the host, is this machine's
    legacy, tail.key = tail.key, f"{tail.key}|host:{src.host}"
    stored = get_position(db, tail.key)
    if stored is None and src.host == default_host():
        stored = get_position(db, legacy)
        if stored is not None:
            tail.key = legacy  # (it moves on under its old key: no re-read after upgrading)
    win = _resume(tail, stored)
    keep = _candidates(plan)
    fmt: str | None = None
    known: dict[tuple, _Known] = {}
    out = Watched()
    missing_said = False

    while not stop():
        got = False
        began = time.monotonic()
        try:
            for lines, end in tail.read(win.end, final=once):
                missing_said = False
                if getattr(tail, "restarted", False) and lines and lines[0][0] == 0:
                    win = _Window(end=0)  # a new file: its lines number from 1 again
                if not lines:
                    continue
                got = True
                data = b"".join(line for _, line in lines)
                fmt = fmt or detect(data[: 64 * 1024])
                first = win.end_line + 1
                new = keep(win, data, fmt, first, tail)
                win.records.extend(new)
                win.positions.update((r.lineno, lines[r.lineno - first][0]) for r in new)
                win.end_line += len(lines)
                win.end = end
                # a last line still being written (read by --once): the next run reads it again
                win.partial = None if lines[-1][1].endswith(b"\n") else win.end_line
                if win.partial is not None:
                    win.positions.setdefault(win.partial, lines[-1][0])
                boots = _parse(parse, win, tail, BootSplitter, plan)
                _store(db, tail, src, boots, win, known, emit, on_event, warn, save_boots, plan, out)
            if tail.new_state() and not got and win.records:
                # the run ended (or began) with no line after its last one read: its boot is
                # stored again with what the engine says now (the exit code of the run)
                boots = _parse(parse, win, tail, BootSplitter, plan)
                _store(db, tail, src, boots, win, known, emit, on_event, warn, save_boots, plan, out)
        except (SourceError, InputError) as err:
            if once or not str(err).startswith(("no such container", "no such file")):
                raise
            if not missing_said:  # between `rm` and `run` of a redeploy, or a log rotation
                warn(f"{tail.label}: {err}; waiting for it to come back")
                missing_said = True
        if tail.cut_lines:  # (once per read, as ingest says it once per input)
            from bootlog.read.sources import cut_note

            warn(cut_note(tail.label, tail.cut_lines))
            tail.cut_lines = 0
        if once and not got:
            break
        if not once:
            # `logs --since` scans the container's whole log file: on a long log a poll costs
            # seconds, so never spend more than half the time reading
            time.sleep(max(poll, time.monotonic() - began))
    return out


def _parse(parse, win: _Window, tail, splitter, plan) -> list[Boot]:
    """The window's boots, with the plan's pattern figures and events on the boots whose lines
    hold them (ingest's UserHits, over the same kept lines)."""
    boots = parse(
        win.records, year=tail.year(), total_lines=win.end_line, splitter=splitter(run_bounds=tail.run_bounds())
    )
    if getattr(plan, "patterns", None):
        from bootlog.run.ingest import UserHits

        hits = UserHits(plan)
        for _ in hits.watch(win.records):
            pass
        hits.attach(boots)
    return boots


def judge_boots(db, ids: list[int], plan=None) -> list[tuple[int, Any]]:
    """(boot id, verdict.Verdict) of each boot, as the hook judges it (verdict.judge_stored: its
    own problem, its plan, its diff against the boot before it): the same exit codes as hook,
    check and diff."""
    from bootlog.store.reads import show_boots
    from bootlog.run.judged import judge_stored

    return [
        (doc["boot"]["id"], judge_stored(db, doc, plan)) for doc in (show_boots(db, ids, runtime=False) if ids else [])
    ]


def _candidates(plan=None) -> Callable[[_Window, bytes, str, int, Any], list[Record]]:
    """The lines ingest keeps (the scan's literals and the plan's patterns' literals, plus the
    lines after a traceback start; every line when a pattern has no literal, as ingest reads
    them), with the traceback context carried into the next batch; the lines cut at
    sources.LINE_MAX (and pieces of one joined past it) are counted on the tail."""
    from bootlog.read.envelope import records
    from bootlog.parse.parse import all_literals
    from bootlog.read.scan import Lines, Search

    user = getattr(plan, "patterns", None) or []
    extra = tuple(up.literal for up in user if up.literal)
    every = len(extra) < len(user)
    search = Search((*all_literals(), *extra))

    def keep(win: _Window, data: bytes, fmt: str, first: int, tail) -> list[Record]:
        lines = Lines([data], "all" if every else fmt, search, start_line=first, owed=win.carry)
        out = list(records(lines, fmt))
        win.carry = lines.owed
        tail.cut_lines += lines.cut_lines
        return out

    return keep


def _resume(tail, stored: tuple[int, str] | None) -> _Window:
    """Where to start: the stored position (start of the last boot) unless the source changed."""
    if stored:
        offset, head = stored
        base, _, inner = head.partition("|")
        start = tail.decode(offset, inner) if base.isdigit() else None
        if start is not None:
            return _Window(end_line=int(base), end=start)
    return _Window(end_line=0, end=tail.start())


def _store(
    db,
    tail,
    src,
    boots: list[Boot],
    win: _Window,
    known: dict[tuple, _Known],
    emit,
    on_event,
    warn,
    save_boots,
    plan,
    out: Watched,
) -> None:
    """Save the window's boots and the position in one transaction; emit what is new (count it
    and the boots to judge in `out`)."""
    resume_line = win.end_line + 1  # no vLLM line: nothing to keep
    if boots:
        # the last boot's first line, or that of an earlier one still starting (among the last
        # UNSETTLED): in one nohup.out an older server can finish starting after a newer one
        # began, and only a re-read from the older one's start lets boots.py resume it; else the
        # nearest kept line before it (re-read, never skip)
        first = next((b for b in boots[-UNSETTLED:-1] if b.status == "incomplete"), boots[-1]).first_line
        if first not in win.positions:
            # a boot may start on a line that holds no literal (a v0.15+ logo's empty first
            # line): from its own first kept line, else the nearest kept line before it
            after = [n for n in win.positions if n >= first]
            first = min(after) if after else max((n for n in win.positions if n <= first), default=resume_line)
        resume_line = first
    if win.partial is not None:  # (a line numbered past a half line would count it twice)
        resume_line = min(resume_line, win.partial)
    offset, head = tail.encode(win.position_of(resume_line))
    position = (tail.key, offset, f"{resume_line - 1}|{head}")
    _load_known(db, src, boots, known)
    if boots and hasattr(tail, "deploy"):
        boots[-1].deploy = tail.deploy(boots[-1], plan)
    saved = save_boots(db, src, boots, position=position, planned=plan is not None)
    kinds: dict[str, list] = {}  # kind -> [events, first and last boot not printed] of this read
    for (bid, created), boot in zip(saved, boots):
        new = _new_events(bid, created, boot, known)
        if any(ev["kind"] not in NOTES for ev in new) and bid not in out.boots:
            out.boots.append(bid)
        for ev in new:
            out.events += 1
            ev["source"] = tail.label
            ev["container"] = getattr(tail, "name", None)
            if on_event:
                _run_hook_cmd(on_event, ev, warn)
        for ev in _bursts_summed(new):
            k = kinds.setdefault(ev["kind"], [0, None, None])
            k[0] += 1
            if k[0] <= EVENT_LINES:  # a flood (a crash loop's boots): the rest counted
                emit(_line(ev))
            else:
                k[1:] = k[1] or bid, bid
    for kind, (n, first, last) in kinds.items():
        if first is not None:
            emit(
                _line(
                    {
                        "ts": None,
                        "source": tail.label,
                        "boot_id": first if first == last else f"{first}-#{last}",
                        "kind": kind,
                        "message": f"… and {n - EVENT_LINES:,} more in this read (bootlog show/list)",
                    }
                )
            )
    win.cut(resume_line)


BURST = ("gdn_hip_fault", "gdn_hip_fault_cap")  # a burst of these prints as one line (bursts.py)


def _bursts_summed(events: list[dict]) -> list[dict]:
    """One boot's new events as printed: a gdn_hip fault burst (with its report-cap line) as one
    line where its first fault was, saying what ingest's boot line says ("48 faults, slot 42,
    heads 3 and 8, report cap reached") and which lines hold them; the rest as they are."""
    from bootlog.render.bursts import gdn_summary

    burst = [ev for ev in events if ev["kind"] in BURST]
    summary = gdn_summary(burst)
    if summary is None:
        return events
    lines = [ev["line"] for ev in burst if isinstance(ev.get("line"), int)]
    where = f" (lines {min(lines):,}-{max(lines):,})" if len(set(lines)) > 1 else ""
    first = next(ev for ev in burst if ev["kind"] == "gdn_hip_fault")
    one = {**first, "rank": None, "message": summary + where}
    out = []
    for ev in events:
        if ev is first:
            out.append(one)
        elif ev["kind"] not in BURST:
            out.append(ev)
    return out


def _boot_key(b: Boot) -> tuple:
    # a boot still starting changes fingerprint as it grows; where it starts does not (the
    # store matches re-reads the same way: source, first line, start time)
    return b.first_line, _iso(b.started_at)


def _load_known(db, src, boots: list[Boot], known: dict[tuple, _Known]) -> None:
    """For boots first met in this run: what the store already holds, so a restarted watch does
    not announce again what it announced before."""
    from bootlog.store.reads import list_boots, show_boot

    fresh = [b for b in boots if _boot_key(b) not in known]
    if not fresh:
        return
    stored = {
        (r["first_line"], _iso(r["started_at"])): r
        for r in list_boots(db, container=src.container, host=src.host)
        if r["source"] == src.name
    }
    for b in fresh:
        r = stored.get(_boot_key(b))
        if r is not None:
            evs = show_boot(db, r["id"]).get("events") or []
            known[_boot_key(b)] = _Known(
                r["id"],
                r["status"],
                {(e.get("kind"), e.get("line"), e.get("rank")) for e in evs},
                died=r["status"] == "ready" and bool(r.get("failure")),
            )


def _iso(ts: Any) -> str | None:
    if ts is None:
        return None
    if isinstance(ts, datetime):
        return ts.isoformat()
    return datetime.fromisoformat(str(ts)).isoformat()


def _new_events(bid: int, created: bool, boot: Boot, known: dict[tuple, _Known]) -> list[dict]:
    k = known.get(_boot_key(boot))
    out: list[dict] = []
    base = {"boot_id": bid}
    if k is None or created:
        k = known[_boot_key(boot)] = _Known(bid, "", set())
        out.append(
            {
                **base,
                "kind": "boot_started",
                "rank": None,
                "line": boot.first_line,
                "ts": boot.started_at,
                "message": f"vLLM {boot.vllm_version or '?'} {boot.model or ''}".rstrip(),
                "detail": {"first_line": boot.first_line},
            }
        )
    for ev in boot.events:
        key = (ev.kind, ev.line, ev.rank)
        if key in k.events:
            continue
        k.events.add(key)
        out.append(
            {
                **base,
                "kind": ev.kind,
                "rank": ev.rank,
                "line": ev.line,
                "ts": ev.ts,
                "message": ev.message,
                "detail": ev.detail,
            }
        )
    if boot.status != k.status and boot.status in ("ready", "failed"):
        k.status = boot.status
        msg = (
            (boot.failure_message or boot.failure or "") if boot.status == "failed" else "Application startup complete."
        )
        said: dict[str, Any] = {
            **base,
            "kind": f"boot_{boot.status}",
            "rank": None,
            "line": None,
            "ts": boot.ready_at if boot.status == "ready" else boot.ended_at,
            "message": msg,
            "detail": {"failure": boot.failure} if boot.status == "failed" else {},
        }
        # in log order: a boot read ready and faulting in one batch says ready before its faults
        out.insert(_before_later(out, said["ts"]) if boot.status == "ready" else len(out), said)
    if boot.status == "ready" and boot.failure and not k.died:
        # the engine died serving: the endpoint is down although the boot was fine (seeds)
        k.died = True
        out.append(
            {
                **base,
                "kind": "boot_died",
                "rank": None,
                "line": None,
                "ts": boot.ended_at,
                "message": boot.failure_message or boot.failure,
                "detail": {"failure": boot.failure},
            }
        )
    return out


def _before_later(out: list[dict], ts: datetime | None) -> int:
    """Where an event at `ts` goes in `out` (log order): before the first later log event."""
    if ts is None:
        return len(out)
    for i, e in enumerate(out):
        t = e.get("ts")
        if e["kind"] != "boot_started" and isinstance(t, datetime):
            try:
                if t > ts:
                    return i
            except TypeError:  # (an aware and a naive time: no order to keep)
                return len(out)
    return len(out)


def _line(ev: dict) -> str:
    """One printed line per event: the log's words escaped (safe), the message cut to 200 columns."""
    from bootlog.safe import one_line, term

    ts = ev["ts"].isoformat() if isinstance(ev.get("ts"), datetime) else (ev.get("ts") or "-")
    rank = f" rank {ev['rank']}" if ev.get("rank") is not None else ""
    msg = one_line(ev.get("message") or "", 200)
    where = f" line {ev['line']}" if ev.get("line") is not None else ""
    said = f": {msg}" if msg else ""
    return term(f"{ts} {ev['source']} boot #{ev['boot_id']} {ev['kind']}{rank}{where}", one_line=True) + said


def event_json(ev: dict) -> str:
    """The event as the JSON an --on-event command reads: what show --json stores for it (no NaN
    or Infinity, which no strict JSON parser reads: a detail printed as `limit=nan` is null)."""
    from bootlog.store.write import jsonable

    return json.dumps(jsonable(ev), allow_nan=False)


def _run_hook_cmd(cmd: str, ev: dict, warn: Callable[[str], None]) -> None:
    """Run the user's command with the event as JSON on stdin (an argument list, no shell).

    Only the command itself is waited for (ON_EVENT_TIMEOUT_S at most, then its session is
    killed): its stdin and stderr are temporary files, not pipes, so a child it leaves running
    (`sh -c "notify & exit 0"`) holds no pipe watch would wait on to close."""
    import tempfile

    argv = shlex.split(cmd)
    with tempfile.TemporaryFile() as stdin, tempfile.TemporaryFile() as stderr:
        stdin.write(event_json(ev).encode())
        stdin.seek(0)
        try:
            proc = subprocess.Popen(argv, stdin=stdin, stdout=subprocess.DEVNULL, stderr=stderr, start_new_session=True)
        except OSError as err:
            warn(f"on-event command {argv[0]!r} failed: {err}")
            return
        try:
            code = proc.wait(timeout=ON_EVENT_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            podman.stop(proc)  # (the handler and what it started: its own session)
            warn(f"on-event command {argv[0]!r} failed: still running after {ON_EVENT_TIMEOUT_S} s: stopped")
            return
        if code != 0:
            stderr.seek(max(0, stderr.seek(0, 2) - 4096))
            last = (stderr.read().decode("utf-8", "replace").strip().splitlines() or [""])[-1]
            warn(f"on-event command {argv[0]!r} exited {code}: {last}")
