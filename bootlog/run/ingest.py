"""Ingest: source -> candidate lines -> envelope -> vLLM lines -> boots -> store, one transaction
per source.

Everything is parsed before anything is written, so bad input leaves the database as it was.
Memory stays bounded whatever the log's length: the source is streamed, only candidate lines are
decoded, a boot's runtime samples are kept as compact chunks (records.Samples), and what would
still grow (chunks past a budget, the boots a crash loop retires) goes to a spill file
(store/spill.py) until it is stored.
"""

from __future__ import annotations

import os
import sys
import time
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Iterable, Iterator

from bootlog.read.position import CUT, end_of_lines, position_key, read_head, still_holds
from bootlog.records import Boot, Metric, Record

RESUMABLE = ("plain", "podman_ts")  # record formats whose lines never span a resume offset


@dataclass
class IngestedBoot:
    """A stored boot of this ingest: its id, whether this ingest created it, and the Boot."""

    id: int
    created: bool
    boots: "Boots"
    index: int

    @property
    def boot(self) -> Boot:
        return self.boots[self.index]  # (a retired boot is read back from the spill file)


class Ingested(list):
    """The IngestedBoot list of one source, plus how it was read."""

    resumed_at_line: int | None = None  # a resumed read started after this many lines
    up_to_date: bool = False  # a resumed read found nothing new
    cut_lines: int = 0  # lines longer than sources.LINE_MAX, cut there
    truncated: str | None = None  # why the source ended early ("truncated gzip"); its boots stored
    stopped_at_line: int | None = None  # then: the last whole line read


def default_host() -> str:
    return os.uname().nodename


_PROGRESS_DELAY = 1.0  # seconds of reading before a bar appears: small ingests never draw one
_PROGRESS_EVERY = 0.2  # seconds between redraws


def _progress(chunks: Iterable[bytes], total: int | None, start: int = 0) -> Iterator[bytes]:
    """A bytes-read counter on stderr (the caller enables it only when stderr is a terminal):
    nothing during the first second, erased when reading ends or fails."""
    t0, last = time.monotonic(), 0.0
    done, drawn = start, False
    try:
        for chunk in chunks:
            done += len(chunk)
            now = time.monotonic()
            if now - t0 >= _PROGRESS_DELAY and now - last >= _PROGRESS_EVERY:
                last = now
                pct = f" {min(100.0, 100 * done / total):5.1f}%" if total else ""
                sys.stderr.write(f"\rbootlog: read {done / 2**20:,.0f} MiB{pct}")
                sys.stderr.flush()
                drawn = True
            yield chunk
    finally:
        if drawn:
            sys.stderr.write("\r\x1b[K")
            sys.stderr.flush()


def _no_bom(chunks: Iterable[bytes]) -> Iterator[bytes]:
    """The chunks without a UTF-8 byte order mark at the very start (a file saved by a Windows
    tool): in front of a `podman logs -t` stamp or a JSON record it hides the envelope."""
    it = iter(chunks)
    head = b""
    for c in it:
        head += c
        if len(head) >= 3:
            break
    if head := head.removeprefix(b"\xef\xbb\xbf"):
        yield head
    yield from it


def _upto(chunks: Iterable[bytes], n: int) -> Iterator[bytes]:
    """Stop after n bytes: a file that grows while it is read is read up to its size at the start."""
    for chunk in chunks:
        if n <= 0:
            return
        yield chunk[:n]
        n -= len(chunk)


def read_records(
    source,
    *,
    start: int = 0,
    limit: int | None = None,
    start_line: int = 1,
    fmt: str | None = None,
    literals: tuple[str, ...] = (),
    every: bool = False,
    progress: bool = False,
) -> tuple[Iterator[Record], Any]:
    """(the Records of a source, the scan.Lines that read them: lines_seen, cut_lines).

    Only candidate lines (holding one of the parser's literals or `literals`, or owed as context
    after a traceback) unless `every`; start/limit: the byte range to read (a resumed read),
    start_line: the line number at `start`."""
    from bootlog.read import envelope, scan
    from bootlog.parse.parse import all_literals
    from bootlog.read.sources import BLOCK

    chunks = source.chunks(start, BLOCK)
    if limit is not None:
        chunks = _upto(chunks, limit - start)
    if not start:  # (after the limit: a BOM counts among the file's bytes)
        chunks = _no_bom(chunks)
    if progress:
        # (a gzip source's size is the compressed one: bytes read are no share of it)
        chunks = _progress(
            chunks, limit if limit is not None else (None if source.kind == "gzip" else source.size), start
        )
    if fmt is None:
        fmt, chunks = envelope.sniff(chunks)
    search = scan.Search((*all_literals(), *literals))
    lines = scan.Lines(chunks, "all" if every else fmt, search, start_line=start_line)
    return envelope.records(lines, fmt), lines


