"""Boots: where one server/engine start begins and ends, how it ended, and what it printed.

`BootSplitter.feed(vline, literal=...)` routes every candidate line to a boot; `finish()` returns
the Boot records.  Rules (corpus README + docs/log-formats.md):

* A boot begins at a *start marker*: version banner / logo, `non-default args` / `args: Namespace`,
  the engine-config line, or an import-time line (plugins, "Automatically detected platform",
  unknown-env warnings, TPU info); start-ish lines just before it travel with the new boot.
* A new boot is split off when a marker one server prints once (banner, args) repeats, when the
  API server's pid changes, or when a top-level process prints an import-time marker after the
  current boot had engine/worker output or figures (a restart).
* Every start of the process is its own boot, whatever it prints: a start line after the server
  said "Finished server process", the envelope's clock going back (another run's log appended),
  the container engine's init/died events between two lines (run_bounds), argparse refusing the
  run line.  A boot needs a line a vLLM process printed (prose quoting vLLM's words is none),
  or, opened by the engine's events, a failure (a bare traceback at import).
* Two servers at once in one file: tagged lines go back to the older boot by pid (only between
  different API-server processes: a restarted container reuses its pids); untagged (corpus 053):
  when the newer one dies through the "Engine core initialization failed" wrapper, later lines
  resume the older boot if it was caught mid-start.
* Tracebacks are grouped per printing stream (process tag + logger prefix), ONE event each.  The
  failure is the first real exception before "ready" (not a WARNING-logged one, not a wrapper);
  after "ready" the status stays ready and failure names the runtime cause.  A GPU hard fault is
  a root cause even with no exception after it; a pydantic "Value error, ..." is a value_error.
* fingerprint: sha256 over the first 64 catalogue lines (import-time start-ish lines excluded) up
  to the ready line, so a read when the boot had just become ready (the hook) and one hours later
  (a resumed read, an archive, the journal) agree; with the envelope's time of its first line,
  so two runs printing the same lines are two boots.
* A boot that got no line while RETIRE_AFTER newer boots started is finished then and handed to
  `retire` (ingest moves it out of memory); no later line goes back to it (crash loops).
"""

from __future__ import annotations

import re
from bisect import bisect_right, insort
from dataclasses import dataclass, field
from datetime import datetime
from sys import intern as _intern
from typing import Any, Callable

from bootlog.parse import failures, patterns
from bootlog.parse.failures import (
    ARG_ERROR,
    CHAIN,
    DIED,
    EXC,
    GPU_FAULT,
    INIT_WRAPPER,
    KV_INSUFFICIENT,
    KV_INSUFFICIENT_V0,
    OOM,
    PYDANTIC,
    RUNTIME_FATAL,
    TB_START,
    WRAPPER,
    classify,
)
from bootlog.parse.fingerprint import FpHash, api_key, fp_text, run_fingerprint
from bootlog.records import Boot, Event, Metric, VLine
from bootlog.parse.vline import worker_dims

# Every literal the boundary/status/failure logic reads; scan.py keeps lines holding any of these
# (plus patterns.LITERALS and 200 lines after each "Traceback (most recent call last)").
LITERALS: tuple[str, ...] = (
    "Automatically detected platform",
    "Available plugins for group",
    "Platform plugin",
    "Unknown vLLM environment variable",
    "TPU info:",
    "Resolved architecture",
    "Using max model len",
    "vLLM API server version",
    "vLLM server version",
    "\u2588  version",
    "non-default args",
    "args: Namespace(",
    "LLM engine",
    "init engine",
    "Starting vLLM API server",
    "Starting vLLM server",
    "Available routes are",
    "Core engine process",
    "KV cache size",
    " blocks: ",
    "num_gpu_blocks is",
    "Application startup complete",
    "Traceback (most recent call last)",
    "Error",
    "Exception",
    "KeyboardInterrupt",
    "SystemExit",
    "out of memory",
    "RESOURCE_EXHAUSTED",
    "initialization failed",
    "failed to start",
    "died",
    "fatal error",
    "serve: error: ",
    "vllm: error: ",
    ".py: error: ",
    "Finished server process",
)

TB_CONTEXT = 200  # lines after a Traceback line that scan.py passes through unfiltered

_ENGINE_CFG = re.compile(r"Initializing an? (?:(V[01]) )?LLM engine(?: \(v([^)\s]*)\))?")
# what a process being stopped prints as it goes: tracebacks (EngineDeadError, "cancelled") and
# its workers exiting; a fault of another kind after a stop request is still a fault
_STOP_ECHOES = frozenset({"traceback", "worker_died"})
_EXIT_CODE = re.compile(r"exit(?:ed with)? code:? (-?\d+)")
_TAG_PID = re.compile(r"\(([A-Za-z_][\w\-]*)(?: [^()]*?)? pid=(\d+)")

# figures every worker prints (finish() gives a V0 driver's rank 0)
_PER_WORKER = frozenset(
    {
        "model_load_gib",
        "model_load_s",
        "weights_load_s",
        "memory_profiling_s",
        "graph_capture_s",
        "graph_capture_gib",
        "kv_cache_available_gib",
    }
)
# start markers (_marker_of): the "strong" ones are printed once per server start
_STRONG = ("version", "args", "engine_cfg")
_WEAK = ("platform", "plugins", "unknown_env", "tpu_info")


_memo_marker: list = [None, None]  # one-entry memo: the splitter and the boot ask about the same line


def _marker(msg: str) -> str | None:
    if msg is _memo_marker[0]:
        return _memo_marker[1]
    got = _marker_of(msg)
    _memo_marker[0], _memo_marker[1] = msg, got
    return got


def _marker_of(msg: str) -> str | None:
    if "vLLM API server version" in msg or "vLLM server version" in msg or "\u2588  version" in msg:
        return "version"
    if "non-default args" in msg or "args: Namespace(" in msg:
        return "args"
    if "LLM engine" in msg and _ENGINE_CFG.search(msg) and "with config" in msg:
        return "engine_cfg"
    if "Automatically detected platform" in msg:
        return "platform"
    if "Available plugins for group" in msg or "Platform plugin" in msg or "plugins in this group" in msg:
        return "plugins"
    if "Unknown vLLM environment variable" in msg:
        return "unknown_env"
    if "TPU info:" in msg:
        return "tpu_info"
    if "Resolved architecture" in msg or "Using max model len" in msg or "Chunked prefill is enabled" in msg:
        return "early"
    return None


def _is_vllm(v: VLine) -> bool:
    return v.proc is not None or v.src is not None


def _engine_done(msg: str) -> bool:
    return (
        "init engine" in msg
        or "Starting vLLM API server" in msg
        or "Starting vLLM server" in msg
        or "Available routes are" in msg
        or "Core engine process" in msg
    )


def _kv_known(msg: str) -> bool:
    return "KV cache size" in msg or " blocks: " in msg or "num_gpu_blocks is" in msg


_by_tag: dict[str, tuple] = {}  # a leading tag run -> its ids


