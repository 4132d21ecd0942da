"""Container log envelopes -> Records (line number, text, envelope time, stream).

Formats (detect() names):
  plain         files, nohup.out, `podman logs` without -t
  podman_ts     `podman logs --timestamps`: "2026-11-29T14:25:19.320146538Z msg"
  cri           raw k8s-file / CRI: "TS stdout|stderr P|F msg" (P = partial, F = full)
  docker_json   docker json-file: {"log": "...\\n", "stream": "stdout", "time": "..."}
  journal_json  `journalctl -o json`: MESSAGE, __REALTIME_TIMESTAMP, PRIORITY, partial flag
  compose       `docker compose logs` / podman-compose: "name  | msg"
  kaggle        `kaggle kernels logs`: a notebook's console writes as a JSON array (no date)
  wrapped       a plain log hard-wrapped at a console's width (tmux/screen scrollback): pieces rejoined
  journal_short `journalctl` text (short, short-precise, short-iso[-precise]):
                "Nov 29 14:25:19 host frank-primary-qwen[2345]: msg" (podman's journald driver
                logs under the container's name); only the ISO forms carry a usable time

Every format: line numbers count b"\\n" only; text loses ANSI colour codes and NUL bytes (on the
raw bytes, so scan.py can do the same to a whole block), one trailing \\r and a leading UTF-8
byte-order mark, and is decoded as UTF-8 with errors="replace". Nothing here raises on bad bytes.

Partial lines (P records, docker pieces without "\\n", journald partial messages, the stamps
podman 4.3.1 --timestamps prints before every P continuation) are rejoined by `_continues()`: a
piece that ended without a newline is CONTINUED by the next piece of its stream when that piece
  1. is empty (it only carries the newline), or 2. starts with "\r" (a progress bar redraws);
NOT when 3. it came _PAUSE s or more later: a reader that found a full buffer reads again within
  µs (podman 4.3.1: 9-65 µs), the next boot's first record comes only after a restart (205 ms
  for busybox under podman, seconds for vLLM);
else CONTINUED when 4. the read that produced the piece was (nearly) full: that stream's bytes
  under the piece's timestamp (conmon stamps every read() once), newlines included, reach half
  the reader's buffer (conmon STDIO_BUF_SIZE 8192; docker's 16 KiB pieces) -- a process that
  dies mid-line leaves a short tail; half, as docs/podman.md shows a 20 KB line whose first read was
  8105 bytes -- or 5. (stream known: raw formats) the next piece came within _QUICK s.
Otherwise the writer stopped mid-line (a boot that died, or in `2>&1` output a record of the
other stream) and the next piece starts a new record.  A joined line keeps its first
sources.LINE_MAX characters (the pieces after them are dropped and the line counted as cut, as a
physical line is), and records held back behind an unfinished line are bounded by number and
size: memory stays bounded whatever a writer does.

podman_ts skips rule 5: it does not say which stream a piece came from, and `podman logs -t 2>&1`
glues a stdout partial line to the next stderr record (docs/podman.md: "tail-no-newline<TS> boot err",
0.1 ms apart), which must be split -- except on a line ending in "\r": a `podman run -t` tty
(CRLF, one stream; reads stop at 4095 bytes, so rule 4 never fires).  An embedded timestamp counts
only with the line's own zone suffix ("Z" from podman) and never earlier than the piece before.
"""

from __future__ import annotations

import json
import re
from collections import deque
from datetime import datetime, timedelta, timezone
from itertools import chain, islice
from typing import Iterable, Iterator

from bootlog.records import Record
from bootlog.read.scan import Lines, strip_codes
from bootlog.read.sources import LINE_MAX

HEAD_BYTES = 64 * 1024
CONMON_BUF = 8192  # conmon STDIO_BUF_SIZE: one read() -> at most this many bytes per timestamp
DOCKER_PIECE = 16 * 1024  # docker json-file splits lines at 16 KiB
_QUICK = 0.05  # seconds: a same-stream piece this close is a continuation (raw formats)
_PAUSE = 0.15  # seconds: a piece this much later follows a writer that stopped (a restart)
_HOLD = 10_000  # records held back behind an unfinished partial line before it is cut
_HOLD_CHARS = 16 << 20  # ... and their text at most this long

