"""The data that flows through bootlog, stage by stage.

source bytes -> Record (envelope removed) -> VLine (vLLM prefix parsed) -> Boot (figures,
config, events, runtime samples) -> store.  Every stage is a plain function over an iterator;
these dataclasses are the only things the stages share.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any


@dataclass(slots=True)
class Record:
    """One logical line after the container envelope is removed."""

    lineno: int  # 1-based physical line (count of b"\n" before it, +1) where the line starts
    text: str  # decoded (utf-8, errors="replace"), ANSI stripped, trailing \r / \n stripped
    ts: datetime | None = None  # envelope timestamp, timezone-aware; None for plain logs
    stream: str | None = None  # "stdout" | "stderr" | None when the envelope does not say


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


@dataclass(slots=True)
class Metric:
    name: str  # metrics.md vocabulary
    value: float
    unit: str
    rank: int | None = None
    line: int | None = None
    ts: datetime | None = None
    pattern: str | None = None  # catalogue entry (or user pattern) that produced it


@dataclass(slots=True)
class Event:
    kind: str  # metrics.md event kinds: oom, engine_init_failed, value_error, traceback, ...
    line: int
    rank: int | None = None
    ts: datetime | None = None
    message: str = ""
    detail: dict[str, Any] = field(default_factory=dict)


@dataclass(slots=True)
class Sample:
    """One periodic statistics line ("Avg prompt throughput ...")."""

    line: int
    ts: datetime | None
    values: dict[str, float]  # prompt_throughput_tps, kv_cache_usage_pct, ...


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
    samples: list[Sample] = field(default_factory=list)
    fingerprint: str = ""  # content hash of the boot's lines: same content -> same boot
    continued: bool = False  # its start lies before the input read (a resumed read of a growing log)