def _ids(v: VLine) -> tuple:
    """(name, pid) of the innermost API-server tag on the line and the pid of its innermost tag
    (each None if none), as the first 200 characters say; worked out once per line, and once per
    tag run when nothing after the run looks like a tag."""
    if v.ids is None:
        tag, text = v.tag, v.text
        if tag and len(tag) < 200 and text.startswith(tag) and "pid=" not in text[len(tag) : 200]:
            got = _by_tag.get(tag)
            if got is None:
                if len(_by_tag) > 512:
                    _by_tag.clear()
                got = _by_tag[tag] = _ids_of(tag)
            v.ids = got
        else:
            v.ids = _ids_of(text)
    return v.ids


def _ids_of(text: str) -> tuple:
    api = pid = None
    for m in _TAG_PID.finditer(text[:200]):
        pid = int(m.group(2))
        if m.group(1).lower().startswith("apiserver") or m.group(1) == "MainProcess":
            api = (m.group(1), pid)
    return api, pid


def api_pid(v: VLine) -> tuple[str, int] | None:
    """(name, pid) of the innermost API-server tag on the line, if any."""
    return _ids(v)[0]


def tag_pid(v: VLine) -> int | None:
    """pid of the innermost process tag on the line, if any."""
    return _ids(v)[1]


def _gap(a: datetime | None, b: datetime | None, secs: float) -> bool:
    """True when both times are known and more than secs apart."""
    if a is None or b is None:
        return False
    try:
        return abs((b - a).total_seconds()) > secs
    except TypeError:
        return False


BACKWARDS_S = 2.0  # the envelope clock going back more than this is another run (stream reorder is less)


def _went_back(a: datetime | None, b: datetime | None) -> bool:
    """An envelope time (aware: podman, docker, journald) earlier than the line before it by more
    than BACKWARDS_S: a log of another run appended after this one (vLLM's own zone-less times
    are not a clock bootlog trusts for this)."""
    if a is None or b is None or a.tzinfo is None or b.tzinfo is None:
        return False
    return (a - b).total_seconds() > BACKWARDS_S


def _ver_tuple(ver: str) -> tuple[int, int]:
    m = re.match(r"(\d{1,9})\.(\d{1,9})", ver)  # (a hostile 10,000-digit version is no version)
    return (int(m.group(1)), int(m.group(2))) if m else (0, 0)


@dataclass
class _Tb:
    key: tuple
    line: int
    rank: int | None
    ts: datetime | None
    level: str | None
    lines: list[str] = field(default_factory=list)
    exception: str | None = None
    closed_at: int = 0
    event: Event | None = None  # the one traceback event, updated while a chain grows
    exc_line: int = 0  # the line of its exception
    more: list[str] = field(default_factory=list)  # indented lines that continue the exception's text


_MORE_LINES = 8  # continuation lines of an exception's text kept (ConstraintViolationError: 1)