ANSI_S = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
_TS = rb"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:\d\d)"
TS_LEAD = re.compile(rb"(" + _TS + rb") ?")
TS_EMBED = re.compile(rb"(" + _TS + rb") ")
CRI_LINE = re.compile(rb"(" + _TS + rb") (stdout|stderr) ([PF])(?: |$)")
COMPOSE_LINE = re.compile(r"\[?([A-Za-z0-9][\w.\-]*)\]?\s*\| ?")
COMPOSE_TS = re.compile(r"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:\d\d)) ")
JOURNAL_LINE = re.compile(
    rb"(?:[A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d(?:\.\d+)?"  # short / short-precise (no year)
    # short-iso[-precise]: at most microseconds (9 digits are podman's `logs -t`, whose
    # "TS vllm serve: error: …" would otherwise read as host "vllm", identifier "serve")
    rb"|(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d{1,6})?(?:Z|[+-]\d\d:?\d\d)))"
    rb" \S+ [^\s:\[]+(?:\[\d+\])?: ?"
)
_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
_TZ_CACHE: dict[str, timezone] = {"Z": timezone.utc, "z": timezone.utc}
Line = tuple[int, bytes, "bool | None"]  # (line number, raw bytes, hit: scan.Lines' candidates)


def clean(raw: bytes) -> str:
    """Raw line bytes (no "\\n") -> Record text."""
    if b"\x1b" in raw or b"\x00" in raw:
        raw = strip_codes(raw)
    if raw.endswith(b"\r"):
        raw = raw[:-1]
    if raw[:3] == b"\xef\xbb\xbf":  # a UTF-8 byte-order mark (Windows editors, some tools)
        raw = raw[3:]
    return raw.decode("utf-8", "replace")


def clean_text(s: str) -> str:
    """The same cleaning for text that arrives already decoded (JSON envelopes)."""
    if "\x1b" in s:
        s = ANSI_S.sub("", s)
    if "\x00" in s:
        s = s.replace("\x00", "")
    if s.endswith("\r"):
        s = s[:-1]
    return s[1:] if s[:1] == "\ufeff" else s


def parse_ts(text: str | bytes | None) -> datetime | None:
    """RFC 3339 with any number of fraction digits (truncated to µs) -> aware datetime."""
    if text is None:
        return None
    if isinstance(text, bytes):
        text = text.decode("ascii", "replace")
    text = text.strip()
    if len(text) < 20 or text[10] not in "Tt ":
        return None
    rest, i = text[19:], 0
    if rest.startswith("."):
        i = 1
        while i < len(rest) and "0" <= rest[i] <= "9":  # (isdigit() takes "²", which int() does not)
            i += 1
    frac, zone = rest[1:i], rest[i:]
    tz = _TZ_CACHE.get(zone)
    if tz is None:
        m = re.fullmatch(r"([+-])(\d\d):?(\d\d)", zone)
        if m is None:
            return None
        off = timedelta(hours=int(m.group(2)), minutes=int(m.group(3)))
        if off >= timedelta(hours=24):
            return None  # "+99:00" is no offset (timezone() refuses it)
        tz = _TZ_CACHE[zone] = timezone(-off if m.group(1) == "-" else off)
    try:
        dt = datetime.fromisoformat(text[:19].replace("t", "T"))
    except ValueError:
        return None
    return dt.replace(microsecond=int(frac[:6].ljust(6, "0")) if frac else 0, tzinfo=tz)


def _continues(run_bytes: int, buf: int, nxt: bytes | str, gap: float | None, stream_known: bool = True) -> bool:
    """Is `nxt` the continuation of a piece that ended without a newline? (module docstring)"""
    if not nxt or nxt[:1] in (b"\r", "\r"):
        return True
    if gap is not None and gap >= _PAUSE:
        return False
    if run_bytes * 2 >= buf:
        return True
    return stream_known and gap is not None and 0 <= gap < _QUICK


_SHAPES = (
    ("kaggle", lambda ln: ln.lstrip(b"[, ").startswith(b'{"stream_name"')),
    ("cri", CRI_LINE.match),
    ("journal_short", JOURNAL_LINE.match),  # before podman_ts: short-iso lines open with a time too
    ("podman_ts", TS_LEAD.match),
)