def _year_hint(source) -> int:
    mtime = getattr(source, "mtime", None)
    return datetime.fromtimestamp(mtime).year if mtime else datetime.now().year


class Boots:
    """The boots of one parse, in order: most in memory, those retired while parsing (a crash
    loop's thousands) in the spill file, read back whenever one is asked for (none is kept)."""

    def __init__(self, items: list, spill) -> None:
        self.items, self.spill = items, spill

    def __len__(self) -> int:
        return len(self.items)

    def __getitem__(self, i: int) -> Boot:
        x = self.items[i]
        return self._load(x) if isinstance(x, tuple) else x

    def __iter__(self) -> Iterator[Boot]:
        for i in range(len(self.items)):
            yield self[i]

    def _load(self, ref: tuple[int, int]) -> Boot:
        b = self.spill.load(ref)
        b.samples.spill = self.spill
        return b


def _retire(spill):
    """BootSplitter's retire callback: a finished boot (it gets no more lines) to the spill file."""

    def retire(b: Boot):
        b.samples.spill = None  # (the chunks' references stay: Boots puts the spill back)
        got = spill.dump(b)
        b.samples.spill = spill
        return got

    return retire


def read_boots(
    source,
    *,
    resume: "Resume | None" = None,
    limit: int | None = None,
    plan=None,
    progress: bool = False,
    run_bounds: list | None = None,
) -> tuple[Boots, int, int]:
    """(the boots of a source, or of its unread tail when resuming; the physical lines read;
    the lines cut at sources.LINE_MAX).  A plan's own patterns run over the same single read (stdin
    can be read only once): their literals join the scan's, and a pattern without a literal
    makes every line be read."""
    from bootlog.parse.boots import BootSplitter
    from bootlog.parse.parse import parse
    from bootlog.store.spill import Spill

    user = getattr(plan, "patterns", None) or []
    extra = tuple(up.literal for up in user if up.literal)
    kw: dict[str, Any] = dict(limit=limit, literals=extra, every=len(extra) < len(user), progress=progress)
    if resume is not None:
        kw.update(start=resume.offset, start_line=resume.lines + 1, fmt=resume.fmt)
    recs, lines = read_records(source, **kw)
    hits = UserHits(plan) if user else None
    if hits is not None:
        recs = hits.watch(recs)
    spill = Spill()
    # (a plan's hits are attached to the boots after parsing: then all stay in memory)
    splitter = BootSplitter(
        resume.status if resume else None, retire=None if hits else _retire(spill), spill=spill, run_bounds=run_bounds
    )
    base = resume.lines if resume else 0
    boots = Boots(
        parse(recs, year=_year_hint(source), splitter=splitter, total_lines=lambda: base + lines.lines_seen), spill
    )
    if hits is not None:
        hits.attach(list(boots))
    return boots, lines.lines_seen, lines.cut_lines


def _drop_silent_last(boots: "Boots") -> None:
    """Forget the last boot if it printed nothing: no version, figure, config, event or sample."""
    last = boots[len(boots) - 1] if len(boots) else None
    if last is not None and not (last.vllm_version or last.metrics or last.config or last.events or last.samples):
        boots.items.pop()


def _exits(boots: "Boots", runs: list) -> None:
    """Each boot of a container's earlier run gets the exit code its run died with (the engine
    says it only of the latest run; its `died` events say it of each): a server that died
    serving and exited 0 is why on-failure never restarted it."""
    died = [r for r in runs if r.status == "died" and r.exit_code is not None]
    for b in boots.items:
        if isinstance(b, tuple) or b.ended_at is None or b.ended_at.tzinfo is None:
            continue  # (a retired boot is on disk; a boot without envelope times has no run)
        end = next((r for r in died if r.at >= b.ended_at), None)
        if end is None:
            continue
        from bootlog.read.podman import format_time

        finished = format_time(int(end.at.timestamp()) * 10**9 + end.at.microsecond * 1000)
        b.deploy = {**(b.deploy or {}), "exit_code": end.exit_code, "finished_at": finished}


def parse_source(source) -> list[Boot]:
    """The boots of a whole source."""
    return list(read_boots(source)[0])


class UserHits:
    """A plan's user-pattern figures and events, collected as records stream past, then put on
    the boot whose lines hold them."""

    def __init__(self, plan) -> None:
        self.plan = plan
        self.found: list[tuple[int, object, list]] = []  # (line, ts, hits)

    def watch(self, recs: Iterable[Record]) -> Iterator[Record]:
        from bootlog.parse.userpatterns import apply_user_patterns

        for rec in recs:
            got = apply_user_patterns(self.plan, (rec,))  # (with its line number: a value that is
            # no number is said with it)
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