class _Acc:
    """Everything one boot collects while its lines stream past."""

    def __init__(self, first_line: int) -> None:
        self.boot = Boot(first_line=first_line, last_line=first_line)
        self.keys: set[str] = set()
        self.key_procs: dict[str, set[str | None]] = {}  # start marker -> process names that printed it
        self.api_pids: dict[str, int] = {}
        self.tagged_api = self.progressed = self.engine_done = self.kv_known = self.terminal = False
        self.ready_line: int | None = None
        self.fp = FpHash()  # first 64 literal lines (fallback)
        self.fp_catalogue = FpHash()  # first 64 lines with a catalogue hit
        self.last_ts: datetime | None = None
        self.last_seen = first_line
        self.root: tuple[int, str, bool] | None = None  # (line, message, engine_done at the time)
        self.wrapper: str | None = None
        self.tbs: dict[tuple, _Tb] = {}
        self.closed: dict[tuple, _Tb] = {}
        self.event_keys: set[tuple] = set()
        # what the boot's events so far hold, kept up to date incrementally (_catch_up): a log of
        # a million OOM lines must not rescan every earlier event for each one
        self._scanned = 0
        self._kinds: set[str] = set()
        self._quotes: list[str] = []
        self._gpu_faults: set[tuple] = set()
        self.engine_cfg_seen = False
        self.engine_cfg_by: tuple | None = None  # (process name, pid) that printed the engine config
        self.args_given: dict[str, str] = {}  # the non-default args line: what the operator passed
        self.pydantic = 0  # line of the last pydantic ValidationError exception
        self.root_class: str | None = None  # the root cause's class, when its own text cannot say
        self.cfg_by: dict[str, int] = {}  # config key -> who set it: 2 engine config, 1 engine process
        self.engine_word: str | None = None  # from wording: strongest evidence
        self.engine_tag: str | None = None  # from process tags
        self.v0_worker_ranks: dict[int, int] = {}
        self.worker_dims: dict[int, dict[str, int]] = {}  # line -> a PP/DP worker's indices
        self.env_warnings: set[str] = set()
        self.pids: set[int] = set()  # pids of every tagged line (innermost tag)
        self.body = False
        self.runtime_root: str | None = None  # first real exception after ready
        self.runtime_root_line = 0  # where it (its traceback) began
        self.runtime_dead: str | bool = False  # the line saying the engine died after ready
        self.dead_line = 0  # ... and its number
        self.stop_line: int | None = None  # the first line saying a stop was asked for
        self.warmup: dict[int | None, datetime] = {}  # rank -> "Warming up model for the compilation" time
        self.kv_sizing: str | None = None  # the CPU backend's own word: measured | explicit
        self.died: str | None = None  # the first line saying a vLLM process died before ready
        self.superseded = False  # a newer concurrent boot died and the older one took over
        # a line a vLLM process printed (a process tag or the logger's [file:line]): a "boot" of
        # prose quoting vLLM's words (a README, the operator's env file) has none and is none
        self.printed = False
        # its API server said it finished (uvicorn's last line): nothing later is this run's
        self.run_over = False
        self.from_run = False  # opened by the container engine's word that a run began (run_bounds)
        # BootSplitter's index (None for the orphan, never an owner) and this boot's place in accs
        self.pid_index: dict[int, dict[tuple, dict[_Acc, None]]] | None = None
        self.seq = 0

    # -- helpers -----------------------------------------------------------------------------
    def _index(self, pid: int) -> None:
        # (a dict as an ordered set: a retired boot leaves its buckets in O(1))
        self.pid_index.setdefault(pid, {}).setdefault(api_key(self.api_pids), {})[self] = None

    def _unindex(self) -> None:
        for pid in self.pids:
            buckets = self.pid_index.get(pid) if self.pid_index is not None else None
            if not buckets:
                continue
            for sig in list(buckets):
                buckets[sig].pop(self, None)
                if not buckets[sig]:
                    del buckets[sig]
            if not buckets:
                del self.pid_index[pid]

    def api_restarted(self, v: VLine) -> bool:
        """The line's API server is one this boot knows by name, with another pid."""
        got = api_pid(v) if v.role == "api" else None
        return bool(got and got[0] in self.api_pids and self.api_pids[got[0]] != got[1])

    def add_event(self, ev: Event, who: int | None = None) -> None:
        # who: the pid of a rankless worker that printed it (two workers are two ranks)
        k = (ev.kind, ev.rank, ev.message, who)
        if k not in self.event_keys:
            self.event_keys.add(k)
            self.boot.events.append(ev)

    def exception_line(self, v: VLine, msg: str, in_tb: _Tb | None) -> None:
        """A real exception text: its events, and the root cause if it is the first one."""
        rank = v.rank
        # a wrapper quoting the error ("RuntimeError: Worker failed with error 'HIP out of
        # memory...'") re-raises one already recorded: one fault, one event
        again = WRAPPER.search(msg) is not None
        if again and self.ready_line is not None and "EngineDeadError" in msg:
            self.engine_dead(v, msg)  # (nothing before it said so: an older release's only word)
        kinds = self._catch_up() if again else ()
        if OOM.search(msg) and "oom" not in kinds and not self._quoted_oom(msg):
            self.add_event(Event("oom", v.lineno, rank, v.ts, msg, failures.oom_detail(msg) or {}))
        if (KV_INSUFFICIENT in msg or KV_INSUFFICIENT_V0 in msg) and "kv_cache_insufficient" not in kinds:
            self.add_event(
                Event("kv_cache_insufficient", v.lineno, rank, v.ts, msg, failures.kv_insufficient_detail(msg) or {})
            )
        for h in patterns.match(msg) if GPU_FAULT.search(msg) else ():
            if h.name == "gpu_fault" and not (again and "gpu_fault" in kinds):
                self.gpu_fault(v, msg, h.detail, exception=True)
        if msg.startswith("ValueError"):
            det = failures.value_error_detail(msg) or {}
            dev = str(det.get("device", ""))
            if rank is None and dev[-1:].isdigit():  # "cuda:1": a worker whose tag names no rank
                rank = int(dev.rsplit(":", 1)[-1])
            self.add_event(
                Event("value_error", v.lineno, rank, v.ts, msg, det),
                who=tag_pid(v) if rank is None and v.role == "worker" else None,
            )
        if INIT_WRAPPER in msg or "Engine core initialization failed" in msg:
            self.wrapper = msg
            root = self.root[1] if self.root else None
            self.add_event(Event("engine_init_failed", v.lineno, rank, v.ts, msg, {"root_cause": root} if root else {}))
            if in_tb is not None and v.role in (None, "api"):
                self.terminal = True  # the API server itself exits with this
            return
        # (a wrapper is no cause); a traceback logged at WARNING/INFO was survived; after "ready"
        # it is a runtime fault
        if again or (in_tb.level if in_tb is not None else v.level) in ("WARNING", "INFO", "DEBUG"):
            return
        if self.ready_line is not None:
            if self.runtime_root is None:
                self.runtime_root = msg  # the failure only if the engine then dies
                self.runtime_root_line = in_tb.line if in_tb is not None else v.lineno
            if GPU_FAULT.search(msg):
                self.engine_dead(v, msg)  # a GPU context does not survive it
            return
        if PYDANTIC.search(msg):
            self.pydantic = v.lineno  # its errors follow, one or two lines each
        if self.root is None:
            self.root = (v.lineno, msg, self.engine_done)

    def gpu_fault(self, v: VLine, msg: str, det: dict, exception: bool = False) -> None:
        """A GPU hard fault: one event per GPU and fault (a re-raise or a wrapper quoting it is the
        same one); the boot's root cause, or after "ready" its runtime death, even when no
        Python exception follows (ROCm aborts the process)."""
        self._catch_up()
        seen = self._gpu_faults
        if seen and WRAPPER.search(msg) or (v.rank, det.get("node"), det.get("address"), det.get("reason")) in seen:
            return
        msg = msg.strip()
        self.add_event(Event("gpu_fault", v.lineno, v.rank, v.ts, msg, det))
        if exception or v.level in ("WARNING", "INFO", "DEBUG"):
            return  # (exception_line takes an exception's root cause)
        if self.ready_line is not None:
            if self.runtime_root is None:
                self.runtime_root, self.runtime_root_line = msg, v.lineno
            self.engine_dead(v, msg)
        elif self.root is None:
            self.root = (v.lineno, msg, self.engine_done)

    def engine_dead(self, v: VLine, msg: str) -> None:
        """A line after ready saying the engine (core or a worker) died: the first one counts."""
        if not self.runtime_dead:
            self.runtime_dead, self.dead_line = msg.strip(), v.lineno

    def mark(self, v: VLine, name: str) -> None:
        """A catalogue mark: where the boot's process is (patterns.Hit, kind "mark")."""
        if name == "stop_requested":
            self.stop_line = self.stop_line or v.lineno
        elif name == "engine_died":
            if self.ready_line is not None:
                self.engine_dead(v, v.msg)
            elif self.died is None:
                self.died = v.msg.strip()
        elif name == "compile_warmup_start" and v.ts is not None:
            self.warmup[v.rank] = v.ts
        elif name == "compile_warmup_done" and v.ts is not None and v.rank in self.warmup:
            secs = (v.ts - self.warmup.pop(v.rank)).total_seconds()
            if secs >= 0:
                self.boot.metrics.append(
                    Metric("compile_warmup_s", secs, "s", v.rank, v.lineno, v.ts, "compile_warmup/cpu-done")
                )

    def kept(self) -> bool:
        """A boot: a vLLM process printed one of its lines, or the container engine says a run
        began there and it failed (a crash at import prints a bare traceback, no vLLM prefix)."""
        return self.printed or (self.from_run and (self.root is not None or self.died is not None))

    def said_something(self) -> bool:
        """A log that starts mid-boot: is its lead-in a boot worth keeping (figures, runtime
        statistics, ready, a failure, a fault), not a few stray lines?"""
        b = self.boot
        return bool(
            b.metrics
            or b.samples
            or self.ready_line is not None
            or self.root
            or self.wrapper
            or self.died
            or any(e.kind not in ("warning", "traceback") for e in b.events)
        )

    def _catch_up(self) -> set[str]:
        """The kinds of the boot's events, the errors its oom events quote and its GPU faults,
        each event read once."""
        events = self.boot.events
        for e in events[self._scanned :]:
            self._kinds.add(e.kind)
            if e.kind == "oom" and "(original error:" in e.message:
                self._quotes.append(e.message.split("(original error:", 1)[1])
            elif e.kind == "gpu_fault":
                self._gpu_faults.add((e.rank, e.detail.get("node"), e.detail.get("address"), e.detail.get("reason")))
        self._scanned = len(events)
        return self._kinds

    def _quoted_oom(self, msg: str) -> bool:
        """The exception an earlier "Failed to load model - not enough GPU memory ... (original
        error: <it>)" line already quoted (and recorded as the oom event): the same fault."""
        self._catch_up()
        head = msg.split(": ", 1)[-1][:60]
        return any(head in q for q in self._quotes)

    def traceback(self, v: VLine, msg: str) -> bool:
        """Group traceback lines per printing stream (process tag, rank, level, file:line: the
        logger's ERROR copy and the raw stderr copy interleave and must not mix); True when the
        line belonged to one.  Chained tracebacks ("The above exception ...") stay one event."""
        key = (v.proc, v.rank, v.level, v.src)
        tb = self.tbs.get(key)
        if TB_START in msg and not msg.lstrip().startswith("File"):
            if tb is not None and not tb.lines[-1].startswith(CHAIN):
                self.close_tb(key)  # a new traceback before the old one printed its exception
                tb = None
            if tb is None:
                last = self.closed.get(key)
                if last is not None and v.lineno - last.closed_at <= 4 and last.lines[-1].startswith(CHAIN):
                    tb = self.closed.pop(key)  # the next link of a chain
                else:
                    tb = _Tb(key, v.lineno, v.rank, v.ts, v.level)
                self.tbs[key] = tb
            tb.lines.append(msg)
            return True
        if tb is None:
            last = self.closed.get(key)
            if (
                last is not None
                and last.exc_line
                and v.lineno - last.closed_at <= 3
                and msg[:1] in (" ", "\t")
                and msg.strip()
                and len(last.more) < _MORE_LINES
                and not msg.lstrip().startswith("File ")
            ):
                self.exception_more(last, v.lineno, msg)  # (and the line is read on as any other)
            if last is not None and v.lineno - last.closed_at <= 3 and (msg.startswith(CHAIN) or not msg.strip()):
                if msg.strip():
                    last.lines.append(msg)
                last.closed_at = v.lineno
                return True
            return False
        tb.lines.append(msg)
        if not msg.strip() or msg[:1] in (" ", "\t") or msg.startswith(CHAIN):
            return True
        tb.exception = msg  # the first unindented line ends a traceback
        tb.exc_line, tb.more = v.lineno, []
        self.exception_line(v, msg, tb)
        self.close_tb(key, v.lineno)
        return True

    def exception_more(self, tb: _Tb, lineno: int, msg: str) -> None:
        """An indented line right after an exception's own line continues its text (torch's
        ConstraintViolationError: "  - You marked … specialized it to be a constant (3)"): it
        joins the traceback event's detail and, when that exception is the boot's root or
        runtime cause, its failure message (one line each, as printed)."""
        text = msg.rstrip()[:1000]
        tb.more.append(text)
        tb.closed_at = lineno
        if tb.event is not None:
            tb.event.detail["exception_more"] = list(tb.more)
        if self.root is not None and self.root[0] == tb.exc_line:
            self.root = (self.root[0], f"{self.root[1]}\n{text}", self.root[2])
        elif (
            self.ready_line is not None
            and self.runtime_root is not None
            and self.runtime_root.split("\n", 1)[0] == tb.exception
        ):
            self.runtime_root = f"{self.runtime_root}\n{text}"

    def close_tb(self, key: tuple, at: int = 0) -> None:
        tb = self.tbs.pop(key, None)
        if tb is None:
            return
        tb.closed_at = at or tb.line
        if tb.event is None:
            tb.event = Event("traceback", tb.line, tb.rank, tb.ts, "", {"lines": tb.lines})
            self.boot.events.append(tb.event)
        tb.event.message = tb.exception or ""
        tb.event.detail["exception"] = tb.exception
        self.closed[key] = tb

    # -- one line ----------------------------------------------------------------------------
    def feed(self, v: VLine, literal: bool) -> None:
        b = self.boot
        msg = v.msg
        self.last_seen = v.lineno
        self.printed = self.printed or _is_vllm(v)
        if "Finished server process" in msg and v.role in (None, "api"):
            self.run_over = True
        if v.ts is not None:
            if b.started_at is None:
                b.started_at = v.ts
            self.last_ts = v.ts
            b.ended_at = v.ts
        if literal and len(self.fp) < 64 and self.ready_line is None:
            self.fp.append(fp_text(v.text))
        if v.role in ("engine", "worker", "ray"):
            self.progressed = True
            if v.proc and v.proc.startswith(("EngineCore", "Worker", "VllmWorker ")):
                self.engine_tag = self.engine_tag or "v1"
            elif v.proc == "VllmWorkerProcess":
                self.engine_tag = self.engine_tag or "v0"
        if v.role == "api" and v.proc:
            self.tagged_api = True
            got = api_pid(v)
            if got and got[0] not in self.api_pids:
                self.api_pids[got[0]] = got[1]
                if self.pid_index is not None:  # its identity changed: file its pids under it
                    for known in self.pids:
                        self._index(known)
        if v.proc is not None:
            pid = tag_pid(v)
            if pid is not None and pid not in self.pids:
                self.pids.add(pid)
                if self.pid_index is not None:
                    self._index(pid)
        rank = v.rank
        proc = v.proc or ""
        if v.role == "worker" and ("PP" in proc or "DP" in proc or "PCP" in proc or proc == "VllmWorker"):
            # (a TP-only worker's TP index is its rank; "VllmWorker PP1_TP0" names it after)
            dims = worker_dims(v.text)
            if dims is not None:  # numbered at the end, when every worker's indices are known
                self.worker_dims[v.lineno] = dims
        if v.proc == "VllmWorkerProcess":  # V0 workers: no rank in the tag; number them by pid
            pid = _ids_of(v.text)[1]
            if pid is not None:
                rank = self.v0_worker_ranks.setdefault(pid, len(self.v0_worker_ranks) + 1)

        if (self.tbs or self.closed or TB_START in msg) and self.traceback(v, msg):
            return
        if self.pydantic and v.lineno - self.pydantic <= 8 and msg.lstrip().startswith("Value error, "):
            # a ValueError raised while a config was validated (pydantic wraps it): value_error
            text = msg.strip()[len("Value error, ") :].split(" [type=", 1)[0]
            self.add_event(Event("value_error", v.lineno, rank, v.ts, text, {"wrapped_by": "ValidationError"}))
            if self.root is not None and self.root[0] == self.pydantic:
                self.root_class = "value_error"
        if self.root is None and self.ready_line is None and ARG_ERROR.match(msg):
            # (argparse's line has no vLLM prefix, but the server's process printed it)
            self.root, self.root_class = (v.lineno, msg.strip(), False), "bad_args"
            self.terminal = self.printed = True
        if v.stats is not None:  # a whole stats line: nothing but its sample (records.VLine)
            self.add_sample(v, *v.stats)
            if len(self.fp_catalogue) < 64 and self.ready_line is None:
                self.fp_catalogue.append(fp_text(v.text))
            return
        mk = _marker(msg)
        if mk in _STRONG:
            self.keys.add(mk)
            self.key_procs.setdefault(mk, set()).add(v.proc)
        elif mk == "unknown_env" and v.role in (None, "api"):
            self.env_warnings.add(msg.strip())
        if mk == "engine_cfg":
            self.engine_cfg_by = self.engine_cfg_by or (v.proc, tag_pid(v))
            m = _ENGINE_CFG.search(msg)
            if m:
                self.engine_word = self.engine_word or (m.group(1).lower() if m.group(1) else "v0?")
        self.engine_done = self.engine_done or _engine_done(msg)
        self.kv_known = self.kv_known or _kv_known(msg)
        if "Application startup complete" in msg and self.ready_line is None:
            # vLLM's own uvicorn: after engine init, or tagged by this boot's API server (a
            # WARNING-level log may have no INFO engine lines at all)
            got = api_pid(v) if v.role == "api" else None
            ok = self.engine_done or self.kv_known or bool(got and self.api_pids.get(got[0]) == got[1])
            if self.tagged_api and v.role != "api" and not (b.vllm_version and _ver_tuple(b.vllm_version) >= (0, 31)):
                # another program's uvicorn (corpus 025); from v0.31 the process tag is part of the
                # log format: vLLM's own uvicorn, tqdm and raw tracebacks print untagged beside a
                # tagged API server (docs/log-formats.md 2.2)
                ok = False
            if ok:
                self.ready_line = v.lineno
                b.ready_at = self.last_ts
                self.progressed = True
        if self.ready_line is not None and not self.runtime_dead and RUNTIME_FATAL.search(msg):
            self.engine_dead(v, msg)
        elif self.ready_line is None and self.died is None and DIED.search(msg):
            self.died = msg.strip()
        # exceptions printed as single ERROR lines (no traceback of their own)
        if v.level in ("ERROR", "CRITICAL") and EXC.match(msg):
            self.exception_line(v, msg, None)
        elif v.level in ("ERROR", "CRITICAL") and OOM.search(msg):
            # "Failed to load model - not enough GPU memory ... (original error: ...)": an oom
            # event, but the root cause is the exception it quotes
            self.add_event(Event("oom", v.lineno, rank, v.ts, msg, failures.oom_detail(msg) or {}))
        elif (
            v.level is None and v.src is None and EXC.match(msg) and msg.startswith(("KeyboardInterrupt", "SystemExit"))
        ):
            self.exception_line(v, msg, None)
        if not literal:
            return
        found = self.hits(v, msg, rank)
        # fingerprint lines: catalogue lines, not the import-time start-ish ones, which may
        # still move to the next boot when the log grows (a crash loop's next start)
        if (
            found
            and len(self.fp_catalogue) < 64
            and mk not in _WEAK
            and mk != "early"
            and self.ready_line in (None, v.lineno)
        ):
            self.fp_catalogue.append(fp_text(v.text))

    def add_sample(self, v: VLine, keys: tuple[str, ...], values: list) -> None:
        self.boot.samples.add(v.lineno, v.ts.isoformat() if v.ts is not None else None, keys, values)
        self.progressed = True

    def hits(self, v: VLine, msg: str, rank: int | None) -> bool:
        b = self.boot
        seen: set[str] = set()
        found = patterns.match(msg)
        for h in found:
            if h.kind == "metric":
                if h.name in seen:
                    continue
                seen.add(h.name)  # (a catalogue figure is an int or float: hits.decimal)
                if h.detail.get("kv_sizing"):
                    self.kv_sizing = "measured" if h.detail["kv_sizing"] == "Auto" else "explicit"
                b.metrics.append(Metric(h.name, float(h.value), h.unit or "", rank, v.lineno, v.ts, h.pattern))
                self.progressed = True
            elif h.kind == "boot":
                if h.name == "vllm_version" and b.vllm_version is None:
                    b.vllm_version = str(h.value)
                elif h.name == "model" and not self.boot.model:
                    self.boot.model = str(h.value)
                elif h.name == "engine" and h.value in ("v0", "v1"):
                    if "LLM engine" in msg:
                        self.engine_word = self.engine_word if self.engine_word in ("v0", "v1") else str(h.value)
                    else:
                        self.engine_tag = self.engine_tag or str(h.value)
            elif h.kind == "config" and isinstance(h.value, dict):
                src = h.detail.get("source")
                if src == "engine_config":
                    if self.engine_cfg_seen:
                        continue
                    self.engine_cfg_seen = True
                    for k, asked, runs in _overridden(self.args_given, h.value):
                        # a flag the engine did not take (a hybrid model disabling prefix caching
                        # the operator enabled): said, not silently replaced in the config
                        text = f"{k}: passed {asked}, the engine runs with {runs}"
                        self.add_event(
                            Event(
                                "warning",
                                v.lineno,
                                None,
                                v.ts,
                                text,
                                {
                                    "message": text,
                                    "what": "arg_overridden",
                                    "key": k,
                                    "asked": asked,
                                    "effective": runs,
                                },
                            )
                        )
                    # interned: a restarting server prints the same keys and mostly the same values
                    # each boot, and a log of thousands of boots holds them all until it is stored
                    b.config.update({_intern(k): _intern(str(x)) for k, x in h.value.items()})
                    self.cfg_by.update(dict.fromkeys(h.value, 2))
                    if h.value.get("model"):
                        b.model = str(h.value["model"])
                else:
                    if src == "non_default_args":
                        self.args_given.update((k, str(x)) for k, x in h.value.items())
                    # a setting stated twice: the engine config line wins, then what the engine
                    # process itself says (after its config update), then the first statement
                    by = 1 if v.role in ("engine", "worker") else 0
                    for k, x in h.value.items():
                        if b.config.get(k, "None") == "None" or by > self.cfg_by.get(k, 0):
                            b.config[_intern(k)] = _intern(str(x))
                            self.cfg_by[k] = by
            elif h.kind == "stat" and isinstance(h.value, dict):
                vals = {k: float(x) for k, x in h.value.items()}
                samples = b.samples
                if "prompt_throughput_tps" in vals or not samples:
                    if samples.last_line() == v.lineno:
                        samples.merge_last(vals)
                    else:
                        self.add_sample(v, tuple(vals), list(vals.values()))
                else:  # a part printed on a line of its own (spec decoding): the last sample's
                    samples.merge_last(vals, keep=True)
                self.progressed = True
            elif h.kind == "mark":
                self.mark(v, h.name)
            elif h.kind == "event":
                det = dict(h.detail)
                ev_rank = rank
                if h.name == "gpu_fault":
                    self.gpu_fault(v, msg, det)
                    self.progressed = True
                    continue
                if h.name == "worker_died":
                    # a V0 worker's death is printed by the driver, untagged: its pid numbers it
                    ev_rank = det.get("rank", self.v0_worker_ranks.get(det.get("pid"), rank))
                    if ev_rank is not None and "rank" not in det:
                        det["rank"] = ev_rank
                self.add_event(Event(h.name, v.lineno, ev_rank, v.ts, msg.strip(), det))
                if h.name == "worker_died" and self.ready_line is not None:
                    self.engine_dead(v, msg)
                if h.name != "warning":
                    self.progressed = True
        return bool(found)

    # -- the end -------------------------------------------------------------------------------
    def _died_serving(self) -> None:
        """It booted, then the engine died serving before any stop was asked for: keep "ready" and
        name the cause — an exception printed before the death (an OOM, a GPU fault, anything),
        else the line saying who died (the exceptions after it are its echoes: "cancelled")."""
        b = self.boot
        dead = str(self.runtime_dead)
        # "EngineCore encountered a fatal error." is logger.exception's header: the traceback
        # right after it is its cause
        header = "encountered a fatal error" in dead
        first = self.runtime_root is not None and self.runtime_root_line <= self.dead_line + header
        b.failure_message = self.runtime_root if first else dead
        msg = b.failure_message
        # (docs/figures.md: engine_died when no other root cause is printed; a GPU fault stays "other")
        b.failure = "oom" if OOM.search(msg) else "other" if GPU_FAULT.search(msg) else "engine_died"
        b.ended = "died"
        if b.failure != "engine_died":
            return  # (its oom / gpu_fault event says it)
        detail: dict[str, Any] = {"how": dead}
        code = _exit_code(dead)
        if code is not None:
            detail["exit_code"] = code
        self.add_event(Event("engine_died", self.dead_line, None, self.last_ts, dead, detail))

    def _kv_sized_by(self) -> str | None:
        """explicit: the operator gave the KV pool's size (kv_cache_memory_bytes, a block count, the
        CPU backend's "Explicitly set"), so its token count is exact; measured: the engine sized
        it from a memory profile, which moves a little between identical boots."""
        cfg = self.boot.config
        if self.kv_sizing:
            return self.kv_sizing
        for key in ("kv_cache_memory_bytes", "num_gpu_blocks_override"):
            if cfg.get(key, "None").strip("'\"") not in ("None", ""):
                return "explicit"
        names = {m.name for m in self.boot.metrics}
        if "kv_cache_reserved_gib" in names:
            return "explicit"
        if names & {"kv_cache_tokens", "num_gpu_blocks", "kv_cache_available_gib"}:
            return "measured"
        return None

    def finish(self, last_line: int) -> Boot:
        b = self.boot
        for key in list(self.tbs):
            self.close_tb(key)
        b.last_line = max(last_line, b.first_line)
        # engine: wording > process tags > version default (V1 is the default from 0.8 on)
        eng = self.engine_word if self.engine_word in ("v0", "v1") else self.engine_tag
        if eng is None and self.engine_word == "v0?":
            eng = "v0"
        elif eng is None and b.vllm_version:
            eng = "v1" if _ver_tuple(b.vllm_version) >= (0, 8) else "v0"
        # (nothing says V0: V1 has been the default since 0.8 and the only engine since 0.11)
        b.engine = eng or "v1"
        if b.model is None and b.config.get("model"):
            b.model = b.config["model"]
        if self.ready_line is not None:
            b.status = "ready"
            if self.runtime_dead and (self.stop_line is None or self.dead_line < self.stop_line):
                self._died_serving()
        elif self.root is not None or self.wrapper is not None:
            b.status = "failed"
            if self.root is not None:
                line, msg, done = self.root
                b.failure_message = msg
                b.failure = self.root_class or classify(msg, done)
            else:
                b.failure_message = self.wrapper
                b.failure = "engine_init_failed"
        elif self.died is not None:
            # killed (the OOM killer's -9, a segfault) with no exception to name the cause
            b.status = "failed"
            b.failure_message = self.died
            b.failure = classify(self.died, self.engine_done)
        else:
            b.status = "incomplete"
        if b.ended is None:
            b.ended = "failed" if b.status == "failed" else "clean_stop" if self.stop_line else "log_ends"
        if b.ended == "clean_stop":
            for ev in b.events:  # (an EngineDeadError of the engine being stopped is no fault)
                if ev.line > self.stop_line and ev.kind in _STOP_ECHOES:
                    ev.detail["after_stop"] = True
        b.kv_cache_sized_by = self._kv_sized_by()
        for ev in b.events:
            if (
                ev.kind == "engine_init_failed"
                and "root_cause" not in ev.detail
                and b.failure_message
                and self.root is not None
            ):
                ev.detail["root_cause"] = b.failure_message
        if self.v0_worker_ranks:
            # V0 TP: the untagged driver worker is rank 0 (its VllmWorkerProcess peers are 1..N)
            for m in b.metrics:
                if m.rank is None and m.name in _PER_WORKER:
                    m.rank = 0
        if self.worker_dims:
            _number_workers(b, self.worker_dims)
        b.events.sort(key=lambda e: e.line)
        _derive(b, self.ready_line)
        # the first 64 catalogue lines of the boot; a boot that printed none (a WARNING-level
        # log) falls back to its first 64 literal lines
        fp = self.fp_catalogue or self.fp
        b.fingerprint = run_fingerprint(fp.hexdigest(), b.started_at)
        return b