def detect(head: bytes) -> str:
    """Name the envelope of a log from its first bytes (~64 KiB)."""
    lines = head.split(b"\n")
    if len(lines) > 1 and lines[-1]:
        lines.pop()  # cut mid-line by the head limit
    sample = [ln for ln in lines if ln.strip()][:400]
    if not sample:
        return "plain"
    n = len(sample)
    objs = [ln for ln in sample if ln.lstrip()[:1] == b"{"]
    if len(objs) * 2 >= n:
        kinds = [_json_kind(ln) for ln in objs[:50]]
        for kind in ("docker_json", "journal_json"):
            if kinds.count(kind) * 2 >= len(kinds):
                return kind
    for fmt, shape in _SHAPES:
        if sum(1 for ln in sample if shape(ln)) * 2 >= n:
            return fmt
    names = [m.group(1) for m in map(COMPOSE_LINE.match, map(clean, sample)) if m]
    # compose only when the whole head consistently looks like it: a stray "x | y" line in a
    # vLLM log (tqdm bars, tables) must not turn a plain log into compose
    if len(names) >= min(n, 3) and len(names) * 10 >= n * 9 and len(set(names)) <= 16:
        return "compose"
    return "wrapped" if wrap_width([clean(ln) for ln in lines[:_WRAP_LOOK]]) else "plain"


def _json_kind(line: bytes) -> str | None:
    try:
        d = json.loads(line)
    except (ValueError, RecursionError):  # (a line nested 100k deep is not a record)
        return None
    if not isinstance(d, dict):
        return None
    if "log" in d and ("time" in d or "stream" in d):
        return "docker_json"
    return "journal_json" if "MESSAGE" in d or "__REALTIME_TIMESTAMP" in d else None


def sniff(chunks: Iterable[bytes]) -> tuple[str, Iterator[bytes]]:
    """Detect the envelope from the first ~64 KiB; returns (format, the same chunks again)."""
    it = iter(chunks)
    head: list[bytes] = []
    size = 0
    for c in it:
        head.append(c)
        size += len(c)
        if size >= HEAD_BYTES:
            break
    joined = b"".join(head)
    if _cr_only(joined[:HEAD_BYTES]):  # old-Mac line ends: "\r" between lines, never "\n"
        head, joined = [c.replace(b"\r", b"\n") for c in head], joined.replace(b"\r", b"\n")
        it = (c.replace(b"\r", b"\n") for c in it)
    return detect(joined[:HEAD_BYTES]), chain(head, it)


_LOG_LINE = re.compile(rb"(?:DEBUG|INFO|WARNING|ERROR|CRITICAL)(?: \d\d-\d\d \d\d:|:  )")


def _cr_only(head: bytes) -> bool:
    """No newline at all, but pieces between carriage returns that are log lines (a tqdm bar
    redrawn with "\r" has none)."""
    if b"\n" in head or head.count(b"\r") < 2:
        return False
    return sum(1 for piece in head.split(b"\r", 400)[:400] if _LOG_LINE.search(piece, 0, 200)) >= 2


def records(lines: Iterable[Line], fmt: str) -> Iterator[Record]:
    """The Records of a log's physical lines (all of them, or scan.Lines' candidates), its
    envelope `fmt` removed."""
    if fmt not in _PARSERS:
        raise ValueError(f"unknown log format: {fmt}")
    if fmt in _JOINING:  # (lines joined past LINE_MAX are counted with those Lines cut: scan.Lines)
        return _PARSERS[fmt](lines, getattr(lines, "count_cut", None))  # type: ignore[call-arg]  # (the joining parsers take it)
    return _PARSERS[fmt](lines)


def read(chunks: Iterable[bytes], fmt: str | None = None, *, start_line: int = 1) -> Iterator[Record]:
    """Every Record of a byte stream (no search); the envelope is detected from the first
    ~64 KiB when fmt is None."""
    if fmt is None:
        fmt, chunks = sniff(chunks)
    return records(Lines(chunks, "all", None, start_line=start_line), fmt)


def _plain(lines: Iterable[Line]) -> Iterator[Record]:
    for n, raw, hit in lines:
        yield Record(n, clean(raw), None, None, hit)


