"""The data that flows through bootlog, stage by stage.

source bytes -> Record (envelope removed) -> VLine (vLLM prefix parsed) -> Boot (figures,
config, events, runtime samples) -> store.  Every stage is a plain function over an iterator;
these record classes (plain.py) are the only things the stages share.
"""
from __future__ import annotations

from datetime import datetime

TYPE_CHECKING = False
if TYPE_CHECKING:  # (typing for the annotations only: importing it costs ~5 ms of every start)
    from typing import Any

from bootlog import jsontext
from bootlog.plain import record, spec


# the event kinds bootlog itself reports (metrics.md); a plan's own event patterns add others
EVENT_KINDS = (
    "oom", "engine_init_failed", "value_error", "kv_cache_insufficient", "traceback",
    "gdn_hip_fault", "gdn_hip_fault_cap", "worker_died", "warning",
)


@record(slots=True)
class Record:
    """One logical line after the container envelope is removed."""

    lineno: int  # 1-based physical line (count of b"\n" before it, +1) where the line starts
    text: str  # decoded (utf-8, errors="replace"), ANSI stripped, trailing \r / \n stripped
    ts: datetime | None = None  # envelope timestamp, timezone-aware; None for plain logs
    stream: str | None = None  # "stdout" | "stderr" | None when the envelope does not say


class LineBatch:
    """Candidate lines as the reader process sends them (reader.py): their line numbers and
    texts side by side, no Record made per line; for a podman -t log also each line's stamp
    (the 30 characters podman wrote before it, read by envelope.parse_ts).  parse() adds runs
    of periodic stats lines from it at once and makes Records of the rest."""

    __slots__ = ("nums", "texts", "stamps")

    def __init__(self, nums: Any, texts: list[str], stamps: list[str] | None = None) -> None:
        self.nums, self.texts = nums, texts  # nums: a sequence of ints as long as texts
        self.stamps = stamps


@record(slots=True)
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


@record(slots=True)
class Metric:
    name: str  # metrics.md vocabulary
    value: float
    unit: str
    rank: int | None = None
    line: int | None = None
    ts: datetime | None = None
    pattern: str | None = None  # catalogue entry (or user pattern) that produced it


@record(slots=True)
class Event:
    kind: str  # metrics.md event kinds: oom, engine_init_failed, value_error, traceback, ...
    line: int
    rank: int | None = None
    ts: datetime | None = None
    message: str = ""
    detail: dict[str, Any] = spec(factory=dict)


class Sample:
    """One periodic statistics line ("Avg prompt throughput ...").

    values: {prompt_throughput_tps: ..., kv_cache_usage_pct: ..., ...}.  A stats line that
    parse.py's fast path read from canonical figures carries its `samples` row instead, `row` =
    (ts ISO text, values JSON), the columns the store writes for it byte for byte; values is
    made from that JSON when first asked for.  Asking for values drops the row (the caller may
    change the dict), so a row always stands for the values as they are.  Most samples of a
    big log are only ever stored: they never build a dict.
    """

    __slots__ = ("line", "ts", "_values", "row")

    def __init__(self, line: int, ts: datetime | None, values: dict[str, float] | None = None,
                 row: tuple[str | None, str] | None = None) -> None:
        if values is None and row is None:
            raise TypeError("Sample needs values or a row")
        self.line, self.ts, self._values, self.row = line, ts, values, row

    @property
    def values(self) -> dict[str, float]:
        v = self._values
        if v is None:
            v = self._values = jsontext.loads(self.row[1])  # type: ignore[index]
        self.row = None
        return v

    @values.setter
    def values(self, v: dict[str, float]) -> None:
        self._values, self.row = v, None

    def _peek(self) -> dict[str, float]:
        """values without dropping the row (comparisons)."""
        return self._values if self._values is not None else jsontext.loads(self.row[1])  # type: ignore[index]

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not Sample:
            return NotImplemented
        return (self.line, self.ts, self._peek()) == (other.line, other.ts, other._peek())  # type: ignore[attr-defined]

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"Sample(line={self.line!r}, ts={self.ts!r}, values={self._peek()!r})"

    def __getstate__(self) -> tuple:
        return (self.line, self.ts, self._values, self.row)

    def __setstate__(self, state: tuple) -> None:
        self.line, self.ts, self._values, self.row = state


@record
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
    metrics: list[Metric] = spec(factory=list)
    config: dict[str, str] = spec(factory=dict)  # values as printed (Python spelling)
    events: list[Event] = spec(factory=list)
    samples: list[Sample] = spec(factory=list)
    fingerprint: str = ""  # content hash of the boot's lines: same content -> same boot
    continued: bool = False  # its start lies before the input read (a resumed read of a growing log)
