"""The data that flows through bootlog, stage by stage.

source bytes -> Record (envelope removed) -> VLine (vLLM prefix parsed) -> Boot (figures,
config, events, runtime samples) -> store.  Every stage is a plain function over an iterator;
these classes are the only things the stages share.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Iterator

# the event kinds bootlog itself reports (docs/figures.md); a plan's own event patterns add others
EVENT_KINDS = (
    "oom",
    "engine_init_failed",
    "value_error",
    "kv_cache_insufficient",
    "traceback",
    "gdn_hip_fault",
    "gdn_hip_fault_cap",
    "worker_died",
    "warning",
    "gpu_fault",
    "crash_loop",
    "engine_died",
    "compile_cache_miss",
)


@dataclass(slots=True)
class Record:
    """One logical line after the container envelope is removed."""

    lineno: int  # 1-based physical line (count of b"\n" before it, +1) where the line starts
    text: str  # decoded (utf-8, errors="replace"), ANSI stripped, trailing \r / \n stripped
    ts: datetime | None = None  # envelope timestamp, timezone-aware; None for plain logs
    stream: str | None = None  # "stdout" | "stderr" | None when the envelope does not say
    # whether the text holds a scan literal, when the scan knows it exactly (None: look)
    hit: bool | None = None


@dataclass(slots=True)
class VLine:
    """A Record with vLLM's own line shape parsed."""

    lineno: int
    text: str  # the Record text (all prefixes still in place)
    msg: str  # message part: process tags, level, date and [file:line] removed
    ts: datetime | None = None  # envelope time, else vLLM's MM-DD HH:MM:SS resolved with a year
    proc: str | None = None  # innermost process name as printed: "Worker_TP1", "EngineCore_DP0"
    role: str | None = None  # "api" | "engine" | "worker" | "ray" | None
    rank: int | None = None  # TP rank (or worker rank) when the tag gives one
    level: str | None = None  # "INFO", "WARNING", ... or uvicorn "INFO:" -> "INFO"
    src: str | None = None  # "gpu_model_runner.py:2020"
    stream: str | None = None
    tag: str | None = None  # the run of process tags the text starts with, as printed
    ids: tuple | None = None  # (API-server (name, pid), innermost tag's pid): boots.py's, once
    # a stats line read whole (parse.stats.stats_line): (figure names, values); its message holds
    # nothing else, so the boot only adds the sample
    stats: tuple[tuple[str, ...], list] | None = None


@dataclass(slots=True)
class Metric:
    name: str  # docs/figures.md vocabulary
    value: float
    unit: str
    rank: int | None = None
    line: int | None = None
    ts: datetime | None = None
    pattern: str | None = None  # catalogue entry (or user pattern) that produced it


@dataclass(slots=True)
class Event:
    kind: str  # docs/figures.md event kinds: oom, engine_init_failed, value_error, traceback, ...
    line: int
    rank: int | None = None
    ts: datetime | None = None
    message: str = ""
    detail: dict[str, Any] = field(default_factory=dict)


@dataclass(slots=True)
class Sample:
    """One periodic statistics line ("Avg prompt throughput ..."), as Samples gives it back."""

    line: int
    ts: str | None  # ISO 8601, as stored
    values: dict[str, float]


CHUNK_ROWS = 4096  # samples per stored chunk: one row of the sample_chunks table