def _compose(lines: Iterable[Line]) -> Iterator[Record]:
    for n, raw, _ in lines:
        text = clean(raw)
        m = COMPOSE_LINE.match(text)
        if m is None:
            yield Record(n, text)
            continue
        msg, ts = text[m.end() :], None
        t = COMPOSE_TS.match(msg)  # `compose logs -t` puts the time after the bar
        if t is not None and (ts := parse_ts(t.group(1))) is not None:
            msg = msg[t.end() :]
        yield Record(n, msg, ts)


def _podman_ts(lines: Iterable[Line]) -> Iterator[Record]:
    """`podman logs -t` lines.  The run (the stamp of the last piece and the bytes printed under
    it: one conmon read) is known only over lines read one after another: after a gap (scan.Lines
    skipped lines) it starts again; scan.Lines hands over the lines before a line that needs it
    (one with a second stamp)."""
    run_ts, run_bytes, key, ts, expect = b"", 0, b"", None, 0
    for n, raw, hit in lines:
        if n != expect:
            run_ts, run_bytes = b"", 0
        expect = n + 1
        m = TS_LEAD.match(raw)
        if m is None:
            yield Record(n, clean(raw), None, None, hit)
            continue
        tsb = m.group(1)
        if tsb != key:
            key, ts = tsb, parse_ts(tsb)
        if tsb != run_ts:
            run_ts, run_bytes = tsb, 0
        pos = m.end()
        if raw.find(b"T", pos) < 0 or TS_EMBED.search(raw, pos) is None:
            run_bytes += len(raw) - pos + 1
            yield Record(n, clean(raw[pos:]), ts, None, hit)
            continue
        # embedded timestamps: P continuations (join) or a new record after a partial line
        zone = b"Z" if tsb[-1:] in (b"Z", b"z") else tsb[-6:]
        tty = raw.endswith(b"\r")  # podman run -t (onlcr, docs/podman.md): one stream, rule 5 applies
        parts: list[bytes] = []
        cur_ts = first_ts = ts
        start = search = pos
        while (e := TS_EMBED.search(raw, search)) is not None:
            ets = _stamp_at(e, zone, cur_ts)
            if ets is None:
                search = e.start() + 1  # a date inside the message, not podman's stamp
                continue
            nxt = raw[e.end() : e.end() + 1]
            again = TS_EMBED.match(raw, e.end()) if nxt and nxt != b"\r" else None
            if again is not None and _stamp_at(again, zone, ets) is not None:
                nxt = b""  # the next piece is empty: another stamp follows at once
            run_bytes += e.start() - start
            parts.append(raw[start : e.start()])
            gap = (ets - cur_ts).total_seconds() if cur_ts is not None else None
            if not _continues(run_bytes, CONMON_BUF, nxt, gap, stream_known=tty):
                yield Record(n, clean(b"".join(parts)), first_ts)
                parts, first_ts = [], ets
            if e.group(1) != run_ts:
                run_ts, run_bytes = e.group(1), 0
            cur_ts, start = ets, e.end()
            search = start
        run_bytes += len(raw) - start + 1
        parts.append(raw[start:])
        yield Record(n, clean(b"".join(parts)), first_ts)


def _stamp_at(e: re.Match, zone: bytes, cur: datetime | None) -> datetime | None:
    """The time of an embedded stamp, or None when it is text: podman writes every stamp of a
    line the same way (same zone suffix), and never earlier than the piece before."""
    if not e.group(1).endswith(zone):
        return None
    ets = parse_ts(e.group(1))
    return None if ets is None or (cur is not None and ets < cur) else ets


class _Chain:
    """One stream's unfinished line: its pieces (their first LINE_MAX characters: `size`, and
    whether more were dropped: `cut`), first line number and first timestamp."""

    __slots__ = ("lineno", "ts", "parts", "last_ts", "run", "slot", "size", "cut")

    def __init__(self, lineno: int, ts: datetime | None) -> None:
        self.parts: list = []  # bytes or text pieces, as the envelope's parser joins them
        self.slot: list[Record | None] = [None]  # where the finished Record goes (its place in line order)
        self.lineno, self.ts, self.last_ts, self.run = lineno, ts, ts, 0
        self.size, self.cut = 0, False

    def add(self, data) -> None:
        room = LINE_MAX - self.size
        if len(data) > room:
            data, self.cut = data[: max(0, room)], True
        if data:
            self.parts.append(data)
            self.size += len(data)


