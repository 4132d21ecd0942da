"""Which clock the report shows times in: the log's own offset when it has one, else UTC.

The store keeps every time in UTC (or naive, for a log whose lines carry no zone), but an
operator reads the report beside notes written on the log's wall clock ("09:53" in the seeds is
16:53Z).  Where a log's time comes from:

* an envelope stamp with an offset (`podman logs --timestamps` on a host in PDT prints
  `2026-10-02T09:53:01.1-07:00`): that offset;
* an envelope stamp in UTC beside vLLM's own `MM-DD HH:MM:SS`, which vLLM prints in the
  container's local time: the difference of the two, to the quarter hour (a log's lines are
  printed and stamped within seconds of each other);
* no zone at all (a plain log: only vLLM's local stamps): the times as printed, no offset.

A boot stored with an offset other than UTC (the envelope's own) is on that clock without
reading anything again.  `list` and `show` (text and JSON) show every boot on its own clock; the
report and its plots on the newest boot's.

Only the source's first lines are read again (at most HEAD_RECORDS), and only a file or gzip
of this host; a container's log (reading it means running `podman logs`), stdin, a file gone
or another host's: UTC, and the clock says why.
"""
from __future__ import annotations

import itertools
import re
from collections import Counter
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone, tzinfo

HEAD_RECORDS = 2000  # lines read from the source's start (one log has one clock)
AGREE = 3  # stamps that must give the same offset before it is believed
QUARTER = 15 * 60
MAX_OFFSET_S = 14 * 3600  # (UTC-12 .. UTC+14)
SLACK_S = 120  # a stamp vs. its envelope time: printed and read within this


@dataclass(frozen=True)
class Clock:
    """Times shown in `zone` (None: as stored, naive); `says` is the page's sentence about it."""

    zone: tzinfo | None
    says: str

    def at(self, ts: str | datetime | None) -> datetime | None:
        """A stored time (ISO text or datetime) on this clock; None for no/unreadable time."""
        if ts is None:
            return None
        if isinstance(ts, str):
            text = ts[:-1] + "+00:00" if ts.endswith(("Z", "z")) else ts
            try:
                ts = datetime.fromisoformat(text)
            except ValueError:
                return None
        if ts.tzinfo is None or self.zone is None:
            return ts
        try:
            return ts.astimezone(self.zone)
        except OverflowError:  # a stamp at the edge of the range: shown on its own offset
            return ts

    def text(self, ts: str | datetime | None, fmt: str = "%Y-%m-%d %H:%M:%S") -> str:
        dt = self.at(ts)
        return dt.strftime(fmt) if dt is not None else ""

    def stamp(self, ts: str | datetime | None) -> str:
        """A time for a terminal, always with its zone: "2026-10-03 09:53:01 -07:00", "… UTC",
        or "… (no zone)" for a log whose lines carry none."""
        dt = self.at(ts)
        if dt is None:
            return ""
        return dt.strftime("%Y-%m-%d %H:%M:%S ") + (offset_name(dt.tzinfo) if dt.tzinfo is not None
                                                     and dt.utcoffset() is not None else "(no zone)")

    def iso(self, ts: str | datetime | None) -> str | None:
        """A time for JSON: ISO 8601 on this clock, with its offset (naive stays naive); text
        that is no time is passed on as it is."""
        dt = self.at(ts)
        if dt is None:
            return ts if isinstance(ts, str) or ts is None else str(ts)
        return dt.isoformat()


UTC = Clock(timezone.utc, "times in UTC")


TIME_KEYS = ("started_at", "ready_at", "ended_at")  # a boot object's times


def on_clock(doc: dict, clock: Clock) -> dict:
    """A show --json document (or a bare boot object, as `list --json` has them) with its times
    on `clock`, each an ISO time with the log's offset: the contract's shape, one instant, the
    zone the operator's notes are written in."""
    boot = doc.get("boot", doc)
    moved = {**boot, **{k: clock.iso(boot[k]) for k in TIME_KEYS if boot.get(k) is not None}}
    if "boot" not in doc:
        return moved
    events = [{**e, "ts": clock.iso(e["ts"])} if e.get("ts") is not None else e for e in doc.get("events") or []]
    return {**doc, "boot": moved, **({"events": events} if "events" in doc else {})}