class Samples:
    """A boot's runtime samples, one per stats line: thousands for a boot that served for days
    (a 512 MiB log holds ~300,000), so they are kept columnar, never as an object each.

    The open chunk holds rows `[line, ts, v0, v1, ...]` under its `keys` (a row may be shorter:
    its later keys are missing); a full chunk becomes its JSON text, the `data` of one
    sample_chunks row: {"keys": [...], "rows": [...]} (None: no value; NaN is stored as None).
    `spill` (ingest's spill file) may take finished chunks out of memory.
    """

    __slots__ = ("keys", "rows", "chunks", "count", "spill")

    def __init__(self) -> None:
        self.keys: tuple[str, ...] = ()
        self.rows: list[list] = []
        # finished: (first line, last line, rows, JSON text or the spill's reference)
        self.chunks: list[tuple[int, int, int, Any]] = []
        self.count = 0
        self.spill: Any = None  # store/spill.py's Spill, when the boot's chunks may go there

    def __len__(self) -> int:
        return self.count

    def __bool__(self) -> bool:
        return self.count > 0

    def add(self, line: int, ts: str | None, keys: tuple[str, ...], values: list | tuple) -> None:
        """A new sample: the figures `values` (None: not printed) under `keys`."""
        if len(self.rows) >= CHUNK_ROWS:
            self._finish()
        self.count += 1
        if not self.rows:  # (an empty chunk has no keys yet)
            self.keys = keys
        if keys is self.keys or keys == self.keys:
            self.rows.append([line, ts, *values])
        else:  # another wording within the chunk: under the chunk's keys (extended)
            row = [line, ts]
            self.rows.append(row)
            for k, v in zip(keys, values):
                if v is not None:
                    self._set(row, k, v)

    def last_line(self) -> int | None:
        if self.rows:
            return self.rows[-1][0]
        return self.chunks[-1][1] if self.chunks else None

    def merge_last(self, values: dict[str, float], *, keep: bool = False) -> bool:
        """Add figures to the newest sample (a spec-decode line, a second part of the same
        stats line); keep: do not overwrite figures it has.  False when there is none open."""
        if not self.rows:
            return False
        row = self.rows[-1]
        for k, v in values.items():
            if keep and k in self.keys:
                i = self.keys.index(k) + 2
                if i < len(row) and row[i] is not None:
                    continue
            self._set(row, k, v)
        return True

    def _set(self, row: list, key: str, value: Any) -> None:
        if key not in self.keys:
            self.keys = (*self.keys, key)
        i = self.keys.index(key) + 2
        if len(row) <= i:
            row.extend([None] * (i + 1 - len(row)))
        row[i] = value

    def _finish(self) -> None:
        if not self.rows:
            return
        rows, self.rows = self.rows, []
        text = chunk_json(self.keys, rows)
        self.keys = ()
        ref = self.spill.put(text) if self.spill is not None else text
        self.chunks.append((rows[0][0], rows[-1][0], len(rows), ref))

    def chunk_rows(self) -> Iterator[tuple[int, int, int, str]]:
        """(first line, last line, rows, JSON text) of every chunk in log order: the
        sample_chunks rows of this boot."""
        for first, last, n, ref in self.chunks:
            yield first, last, n, ref if isinstance(ref, str) else self.spill.get(ref)
        if self.rows:
            yield self.rows[0][0], self.rows[-1][0], len(self.rows), chunk_json(self.keys, self.rows)

    def __iter__(self) -> Iterator[Sample]:
        for _, _, _, text in self.chunk_rows():
            yield from samples_of(text)

    def __getitem__(self, i: int) -> Sample:
        if i < 0:
            i += self.count
        for k, s in enumerate(self):
            if k == i:
                return s
        raise IndexError(i)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, (Samples, list)):
            return NotImplemented
        return list(self) == list(other)

    def __repr__(self) -> str:
        return f"Samples({self.count} samples)"


def chunk_json(keys: tuple[str, ...], rows: list[list]) -> str:
    try:
        return json.dumps({"keys": list(keys), "rows": rows}, allow_nan=False)
    except ValueError:  # a "nan" figure: JSON has no such number
        clean = [[None if isinstance(v, float) and not math.isfinite(v) else v for v in r] for r in rows]
        return json.dumps({"keys": list(keys), "rows": clean})


def samples_of(data: str | dict) -> Iterator[Sample]:
    """The samples of one stored chunk (its JSON text, or the object PostgreSQL gives back)."""
    d = json.loads(data) if isinstance(data, (str, bytes)) else data
    keys = d["keys"]
    for row in d["rows"]:
        yield Sample(row[0], row[1], {k: v for k, v in zip(keys, row[2:]) if v is not None})


@dataclass
class Boot:
    first_line: int
    last_line: int
    status: str = "incomplete"  # ready | failed | incomplete
    failure: str | None = None  # oom | engine_init_failed | value_error | kv_cache_insufficient | other
    failure_message: str | None = None
    vllm_version: str | None = None
    engine: str | None = None  # v0 | v1
    model: str | None = None
    started_at: datetime | None = None
    ready_at: datetime | None = None
    ended_at: datetime | None = None
    metrics: list[Metric] = field(default_factory=list)
    config: dict[str, str] = field(default_factory=dict)  # values as printed (Python spelling)
    events: list[Event] = field(default_factory=list)
    samples: Samples = field(default_factory=Samples)
    fingerprint: str = ""  # content hash of the boot's lines: same content -> same boot
    continued: bool = False  # its start lies before the input read (a resumed read of a growing log)
    deploy: dict | None = None  # what the container engine said of its run (deploy.py), when read from one
    # how its process ended: clean_stop | died (ready, then the engine died serving) | failed |
    # log_ends (nothing says); and how its KV pool was sized: explicit | measured | None
    ended: str | None = None
    kv_cache_sized_by: str | None = None