class _Joiner:
    """Joins partial pieces per stream and emits records in the order their lines began.

    A record that completes while an earlier line of the other stream is still open waits
    (bounded by _HOLD) so downstream sees line numbers in order."""

    def __init__(self, buf: int, text_of, on_cut=None) -> None:
        self.buf = buf
        self.text_of = text_of  # list of pieces -> text
        self.on_cut = on_cut  # called once per joined line cut at LINE_MAX
        self.open: dict[str | None, _Chain] = {}
        self.out: deque[list] = deque()  # slots: [Record | None]
        self.held = 0  # characters of the finished records in `out`
        self.run_key: dict[str | None, object] = {}
        self.run_bytes: dict[str | None, int] = {}

    def _run(self, stream: str | None, key: object, nbytes: int) -> int:
        if self.run_key.get(stream) != key:
            self.run_key[stream] = key
            self.run_bytes[stream] = 0
        self.run_bytes[stream] += nbytes
        return self.run_bytes[stream]

    def plain(self, rec: Record) -> Iterator[Record]:
        self._hold(rec)
        yield from self._drain()

    def _hold(self, rec: Record) -> None:
        self.out.append([rec])
        self.held += len(rec.text)

    def piece(
        self, lineno: int, ts: datetime | None, stream: str | None, data, partial: bool, run_key: object
    ) -> Iterator[Record]:
        ch = self.open.get(stream)
        if ch is None and not partial:  # the common case: a whole line, nothing to join
            self._run(stream, run_key, len(data) + 1)
            rec = Record(lineno, self.text_of([data]), ts, stream)
            if not self.out:
                yield rec
                return
            self._hold(rec)
            yield from self._drain()
            return
        if ch is not None:
            gap = (ts - ch.last_ts).total_seconds() if ts and ch.last_ts else None
            if not _continues(ch.run, self.buf, data, gap):
                self._close(stream)
                ch = None
        if ch is None:
            ch = self.open[stream] = _Chain(lineno, ts)
            self.out.append(ch.slot)
        ch.add(data)
        ch.last_ts = ts
        ch.run = self._run(stream, run_key, len(data) + (0 if partial else 1))
        if not partial:
            self._close(stream)
        yield from self._drain()

    def _close(self, stream: str | None) -> None:
        ch = self.open.pop(stream)
        ch.slot[0] = rec = Record(ch.lineno, self.text_of(ch.parts), ch.ts, stream)
        self.held += len(rec.text)
        if ch.cut and self.on_cut is not None:
            self.on_cut()

    def _pop(self) -> Record:
        rec = self.out.popleft()[0]
        self.held -= len(rec.text)
        return rec

    def _drain(self) -> Iterator[Record]:
        out = self.out
        while out:
            if out[0][0] is None:
                if len(out) <= _HOLD and self.held <= _HOLD_CHARS:
                    return
                # a partial line that never ends: cut it rather than hold everything back
                for s, ch in list(self.open.items()):
                    if ch.slot is out[0]:
                        self._close(s)
            yield self._pop()

    def finish(self) -> Iterator[Record]:
        for s in list(self.open):
            self._close(s)
        while self.out:
            yield self._pop()


def _cri(lines: Iterable[Line], on_cut=None) -> Iterator[Record]:
    j = _Joiner(CONMON_BUF, lambda parts: clean(b"".join(parts)), on_cut)
    key, ts = b"", None
    for n, raw, _ in lines:
        m = CRI_LINE.match(raw)
        if m is None:
            yield from j.plain(Record(n, clean(raw)))
            continue
        if m.group(1) != key:
            key, ts = m.group(1), parse_ts(m.group(1))
        yield from j.piece(n, ts, m.group(2).decode(), raw[m.end() :], m.group(3) == b"P", key)
    yield from j.finish()


def _join_text(parts: list[str]) -> str:
    return clean_text("".join(parts))