def _end_mark(msg: str) -> bool:
    """The line only says a server is stopping or its engine died (catalogue marks)."""
    return any(h.kind == "mark" and h.name in ("stop_requested", "engine_died") for h in patterns.match(msg))


def _exit_code(text: str) -> int | None:
    m = _EXIT_CODE.search(text)
    return int(m.group(1)) if m else None


def _past_start(acc: _Acc) -> bool:
    """The boot printed more than a start's import-time lines (a banner, engine output, a
    result): a start refused at argument parsing after it is the next start, not this one."""
    return bool(
        acc.keys
        or acc.progressed
        or acc.ready_line is not None
        or acc.root is not None
        or acc.terminal
        or acc.engine_done
    )


def _num(s: str | None) -> float | None:
    if s is None:
        return None
    try:
        return float(str(s).strip().strip("'\"").replace(",", ""))
    except ValueError:
        return None


# Keys whose printed value is legitimately resolved by the engine (a name becomes a path).
_RESOLVED_KEYS = frozenset(("model", "model_tag", "tokenizer", "served_model_name"))
_ENUM_REPR = re.compile(r"[A-Za-z_]+\.([A-Z][A-Z_0-9]*)")


def _spelled(key: str, value: str) -> str:
    """A config value as both lines mean it: no quotes, LoadFormat.AUTO as auto, torch.float16
    and half as float16, 1 and 1.0 alike, True/true alike."""
    v = value.strip().strip("'\"")
    m = _ENUM_REPR.fullmatch(v)
    if m:
        v = m.group(1).lower()
    if key == "dtype":
        v = {"half": "float16", "float": "float32"}.get(v.replace("torch.", ""), v.replace("torch.", ""))
    if v.lower() in ("true", "false", "none"):
        return v.lower()
    try:
        return repr(float(v))
    except ValueError:
        return v