@dataclass
class Resume:
    """Where a re-ingest of a grown file picks up: after the last complete line read before."""

    offset: int  # byte offset just past the last newline already read
    lines: int  # physical lines before `offset`
    fmt: str  # envelope format, detected from the file's head
    status: str  # status of the stored boot the new lines continue
    boot_id: int
    key: str = ""  # the positions row it was read from (and the one to move on)
    head: str = ""  # "length:digest" of the file's head, as stored and found again


def _position_key(source, host: str | None) -> str:
    """This file's read position on `host` (None: the key earlier versions wrote)."""
    from bootlog.store.write import stored_name, stored_path

    return position_key("ingest", stored_path(source.name), stored_name(host) if host is not None else None)


def _stored_position(store, source, info) -> tuple[str, tuple[int, str] | None]:
    """(key, (byte offset, head text) or None): this file's read position on this host."""
    from bootlog.store.reads import get_position

    key = _position_key(source, info.host)
    pos = get_position(store, key)
    if pos is None and info.host == default_host():
        # stored before positions were kept per host: this machine's (it moves on under its
        # old key, so an upgrade costs no full read)
        key = _position_key(source, None)
        pos = get_position(store, key)
    return key, pos


def _resume_point(store, source, info, key: str, pos: tuple[int, str] | None) -> Resume | None:
    """The stored position `pos` if it still describes this file's beginning, else None (read it
    all; CUT: the last read ended inside a line)."""
    from bootlog.store.reads import boot_status, last_boot_of_source

    if pos is None or pos[1] == CUT:
        return None
    offset, head = pos
    try:
        n, digest, lines, fmt, *tail = head.split(":")
        if not still_holds(source.name, offset, head):
            return None  # truncated, rotated or replaced: read from the start
    except ValueError:
        return None
    if int(n) == 0 or (tail and not tail[0].isdigit()):
        return None  # read when empty (any content "matches"), or that read stored no boot
    if tail:
        got = boot_status(store, int(tail[0]))
        last = (int(tail[0]), got) if got is not None else None
    else:
        last = last_boot_of_source(store, info.key, int(lines))
    if last is None or last[1] != "ready" or fmt not in RESUMABLE:
        # a boot caught mid-start is re-read whole (its start decides its figures), and so is a
        # file whose last boot failed: lines after it may still belong to an older server
        # running beside it (two servers interleaved in one nohup.out)
        return None
    return Resume(
        offset=offset, lines=int(lines), fmt=fmt, status=last[1], boot_id=last[0], key=key, head=f"{n}:{digest}"
    )


ASK = object()  # ingest(deploy=ASK): ask the engine for the deploy context of the current run


def deploy_of(container: str, engine: str = "podman", plan=None) -> dict | None:
    """What the container engine says of the container's current run (deploy.py), with the
    plan's env file as it is now; None when the engine cannot say (the container is gone)."""
    from bootlog.measure.deploy import deploy_context, env_file_snapshot
    from bootlog.errors import BootlogError

    try:
        ctx = deploy_context(container, engine)
    except BootlogError:
        return None
    if getattr(plan, "env_file", None) is not None:
        try:
            ctx["env_file"] = env_file_snapshot(plan.env_file)
        except BootlogError:
            pass
    return ctx