def _docker_json(lines: Iterable[Line], on_cut=None) -> Iterator[Record]:
    j = _Joiner(DOCKER_PIECE, _join_text, on_cut)
    for n, raw, _ in lines:
        d = _load(raw)
        if d is None or not isinstance(d.get("log"), str):
            yield from j.plain(Record(n, clean(raw)))
            continue
        log = d["log"]
        partial = not log.endswith("\n")
        stream = d.get("stream") if d.get("stream") in ("stdout", "stderr") else None
        ts = parse_ts(d["time"]) if isinstance(d.get("time"), str) else None
        # each docker piece is its own write: the run is the piece itself
        yield from j.piece(n, ts, stream, log if partial else log[:-1], partial, object())
    yield from j.finish()


_PRIORITY_STREAM = {"3": "stderr", "6": "stdout"}
_LONE_SURROGATE = re.compile("[\ud800-\udc7f\udd00-\udfff]")


def _bytes_text(s: str) -> str:
    """Text decoded with surrogateescape (a journal MESSAGE given as bytes, maybe one piece of a
    line conmon split inside a multibyte character) as its pieces joined mean it: bad bytes
    become U+FFFD only now, so a character split across two pieces comes back whole."""
    try:
        s.encode("utf-8")
        return s
    except UnicodeEncodeError:
        pass
    # (a lone surrogate the JSON itself escaped, "\ud83d" of a cut emoji, is no byte: U+FFFD)
    s = _LONE_SURROGATE.sub("\ufffd", s)
    return s.encode("utf-8", "surrogateescape").decode("utf-8", "replace")


def _journal_json(lines: Iterable[Line], on_cut=None) -> Iterator[Record]:
    j = _Joiner(CONMON_BUF, lambda parts: clean_text(_bytes_text("".join(parts))), on_cut)
    nulls = 0  # records whose MESSAGE journalctl left out (null)
    for n, raw, _ in lines:
        d = _load(raw)
        if d is None or not ("MESSAGE" in d or "__REALTIME_TIMESTAMP" in d):
            yield from j.plain(Record(n, clean(raw)))
            continue
        msg = d.get("MESSAGE")
        if isinstance(msg, list):  # journald stores non-UTF-8 / binary messages as byte values
            try:
                msg = bytes(v & 0xFF for v in msg if isinstance(v, int)).decode("utf-8", "surrogateescape")
            except (TypeError, ValueError):
                msg = ""
        elif not isinstance(msg, str):
            nulls += msg is None and "MESSAGE" in d
            msg = ""
        if msg.endswith("\n"):
            msg = msg[:-1]
        ts = None
        rt = d.get("__REALTIME_TIMESTAMP")
        if isinstance(rt, (str, int)) and str(rt).isdigit():
            try:
                ts = _EPOCH + timedelta(microseconds=int(rt))
            except OverflowError:  # past year 9999: not a time, the line still counts
                ts = None
        stream = _PRIORITY_STREAM.get(str(d.get("PRIORITY", "")))
        partial = str(d.get("CONTAINER_PARTIAL_MESSAGE", "")).lower() == "true"
        if "\n" in msg and not partial:
            # a multi-line MESSAGE: one record per line, all at this JSON line's number
            first, *more = msg.split("\n")
            yield from j.piece(n, ts, stream, first, False, object())
            for extra in more:
                yield from j.plain(Record(n, clean_text(_bytes_text(extra)), ts, stream))
            continue
        yield from j.piece(n, ts, stream, msg, partial, object())
    yield from j.finish()
    if nulls:
        import sys

        # journald writes "MESSAGE": null for a field of 4 KiB or more (JSON_THRESHOLD): a long
        # args or config line is lost without --all, and nothing else would say so
        print(
            f"bootlog: warning: {nulls} journal record(s) have no MESSAGE text: journalctl -o json "
            "leaves out fields of 4 KiB or more; export with `journalctl -o json --all`",
            file=sys.stderr,
        )