def _overridden(given: dict[str, str], engine: dict[str, Any]) -> list[tuple[str, str, str]]:
    """(key, passed, effective) for each scalar arg the operator passed that the engine config
    line shows otherwise; unset-ish values (None, auto) and containers are not compared."""
    out = []
    for k, asked in given.items():
        if k in _RESOLVED_KEYS or k not in engine:
            continue
        runs = str(engine[k])
        a = asked.strip().strip("'\"")
        if a in ("", "None", "auto") or a[:1] in "[{(" or runs.strip()[:1] in "[{(":
            continue
        if _spelled(k, asked) != _spelled(k, runs):
            out.append((k, a, runs.strip().strip("'\"")))
    return out


_DIM_SIZE = {
    "DP": "data_parallel_size",
    "PP": "pipeline_parallel_size",
    "PCP": "prefill_context_parallel_size",
    "TP": "tensor_parallel_size",
}


def _number_workers(b: Boot, at: dict[int, dict[str, int]]) -> None:
    """Give the figures and events of pipeline/data-parallel workers (Worker_PP1_TP0,
    Worker_DP1_TP0_EP1) vLLM's global rank, ((dp * PP + pp) * PCP + pcp) * TP + tp: their TP
    index alone repeats in every stage, so two stages' figures would share a rank and a diff
    would pair them by position.  Sizes from the boot's config, else the highest index seen + 1."""
    sizes = {}
    for dim, key in _DIM_SIZE.items():
        seen = 1 + max((d.get(dim, 0) for d in at.values()), default=0)
        try:  # (never below an index printed: a config that says less is not this boot's)
            sizes[dim] = max(int(b.config.get(key, "")), seen)
        except ValueError:
            sizes[dim] = seen

    def rank(d: dict[str, int]) -> int:
        r = 0
        for dim in ("DP", "PP", "PCP", "TP"):
            r = r * sizes[dim] + d.get(dim, 0)
        return r

    placed: list[Metric | Event] = [*b.metrics, *b.events]
    for x in placed:
        if x.line in at:
            x.rank = rank(at[x.line])


