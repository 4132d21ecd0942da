"""Ingest: source -> envelope -> vLLM lines -> boots -> store, in one transaction per source.

Everything is parsed before anything is written, so bad input (a truncated gzip half-way through)
leaves the database exactly as it was.
"""
from __future__ import annotations

import os
import socket
import sys
import time
from dataclasses import dataclass
from datetime import datetime
from typing import Iterable, Iterator

from bootlog.records import Boot, Event, Metric, Record


@dataclass
class IngestedBoot:
    id: int
    created: bool
    boot: Boot


def default_host() -> str:
    return socket.gethostname()


def _year_hint(source) -> int:
    if getattr(source, "mtime", None):
        return datetime.fromtimestamp(source.mtime).year
    return datetime.now().year


def scan_literals() -> tuple[str, ...]:
    from bootlog import boots, patterns

    return tuple(dict.fromkeys((*boots.LITERALS, *patterns.LITERALS)))


class _Progress:
    """A bytes-read counter on stderr, only when a human is watching."""

    def __init__(self, total: int | None, enabled: bool) -> None:
        self.total, self.enabled, self.done, self.last = total, enabled, 0, 0.0

    def wrap(self, chunks: Iterable[bytes]) -> Iterator[bytes]:
        for chunk in chunks:
            self.done += len(chunk)
            now = time.monotonic()
            if self.enabled and now - self.last > 0.2:
                self.last = now
                pct = f" {100 * self.done / self.total:5.1f}%" if self.total else ""
                sys.stderr.write(f"\rbootlog: read {self.done / 2**20:,.0f} MiB{pct}")
                sys.stderr.flush()
            yield chunk
        if self.enabled and self.last:
            sys.stderr.write("\r\x1b[K")
            sys.stderr.flush()


def read_records(source, *, fast: bool = True, progress: bool = False) -> tuple[Iterator[Record], object]:
    """Records of a source: only candidate lines on the fast path, every line otherwise."""
    chunks = _Progress(getattr(source, "size", None), progress).wrap(source.chunks())
    if fast and not os.environ.get("BOOTLOG_FULL_SCAN"):
        from bootlog.scan import Scanner

        scanner = Scanner(scan_literals(), after={"Traceback (most recent call last)": 200})
        return scanner.records(chunks), scanner
    from bootlog.envelope import records

    return records(chunks), None


def parse_source(source, *, fast: bool = True, progress: bool = False) -> list[Boot]:
    from bootlog.parse import parse

    recs, scanner = read_records(source, fast=fast, progress=progress)
    counted = _Counter(recs)
    boots = parse(counted, year=_year_hint(source))
    total = getattr(scanner, "lines_seen", None) or counted.last
    if boots and total:
        # the scanner saw more physical lines than the last candidate: the boot that ends last
        # (not always the newest: two servers can interleave) runs to the end of the source
        tail = max(boots, key=lambda b: b.last_line)
        tail.last_line = max(tail.last_line, total)
    return boots


class _Counter:
    def __init__(self, it: Iterable[Record]) -> None:
        self.it, self.last = it, 0

    def __iter__(self) -> Iterator[Record]:
        for rec in self.it:
            self.last = rec.lineno
            yield rec


def apply_user_patterns(plan, source, boots: list[Boot]) -> None:
    """Run a plan's own patterns over the source and attach their figures to the right boot."""
    from bootlog.envelope import records
    from bootlog.plan import user_pattern_hits

    if not boots or not getattr(plan, "patterns", None):
        return
    ordered = sorted(boots, key=lambda b: b.first_line)
    for rec in records(source.chunks()):
        hits = user_pattern_hits(plan, rec.text)
        if not hits:
            continue
        boot = next((b for b in reversed(ordered) if b.first_line <= rec.lineno), None)
        if boot is None or rec.lineno > boot.last_line:
            continue
        for h in hits:
            if isinstance(h, Metric):
                h.line = h.line or rec.lineno
                h.ts = h.ts or rec.ts
                boot.metrics.append(h)
            elif isinstance(h, Event):
                h.line = h.line or rec.lineno
                h.ts = h.ts or rec.ts
                boot.events.append(h)


def ingest(engine, spec: str | None, *, container: str | None = None, container_engine: str = "podman",
           host: str | None = None, plan=None, progress: bool = False, fast: bool = True) -> list[IngestedBoot]:
    """Parse one source completely, then store all its boots in one transaction."""
    from bootlog.sources import container_source, open_source
    from bootlog.store.queries import SourceInfo, save_boots

    source = container_source(container, engine=container_engine) if container else open_source(spec)
    boots = parse_source(source, fast=fast, progress=progress)
    if plan is not None:
        apply_user_patterns(plan, source, boots)
    if not boots:
        return []
    info = SourceInfo(name=source.name, kind=source.kind, container=container,
                      host=host or default_host())
    saved = save_boots(engine, info, boots)
    return [IngestedBoot(id=i, created=c, boot=b) for (i, c), b in zip(saved, boots)]