def _kaggle(lines: Iterable[Line], on_cut=None) -> Iterator[Record]:
    """`kaggle kernels logs` of a notebook: a JSON array, one console write per line
    ('[{"stream_name":"stderr","time":6.4,"data":"INFO ...\\n"}', ',{...}', ']'); a write may hold
    several lines or end mid-line, and goes on in the next write of its stream, as a console
    shows it.  "time" counts seconds from the kernel's start: no date."""
    j = _Joiner(0, _join_text, on_cut)
    for n, raw, _ in lines:
        body = raw.strip().lstrip(b"[,").rstrip(b"],")
        d = _load(body)
        if d is None or not isinstance(d.get("data"), str):
            if body:
                yield from j.plain(Record(n, clean(raw)))
            continue
        stream = d.get("stream_name") if d.get("stream_name") in ("stdout", "stderr") else None
        *whole, rest = d["data"].split("\n")
        for piece in whole:
            yield from j.piece(n, None, stream, piece, False, object())
        if rest:
            yield from j.piece(n, None, stream, rest, True, object())
    yield from j.finish()


def _load(raw: bytes) -> dict | None:
    if raw.lstrip()[:1] != b"{":
        return None
    try:
        d = json.loads(raw.decode("utf-8", "replace"))
    except (ValueError, RecursionError):
        return None
    return d if isinstance(d, dict) else None


def _journal_short(lines: Iterable[Line]) -> Iterator[Record]:
    # "-- Boot 3a9f… --" / "-- No entries --" and the like stay as they are
    for n, raw, _ in lines:
        m = JOURNAL_LINE.match(raw)
        if m is None:
            yield Record(n, clean(raw))
        else:
            yield Record(n, clean(raw[m.end() :]), parse_ts(m.group(1)))


# a console (tmux or screen scrollback, a terminal's copy) that broke every long line into pieces
# of its width: the engine config line of an offline LLM() run, a KV line cut inside its number
_NEW_RECORD = re.compile(
    r"\(\w[^()]* pid=\d+|(?:DEBUG|INFO|WARNING|ERROR|CRITICAL)(?: \d\d-\d\d |:  )|"
    r"Traceback \(|\[rank\d"
)
_WRAP_LOOK = 2000  # lines the width is found from


def _cols(text: str) -> int:
    """Terminal columns of a line (East Asian wide characters take two)."""
    if text.isascii():
        return len(text)
    import unicodedata

    return sum(2 if unicodedata.east_asian_width(c) in "WF" else 0 if unicodedata.combining(c) else 1 for c in text)


def wrap_width(texts: list[str]) -> int | None:
    """The width a console hard-wrapped these lines at, else None: no line is wider, and three
    lines in a row of exactly that width, the second and third starting no new record, hold the
    pieces of one long line (an unwrapped log's widest line is one of a kind; a wrapped log's
    lines of that width may also end there)."""
    cols = [_cols(t) for t in texts]
    w = max(cols, default=0)
    joins = {i for i in range(1, len(cols)) if cols[i - 1] == w and not _NEW_RECORD.match(texts[i])}
    if w < 40 or len(joins) < 3 or not any(cols[i : i + 2] == [w, w] and i + 1 in joins for i in joins):
        return None
    return w


def _wrapped(lines: Iterable[Line], on_cut=None) -> Iterator[Record]:
    """A line of the console's full width goes on in the next, unless that one starts a record
    (a joined line keeps its first LINE_MAX characters, as _Chain does)."""
    it = iter(lines)
    head = list(islice(it, _WRAP_LOOK))
    w = wrap_width([clean(raw) for _, raw, _ in head]) or -1
    last = 0
    line: _Chain | None = None  # the pieces of a line being joined

    def done(ch: _Chain) -> Record:
        if ch.cut and on_cut is not None:
            on_cut()
        return Record(ch.lineno, "".join(ch.parts))

    for n, raw, _ in chain(head, it):
        text = clean(raw)
        if line is not None and last == n - 1 and not _NEW_RECORD.match(text):
            line.add(text)
        else:
            if line is not None:
                yield done(line)
            line = _Chain(n, None)
            line.add(text)
        last = n
        if _cols(text) != w:
            yield done(line)
            line = None
    if line is not None:
        yield done(line)


_PARSERS = {
    "plain": _plain,
    "podman_ts": _podman_ts,
    "cri": _cri,
    "docker_json": _docker_json,
    "journal_json": _journal_json,
    "compose": _compose,
    "journal_short": _journal_short,
    "wrapped": _wrapped,
    "kaggle": _kaggle,
}
_JOINING = ("cri", "docker_json", "journal_json", "kaggle", "wrapped")  # the parsers that join pieces
FORMATS = tuple(_PARSERS)