def offset_name(zone: tzinfo) -> str:
    """-07:00, +05:30, UTC."""
    off = zone.utcoffset(None) or timedelta(0)  # (fixed offsets only: what an ISO stamp carries)
    if not off:
        return "UTC"
    secs = int(off.total_seconds())
    sign = "-" if secs < 0 else "+"
    h, m = divmod(abs(secs) // 60, 60)
    return f"{sign}{h:02d}:{m:02d}"


def log_clock(store, doc: dict) -> Clock:
    """The clock of the boot in `doc` (a show --json document): see the module docstring."""
    return boot_clocks(store, [doc["boot"]])[doc["boot"]["id"]]


def boot_clocks(store, boots: list[dict]) -> dict[int, Clock]:
    """Boot id -> its clock, for `boots` (show --json "boot" objects, as `list` has them): one
    query, and each source's first lines read at most once."""
    ids = list(dict.fromkeys(b["id"] for b in boots))
    where: dict[int, tuple] = {}
    for i in range(0, len(ids), 500):  # (SQLite's old limit on ? marks is 999)
        chunk = ids[i:i + 500]
        for bid, *row in store.rows("SELECT boots.id, sources.name, sources.kind, boots.host FROM boots JOIN "
                                    "sources ON sources.id = boots.source_id WHERE boots.id IN "
                                    f"({', '.join('?' * len(chunk))})", chunk):
            where[bid] = tuple(row)
    seen: dict[tuple, Clock] = {}
    out = {}
    for b in boots:
        row = where.get(b["id"])
        out[b["id"]] = _clock(b.get("started_at"), row, seen)
    return out


def _clock(started_at: str | None, row: tuple | None, seen: dict[tuple, Clock]) -> Clock:
    started = Clock(None, "").at(started_at)
    if started is not None and started.tzinfo is None:
        return Clock(None, "times as the log printed them (its lines carry no zone)")
    if started is not None and started.utcoffset():
        # the envelope stamped the host's own offset (podman on a host in PDT): stored with it
        zone = timezone(started.utcoffset())
        return Clock(zone, f"times in {offset_name(zone)}, the log's offset (the envelope's stamps)")
    if row is None:
        return UTC
    if row not in seen:
        seen[row] = _source_clock(*row)
    return seen[row]


def _source_clock(name: str, kind: str, host: str | None) -> Clock:
    if kind not in ("file", "gzip"):
        why = "it was read from a container" if kind == "container" else "it was read from stdin"
        return Clock(timezone.utc, f"times in UTC (the log's own offset is not known: {why})")
    from bootlog.errors import BootlogError
    from bootlog.reread import stored_file

    try:
        found = head_offset(stored_file(kind, name, host))
    except (BootlogError, OSError) as err:  # the file is gone or unreadable since it was stored
        return Clock(timezone.utc, f"times in UTC (the log's own offset is not known: {err})")
    if found is None:
        return Clock(timezone.utc, "times in UTC (the log's lines give no other offset)")
    zone, how = found
    name = offset_name(zone)
    if name == "UTC":
        return Clock(timezone.utc, f"times in UTC, the log's own clock ({how})")
    return Clock(zone, f"times in {name}, the log's offset ({how})")


def head_offset(path: str) -> tuple[tzinfo, str] | None:
    """(the offset of the log at `path`, how it was found) from its first lines, or None."""
    from bootlog import envelope
    from bootlog.sources import open_source
    from bootlog.vline import PREFIX

    stamp = re.compile(PREFIX)
    votes: Counter[int] = Counter()
    src = open_source(path)
    for rec in itertools.islice(envelope.read(src.chunks(size=1 << 16)), HEAD_RECORDS):
        if rec.ts is None:
            continue
        off = rec.ts.utcoffset()
        if off:  # the envelope carries the host's offset itself
            return timezone(off), "the envelope's stamps"
        m = stamp.search(rec.text)
        secs = _stamp_offset(m, rec.ts) if m else None
        if secs is not None:
            votes[secs] += 1
            if votes[secs] >= AGREE:
                return timezone(timedelta(seconds=secs)), "vLLM's own clock against the envelope's UTC stamps"
    return None


def _stamp_offset(m: re.Match, ts: datetime) -> int | None:
    """Seconds vLLM's local `MM-DD HH:MM:SS` is ahead of the UTC envelope time `ts`, to the
    quarter hour; None when they are not one moment on two clocks."""
    utc = ts.astimezone(timezone.utc).replace(tzinfo=None)
    best: int | None = None
    for year in (utc.year, utc.year - 1, utc.year + 1):  # (New Year's Eve on either side)
        try:
            local = datetime(year, int(m["mo"]), int(m["d"]), int(m["h"]), int(m["mi"]), int(m["s"]))
        except ValueError:
            continue
        diff = (local - utc).total_seconds()
        if best is None or abs(diff) < abs(best):
            best = int(diff)
    if best is None:
        return None
    quarter = round(best / QUARTER) * QUARTER
    if abs(quarter) > MAX_OFFSET_S or abs(best - quarter) > SLACK_S:
        return None
    return quarter