def ingest(
    store,
    spec: str | None,
    *,
    container: str | None = None,
    container_engine: str = "podman",
    host: str | None = None,
    plan=None,
    progress: bool = False,
    source=None,
    deploy: Any = ASK,
    _again: int = 0,
) -> Ingested:
    """Parse one source completely, then store all its boots in one transaction.

    A plain file ingested before is read from where the last read stopped (if its head is
    unchanged and its last boot had finished starting): the new lines extend that boot and add
    new ones.  Anything else is read whole; the store keeps re-reads idempotent.  A container's
    newest boot gets the deploy context of its run: `deploy` (None: none known), by default what
    the engine says now.
    """
    from bootlog.read.envelope import detect
    from bootlog.read.sources import container_source, open_source
    from bootlog.store.write import FILE_KINDS, TAIL, PositionMoved, SourceInfo, save_boots, stored_name, stored_path

    if source is None:
        # a file given with a container's name is that container's saved log (`podman logs >
        # f`): its boots join the container's history, read as the file they are
        source = open_source(spec) if spec is not None else container_source(container, engine=container_engine)
    out = Ingested()
    # a file is stored by its absolute path: read again later from any directory, it is the same
    name = stored_path(source.name) if source.kind in FILE_KINDS else stored_name(source.name)
    info = SourceInfo(name=name, kind=source.kind, container=container, host=host or default_host())
    resume = limit = position = None
    reread = False  # the last read of this file ended inside a line: its boots are written again
    if source.kind == "file" and plan is None:
        limit = os.stat(source.name).st_size
        key, pos = _stored_position(store, source, info)
        resume = _resume_point(store, source, info, key, pos)
        reread = pos is not None and pos[1] == CUT
        if resume is not None:
            # a resumed read takes complete lines only: a half-written last line waits for the
            # next read (it cannot be corrected once merged into a stored boot)
            limit = end_of_lines(source.name, limit)
            if limit is None:
                resume, limit = None, os.stat(source.name).st_size
            elif limit == resume.offset:
                out.up_to_date, out.resumed_at_line = True, resume.lines
                return out
    # a container's runs are bounded by the engine's init/died events: every start its own boot
    runs = []
    if source.kind == "container" and spec is None and container:
        from bootlog.read.podman import run_events

        runs = run_events(container, container_engine)
    boots, seen, out.cut_lines = read_boots(
        source, resume=resume, limit=limit, plan=plan, progress=progress, run_bounds=[r.at for r in runs] or None
    )
    read_to = (resume.lines if resume else 0) + seen  # the number of the last line read
    end = end_of_lines(source.name, limit) if limit is not None else None
    if end != limit and len(boots) and boots[len(boots) - 1].first_line == read_to:
        # a file caught mid-line: a boot opened by its half last line alone is no boot yet (a
        # cut "Unknown vLLM environment variable" repeats an earlier one); the next read sees it
        _drop_silent_last(boots)
    if getattr(source, "stopped", None):
        _drop_silent_last(boots)  # the boot the cut stopped had printed nothing yet
        if not boots:  # nothing before the cut: the input is unreadable, as it was
            from bootlog.errors import InputError

            raise InputError(f"{source.stopped}: {source.name}", path=source.name)
        out.truncated, out.stopped_at_line = source.stopped, read_to
    if source.kind == "container" and len(boots) and not isinstance(boots.items[-1], tuple):
        last = boots.items[-1]
        inits = [r.at for r in runs if r.status == "init"]
        if not (inits and last.ended_at is not None and last.ended_at.tzinfo is not None and last.ended_at < inits[-1]):
            # (not when a run began after its last line: the engine's word is that run's)
            last.deploy = deploy_of(container, container_engine, plan) if deploy is ASK else deploy
    _exits(boots, runs)
    if limit is not None:
        # a file caught mid-line gets no position but CUT: its half line was read into a boot
        # that a resumed read could no longer correct, so the next ingest reads it whole and
        # writes its boots again
        if end == limit:
            head, head_text = read_head(source.name)
            key = resume.key if resume is not None else _position_key(source, info.host)
            same = resume is not None and resume.head == head_text
            fmt = resume.fmt if same else detect(head)
            # (the save puts the id of the boot this read ends in after the last ":")
            position = (key, end, f"{head_text}:{read_to}:{fmt}:{TAIL}")
        elif resume is None:  # (and a position an earlier read left is stale)
            position = (_position_key(source, info.host), 0, CUT)
    extend = None
    if resume is not None:
        out.resumed_at_line = resume.lines
        if not (boots and boots[0].continued) and seen:
            # no vLLM line before the next start (or none at all): the stored boot still runs on
            end_line = boots[0].first_line - 1 if boots else read_to
            if end_line > resume.lines:
                boots.items.insert(
                    0, Boot(first_line=resume.lines + 1, last_line=end_line, status=resume.status, continued=True)
                )
        if boots and boots[0].continued:
            extend = resume.boot_id
    if not boots and position is None:
        return out
    try:
        saved = save_boots(
            store,
            info,
            boots,  # type: ignore[arg-type]  # (Boots reads like a sequence)
            position=position,
            extend=extend,
            planned=plan is not None,
            resumed_from=resume.offset if resume is not None else None,
            reread=reread,
        )
    except PositionMoved:
        # another ingest stored these lines while this one read them: read again from its position
        if _again >= 5:
            from bootlog.errors import StoreError

            raise StoreError(f"{source.name}: other ingests keep storing this file meanwhile; try again") from None
        return ingest(
            store,
            spec,
            container=container,
            container_engine=container_engine,
            host=host,
            plan=plan,
            progress=progress,
            source=source,
            deploy=deploy,
            _again=_again + 1,
        )
    out.extend(IngestedBoot(i, c, boots, k) for k, (i, c) in enumerate(saved))
    return out