def _derive(b: Boot, ready_line: int | None) -> None:
    """docs/figures.md derived figures: boot_to_ready_s, kv_bytes_per_token, kv_margin_tokens."""
    if b.started_at is not None and b.ready_at is not None:
        try:
            secs = (b.ready_at - b.started_at).total_seconds()
        except TypeError:  # naive vs aware
            secs = None
        if secs is not None and secs >= 0:
            b.metrics.append(Metric("boot_to_ready_s", secs, "s", None, ready_line, b.ready_at, "derived"))
    kv = next((m for m in b.metrics if m.name == "kv_cache_tokens"), None)
    if kv is None or kv.value <= 0:
        return
    mem = _num(b.config.get("kv_cache_memory_bytes"))
    if mem:
        b.metrics.append(Metric("kv_bytes_per_token", mem / kv.value, "B/token", None, kv.line, kv.ts, "derived"))
    seqs, mlen = _num(b.config.get("max_num_seqs")), _num(b.config.get("max_model_len"))
    if seqs is not None and mlen is not None:
        b.metrics.append(Metric("kv_margin_tokens", kv.value - seqs * mlen, "tokens", None, kv.line, kv.ts, "derived"))


RETIRE_AFTER = 64  # newer boot starts an idle boot waits through before it is retired


class BootSplitter:
    """Routes candidate lines to boots (see module doc)."""

    RESUME_WINDOW_S = 300.0

    def __init__(
        self,
        continuing: str | None = None,
        retire: Callable[[Boot], Any] | None = None,
        spill: Any = None,
        run_bounds: list[datetime] | None = None,
    ) -> None:
        # continuing: status ("ready"/"failed") of the stored boot a resumed read continues; its
        # lines before the first start marker belong to that boot, whatever they print
        self.continuing = continuing
        # the container engine's init and died events of the source (aware, sorted): a line
        # stamped after one that the boot's last line was stamped before is the next run's
        self.run_bounds = run_bounds or []
        # retire(boot) -> what finish() lists in the boot's place (module doc); by default the Boot
        self.retire = retire
        self.spill = spill  # where the boots' finished sample chunks may go (store/spill.py)
        self.accs: list[_Acc | None] = []  # None: retired (its finished boot is in self.retired)
        self.retired: dict[int, Any] = {}  # seq -> retire(boot)
        self.live: dict[int, _Acc] = {}  # seq -> acc, the boots not retired, oldest first
        self.starts: list[int] = []  # sorted
        self.cur: _Acc | None = None
        self.pending: list[tuple[VLine, bool]] = []  # start-ish lines waiting to see whether a split follows
        self.resume: _Acc | None = None  # older concurrent boot that gets lines again
        # vLLM lines before the first start marker: a boot whose start was cut off (rotated log,
        # `podman logs --since`); kept only if it printed figures or stats
        self.orphan: _Acc | None = None
        # pid -> API-server identity (api_key of api_pids) -> the boots that carried that pid while
        # they had that identity: _owner() looks there instead of walking every earlier boot (a
        # restarting container's boots all share their pids, and a crash loop has thousands)
        self.pid_index: dict[int, dict[tuple, dict[_Acc, None]]] = {}

    def _acc(self, first_line: int) -> _Acc:
        acc = _Acc(first_line)
        acc.boot.samples.spill = self.spill
        return acc

    def _new_orphan(self, lineno: int) -> _Acc:
        orphan = self.orphan = self._acc(lineno)
        orphan.body = True
        if self.continuing:
            orphan.boot.continued = True
            orphan.engine_done = True
            if self.continuing == "ready":
                orphan.ready_line = 0  # ready before this read began
        return orphan

    def _start(self, v: VLine, lit: bool) -> None:
        lines = self.pending
        new_pid = api_pid(v) if v.role == "api" else None

        def other_server(p: VLine) -> bool:
            got = api_pid(p) if p.role == "api" else None
            return bool(got and new_pid and got != new_pid)

        n = 0
        while n < len(lines) and (not _is_vllm(lines[n][0]) or other_server(lines[n][0])):
            n += 1
        keep, lines = lines[:n], lines[n:]  # keep: stays with the previous boot
        first = lines[0][0].lineno if lines else v.lineno
        if self.cur is not None:
            for p, l in keep:
                self.cur.feed(p, l)
        acc = self._acc(first)
        acc.pid_index, acc.seq = self.pid_index, len(self.accs)
        self.accs.append(acc)
        self.live[acc.seq] = acc
        insort(self.starts, first)
        self._retire_idle()
        self.cur = acc
        self.resume = None
        self.pending = []
        for p, l in lines:
            acc.feed(p, l)
        acc.feed(v, lit)

    def _retire_idle(self) -> None:
        """Finish the boots that got no line while RETIRE_AFTER newer ones started (module doc)."""
        n = len(self.accs)
        if n <= RETIRE_AFTER:
            return
        horizon = n - RETIRE_AFTER
        since = self.accs[horizon].boot.first_line  # (never retired: only boots before it are)
        for seq, acc in list(self.live.items()):
            if seq >= horizon:
                break
            if acc is self.resume or acc is self.cur or acc.last_seen >= since:
                continue
            del self.live[seq]
            self.accs[seq] = None
            acc._unindex()
            if not acc.kept():
                self.retired[seq] = None  # (no boot: see _Acc.kept)
                continue
            boot = acc.finish(self._end_of(acc))
            self.retired[seq] = self.retire(boot) if self.retire is not None else boot

    def _end_of(self, acc: _Acc, total_lines: int | None = None) -> int:
        if acc.superseded:
            return acc.last_seen  # its lines stopped when the older boot resumed
        starts = self.starts
        i = bisect_right(starts, acc.last_seen)  # the first start after its last line
        if i and starts[i - 1] == acc.last_seen > acc.boot.first_line:
            # the next boot starts on this boot's last physical line: its partial last line
            # (no final newline) with the next boot's first one glued on (docs/podman.md, restarts)
            return acc.last_seen
        return starts[i] - 1 if i < len(starts) else max(total_lines or 0, acc.last_seen)

    def _flush(self) -> None:
        if self.cur is not None:
            for p, l in self.pending:
                self._target().feed(p, l)
        self.pending = []

    def _target(self) -> _Acc:
        assert self.cur is not None
        return self.resume if self.resume is not None else self.cur

    def feed(self, v: VLine, literal: bool = True) -> None:
        msg = v.msg
        mk = _marker(msg) if literal and v.stats is None else None
        cur = self.cur
        # (a banner or args line is a server starting: never an older server still running)
        owner = self._owner(v) if cur is not None and v.proc is not None and mk not in _STRONG else None
        if owner is not None:
            owner.feed(v, literal)  # a line of an older server still running beside this one
            return
        top = v.role in (None, "api")
        if v.proc is None and ARG_ERROR.match(msg) and (cur is None or _past_start(cur)):
            self._start(v, literal)  # a start refused at argument parsing is a boot of its own
            return
        if cur is not None and (cur.run_over and mk is not None or _went_back(cur.last_ts, v.ts)):
            # every start of the process is its own boot: a start line after the server said it
            # finished, or the envelope's clock going back (another run's log appended after)
            self._start(v, literal)
            return
        if cur is not None and self._new_run(cur, v):
            self._start(v, literal)  # the container started again: whatever it prints is this run's
            self.cur.from_run = True
            return
        if mk is not None and top or (mk is not None and cur is None):
            if cur is None:
                split = True
            elif mk in ("version", "args"):
                # printed once per server start; with --api-server-count N each ApiServer_i may
                # print its own, so only a repeat by the same process name counts (the banner
                # comes before the args, and never after the engine config)
                again = ("version", "args") if mk == "version" else ("args",)
                split = any(v.proc in cur.key_procs.get(k, ()) for k in again) or (
                    mk == "version" and "engine_cfg" in cur.keys and v.proc in (None, "APIServer", "MainProcess")
                )
            elif mk == "engine_cfg":
                split = "engine_cfg" in cur.keys and not cur.keys & {"version", "args"}
            else:
                # unknown_env: printed once per variable, by the top process, at import; the weak
                # ones (it too) also by spawned workers (untagged) while the engine starts
                split = (mk == "unknown_env" and (cur.progressed or msg.strip() in cur.env_warnings)) or (
                    mk in _WEAK
                    and (cur.engine_done or cur.ready_line is not None or cur.root is not None or cur.terminal)
                )
            if split or cur.api_restarted(v):
                self._start(v, literal)
                return
            own = v.role == "api" and (api_pid(v) or ("", -1))[1] in cur.api_pids.values()
            burst = not cur.body and not self.pending and not _gap(cur.last_ts, v.ts, 60.0)
            if mk in _STRONG or own or burst:
                # the current server's own start line: it cannot open the next boot
                self._flush()
                self._target().feed(v, literal)
                return
            self.pending.append((v, literal))  # a start-ish line that does not split (yet)
            return
        if (
            mk == "engine_cfg"
            and cur is not None
            and not cur.tagged_api
            and cur.engine_cfg_by
            and cur.engine_cfg_by[0] == v.proc
            and cur.engine_cfg_by[1] != tag_pid(v)
        ):
            # offline LLM() twice in one script: the second engine process is the next boot
            self._start(v, literal)
            return
        if cur is None:
            # a continued boot takes what the running one would, and so does the lead-in of a
            # log that starts mid-boot (rotated under a running server) once a vLLM line opened
            # it: the fork's untagged "[gdn_hip] ERROR" lines are that server's too
            if self.continuing or self.orphan is not None or _is_vllm(v):
                (self.orphan or self._new_orphan(v.lineno)).feed(v, literal)
            return
        if cur.api_restarted(v):
            if _end_mark(msg):
                return  # another server's last words (its start is not in this log): no boot
            self._start(v, literal)
            return
        if self.pending:
            if not _is_vllm(v):
                self.pending.append((v, literal))
                return
            self._flush()
        target = self._target()
        target.feed(v, literal)
        if _is_vllm(v):
            target.body = True  # past the import-time burst of start-ish lines
        if self.resume is None and cur.terminal and len(self.accs) >= 2:
            self._maybe_resume(cur)

    def _new_run(self, cur: _Acc, v: VLine) -> bool:
        """An engine's init or died event lies between the boot's last line and this one: the
        container stopped and started again in between (docs/podman.md: every record of a run is
        later than its init and than the previous run's died)."""
        if (
            not self.run_bounds
            or cur.last_ts is None
            or v.ts is None
            or v.ts.tzinfo is None
            or cur.last_ts.tzinfo is None
        ):
            return False
        i = bisect_right(self.run_bounds, cur.last_ts)
        return i < len(self.run_bounds) and self.run_bounds[i] < v.ts

    def _owner(self, v: VLine) -> _Acc | None:
        """The older boot a tagged line belongs to when two servers run at once (tagged era).

        Only between boots of different API-server processes: a restarted container reuses its
        pids (APIServer pid=1, EngineCore pid=135), and then the newest boot owns them.
        """
        cur = self.cur
        assert cur is not None
        pid = tag_pid(v)
        if pid is None or pid in cur.pids or not cur.api_pids:
            return None
        # the newest earlier boot (accs order; the last one never) that carried this pid, has an
        # API server of its own, another than the current boot's, and was not superseded
        buckets = self.pid_index.get(pid)
        if not buckets:
            return None
        mine, last, best = api_key(cur.api_pids), self.accs[-1], None
        for sig, accs in buckets.items():
            if not sig or sig == mine:
                continue
            for acc in accs:
                if acc is last or acc.superseded or acc.run_over or (best is not None and acc.seq < best.seq):
                    continue
                if api_key(acc.api_pids) == sig:  # (else filed again under its newer identity)
                    best = acc
        return best

    def _maybe_resume(self, cur: _Acc) -> None:
        """After the newer boot died, untagged lines may belong to the older one still starting."""
        prev = self.accs[-2]
        if prev.terminal or prev.root is not None or prev.tagged_api or cur.tagged_api:
            return
        if prev.ready_line is not None or prev.engine_done or not prev.boot.metrics:
            return  # only a boot caught mid-start (figures, no engine-ready yet) can go on
        if prev.last_ts is not None and cur.boot.started_at is not None:
            try:
                gap = (cur.boot.started_at - prev.last_ts).total_seconds()
            except TypeError:
                gap = 0.0
            if gap > self.RESUME_WINDOW_S:
                return
        self.resume = prev
        cur.superseded = True

    def finish(self, total_lines: int | None = None) -> list:
        """The boots in start order (a kept orphan first); a retired boot's place holds what
        retire() made of it (the Boot itself without a retire callback)."""
        if self.cur is not None:
            self._flush()
        out: list = []
        orphan = self.orphan
        if orphan is not None and (self.continuing or orphan.said_something()):
            # its start is the first: it can end no other boot, only be ended by one
            out.append(orphan.finish(self._end_of(orphan, total_lines)))
        for seq, acc in enumerate(self.accs):
            if acc is None:
                if self.retired[seq] is not None:
                    out.append(self.retired[seq])
            elif acc.kept():  # (prose quoting vLLM's words is no boot)
                out.append(acc.finish(self._end_of(acc, total_lines)))
        return out
