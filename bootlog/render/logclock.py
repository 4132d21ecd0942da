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
reading anything again (run.reread.boot_clocks).  `list` and `show` (text and JSON) show every
boot on its own clock; the report and its plots on the newest boot's.

Only the source's first lines are read again (at most HEAD_RECORDS, by run.reread.log_clock),
and only a file or gzip of this host; a container's log (reading it means running `podman logs`), stdin, a file gone
or another host's: UTC, and the clock says why.
"""

from __future__ import annotations

import itertools
import re
from collections import Counter
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone, tzinfo
from typing import Any, Iterable

from bootlog.parse.vline import PREFIX
from bootlog.records import Record

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
        return dt.strftime("%Y-%m-%d %H:%M:%S ") + (
            offset_name(dt.tzinfo) if dt.tzinfo is not None and dt.utcoffset() is not None else "(no zone)"
        )

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
    phases = [
        {**p, **{k: clock.iso(p[k]) for k in ("start", "end") if p.get(k) is not None}}
        for p in doc.get("timeline") or []
    ]
    return {
        **doc,
        "boot": moved,
        **({"events": events} if "events" in doc else {}),
        **({"timeline": phases} if "timeline" in doc else {}),
    }


def offset_name(zone: tzinfo) -> str:
    """-07:00, +05:30, UTC."""
    off = zone.utcoffset(None) or timedelta(0)  # (fixed offsets only: what an ISO stamp carries)
    if not off:
        return "UTC"
    secs = int(off.total_seconds())
    sign = "-" if secs < 0 else "+"
    h, m = divmod(abs(secs) // 60, 60)
    return f"{sign}{h:02d}:{m:02d}"


def stamps_offset(records: Iterable[Record]) -> tuple[tzinfo, str] | None:
    """(the offset of a log, how it was found) from its first records, or None."""
    stamp = re.compile(PREFIX)
    votes: Counter[int] = Counter()
    for rec in itertools.islice(records, HEAD_RECORDS):
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


def clock_of(found: tuple[tzinfo, str] | None) -> Clock:
    """The clock of a log whose head gave `found` (stamps_offset)."""
    if found is None:
        return Clock(timezone.utc, "times in UTC (the log's lines give no other offset)")
    zone, how = found
    name = offset_name(zone)
    if name == "UTC":
        return Clock(timezone.utc, f"times in UTC, the log's own clock ({how})")
    return Clock(zone, f"times in {name}, the log's offset ({how})")


def unknown(why: Any) -> Clock:
    """UTC, for a log whose own offset cannot be known (`why`)."""
    return Clock(timezone.utc, f"times in UTC (the log's own offset is not known: {why})")


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
