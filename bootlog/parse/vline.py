"""The vLLM line shape: process tag(s) -> role/rank, level, MM-DD time, [file:line], message.

One function, `parse_line`, that never raises: anything it cannot read stays in `msg`.
Shapes handled (docs/log-formats.md section 2):
  "(APIServer pid=1) INFO 10-02 09:53:01 [api_server.py:1839] msg"        v0.10.1+
  "(RayWorkerProc pid=9, ip=10.0.0.2) (Worker_TP1 pid=9) INFO ..."         Ray outer + vLLM inner tag
  "INFO 04-28 16:55:11 api_server.py:440] msg"                             <= v0.7 (no bracket)
  "DEBUG 01-27 22:06:26 [v1/engine/core.py:93] msg"                        DEBUG path-style fileinfo
  "(APIServer pid=1) INFO:     Application startup complete."              uvicorn
  "junkINFO 08-16 12:15:13 [x.py:44] msg"                                  VLLM_LOGGING_PREFIX / glued
  '{"asctime": "2026-01-02 03:04:05,678", "levelname": "INFO", ... }'      v0.32 JSON formatter
  "[rank0]: Traceback (most recent call last):"                           torchrun's rank prefix
"""

from __future__ import annotations

import json
import re
from datetime import datetime

from bootlog.records import Record, VLine

_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
# one process tag: "(Name pid=1)", "(VllmWorker rank=1 pid=2)", "(VllmWorker TP0 pid=3)",
# "(RayWorkerWrapper pid=4, ip=10.0.0.1)"
_TAG = re.compile(
    r"\((?:(?P<name>[A-Za-z_][\w\-]*)(?: (?P<sub>rank=\d+|[A-Z]{2}\d+(?:_[A-Z]{2}\d+)*))? )?"
    r"pid=(?P<pid>\d+)(?:, ip=[\w.:\-]+)?\)\s?"
)
# a run of tags right before a level, for lines with junk glued in front (podman partial lines)
_TAG_RUN = re.compile(r"(?:\((?:[A-Za-z_][\w\-]*(?: [^()]*?)? )?pid=\d+(?:, ip=[\w.:\-]+)?\)\s?)+$")
_REPEATED = re.compile(r"\s*\[repeated \d+x across cluster\].*$")  # Ray adds a hint after it
_LEVELS = "DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL|FATAL"
# vLLM logger: LEVEL MM-DD HH:MM:SS [file:line] msg   (bracket optional before v0.8)
_VLLM = re.compile(
    rf"(?P<level>{_LEVELS}) (?P<mo>\d\d)-(?P<d>\d\d) (?P<h>\d\d):(?P<mi>\d\d):(?P<s>\d\d)"
    r"(?:[.,]\d+)? \[?(?P<src>[^\s\]]+?:\d+)\] ?"
)
# the usual shape, in one match: at most one process tag, then vLLM's logger prefix.  PREFIX is
# the one spelling of it: parse/stats.py reads a whole stats line with PREFIX + its wording
PREFIX = f"(?P<tag>{_TAG.pattern})?{_VLLM.pattern}"
_PREFIX = re.compile(PREFIX)
_GLUED_UVICORN = re.compile(rf"\([A-Za-z_][\w\-]*(?: [^()]*?)? pid=\d+\) (?=(?:{_LEVELS}):\s)")
_UVICORN = re.compile(rf"(?P<level>{_LEVELS}):\s+")
_RANK_IN_NAME = re.compile(r"TP(\d+)")
_TORCHRUN = re.compile(r"\[(?:rank|default)(\d{1,6})\]: ?")
# the whole run of tags _tags() reads, in one match (a log holds a handful of distinct runs)
_TAGS = re.compile(f"(?:{_TAG.pattern})+")
_SEEN_MAX = 512  # distinct tag runs / timestamps kept (a crash loop: new pids each boot)
_tags_seen: dict[str, tuple[str | None, str | None, int | None, int]] = {}
_ts_seen: dict[tuple[int, str], datetime | None] = {}


def _role(name: str) -> str | None:
    if name.startswith("Ray") or name in ("EngineCoreActor", "DPEngineCoreActor", "DPMoEEngineCoreActor"):
        return "engine" if "EngineCore" in name else "ray"
    if name.startswith(("EngineCore", "VLLM_DP", "DPCoordinator")):
        return "engine"
    if "Worker" in name:
        return "worker"
    if name.lower().startswith("apiserver") or name in ("MainProcess", "DPSupervisor"):
        return "api"
    return None


_RANK_MAX = 1 << 20  # a "rank" past this is not a GPU's (and would not fit a database integer)


def _rank(name: str, sub: str | None) -> int | None:
    if sub and sub.startswith("rank="):
        rank: int | None = int(sub[5:])
    else:
        m = (sub and _RANK_IN_NAME.search(sub)) or _RANK_IN_NAME.search(name)
        rank = int(m.group(1)) if m else None
    return rank if rank is None or rank < _RANK_MAX else None


_DIM = re.compile(r"(DP|PP|PCP|TP)(\d+)")


def worker_dims(text: str) -> dict[str, int] | None:
    """{"DP": d, "PP": p, "PCP": c, "TP": t} (the ones present) of the worker tag that starts
    `text` ("(Worker_PP1_TP0 pid=N) ...", "(VllmWorker PP1_TP0 pid=N) ..."), when it names a
    pipeline, data or context-parallel rank: its TP index alone is not the worker's rank then."""
    m = _TAGS.match(text)
    if m is None or "P" not in m.group():
        return None
    name = None
    for t in _TAG.finditer(m.group()):
        if t["name"] and "Worker" in t["name"]:
            name = t["name"] + " " + (t["sub"] or "")
    if name is None:
        return None
    dims = {k: int(v) for k, v in _DIM.findall(name) if int(v) < _RANK_MAX}
    return dims if dims.keys() & {"DP", "PP", "PCP"} else None


def _vllm_ts(m: re.Match[str], rec: Record, year: int | None) -> datetime | None:
    if rec.ts is not None:
        return rec.ts
    if year is None:
        return None
    # lines come several to a second: the datetime of "MM-DD HH:MM:SS" is looked up, not rebuilt
    i = m.start("mo")
    key = (year, m.string[i : i + 14])  # "MM-DD HH:MM:SS": fixed width
    try:
        return _ts_seen[key]
    except KeyError:
        pass
    try:
        ts = datetime(year, int(m["mo"]), int(m["d"]), int(m["h"]), int(m["mi"]), int(m["s"]))
    except ValueError:  # 02-29 in a non-leap year, garbage digits
        ts = None
    if len(_ts_seen) >= _SEEN_MAX:
        _ts_seen.clear()
    _ts_seen[key] = ts
    return ts


def _json_line(rec: Record, text: str) -> VLine | None:
    try:
        obj = json.loads(text)
    except ValueError:
        return None
    if not isinstance(obj, dict) or "message" not in obj:
        return None
    proc, level, src, asctime = (
        obj.get(k) if isinstance(obj.get(k), str) else None for k in ("processName", "levelname", "name", "asctime")
    )
    ts = rec.ts
    if ts is None and asctime is not None:
        try:
            ts = datetime.strptime(asctime[:19], "%Y-%m-%d %H:%M:%S")
        except ValueError:
            ts = None
    return VLine(
        lineno=rec.lineno,
        text=rec.text,
        msg=str(obj["message"]),
        ts=ts,
        proc=proc,
        role=_role(proc) if proc else None,
        rank=_rank(proc, None) if proc else None,
        level=level,
        src=src,
        stream=rec.stream,
    )


def json_exc_lines(v: VLine) -> list[VLine]:
    """The traceback of a JSON record (python-json-logger writes logger.exception's traceback to
    an "exc_info" field, not the message) as lines of that record, in the order the text
    formatter would have printed them below its message; [] for any other line."""
    if not v.text.startswith("{") or '"exc_info"' not in v.text:
        return []
    try:
        exc = json.loads(v.text).get("exc_info")
    except (ValueError, AttributeError):
        return []
    if not isinstance(exc, str):
        return []
    return [
        VLine(
            lineno=v.lineno,
            text=line,
            msg=line,
            ts=v.ts,
            proc=v.proc,
            role=v.role,
            rank=v.rank,
            level=v.level,
            src=v.src,
            stream=v.stream,
        )
        for line in exc.splitlines()
        if line.strip()
    ]


def _tags(text: str, pos: int) -> tuple[str | None, str | None, int | None, int]:
    """Nested process tags from pos on: the innermost one names the process that printed."""
    proc = role = None
    rank: int | None = None
    while True:
        m = _TAG.match(text, pos)
        if not m:
            break
        if m["name"] == "MainProcess" and role == "ray":
            # v0.31+: a Ray worker that vLLM has not named yet tags its records "(MainProcess
            # pid=N)" inside Ray's own tag: a worker, not an API server (nothing to add)
            pos = m.end()
            continue
        proc = m["name"] or "ray"  # Ray prints "(pid=N, ip=A)" for actors without a name
        r = _role(proc) if m["name"] else "ray"
        role = r if r is not None else role
        rk = _rank(proc, m["sub"])
        rank = rk if rk is not None else (rank if r == "ray" or r is None else None)
        pos = m.end()
    return proc, role, rank, pos


def _run_tags(run: str) -> tuple[str | None, str | None, int | None, int]:
    """_tags(run, 0) of a run of tags (_TAGS: the same regex, repeated), looked up: its result
    depends on that text alone, and a log holds a handful of runs ("(Worker_TP0 pid=144) ")."""
    got = _tags_seen.get(run)
    if got is None:
        if len(_tags_seen) >= _SEEN_MAX:
            _tags_seen.clear()
        got = _tags_seen[run] = _tags(run, 0)
    return got


def from_prefix(m: re.Match[str], rec: Record, year: int | None, msg: str) -> VLine:
    """The VLine of a line whose start matched PREFIX (m: a match of PREFIX, or of a pattern
    that starts with it), its message `msg`."""
    tag = m["tag"]
    proc, role, rank, _ = _run_tags(tag) if tag else (None, None, None, 0)
    level = m["level"]
    if "[repeated" in msg:
        msg = _REPEATED.sub("", msg)
    return VLine(
        rec.lineno,
        rec.text,
        msg,
        _vllm_ts(m, rec, year),
        proc,
        role,
        rank,
        "WARNING" if level == "WARN" else level,
        m["src"],
        rec.stream,
        tag,
    )


def parse_line(rec: Record, year: int | None = None) -> VLine:
    """Split one Record into vLLM's line parts; unknown shapes keep the whole text as msg."""
    text = rec.text
    try:
        if "\x1b" in text:
            text = _ANSI.sub("", text)
        run = _TORCHRUN.match(text) if text[:1] == "[" else None
        if run is not None:  # torchrun's "[rank1]: " before a rank's every line: its rank
            v = parse_line(Record(rec.lineno, text[run.end() :], rec.ts, rec.stream), year)
            v.text, v.rank = rec.text, v.rank if v.rank is not None else int(run[1])
            return v
        m = _PREFIX.match(text)
        if m is not None:
            return from_prefix(m, rec, year, text[m.end() :])
        if text.startswith("{") and '"message"' in text:
            v = _json_line(rec, text)
            if v is not None:
                return v
        run = _TAGS.match(text)
        proc, role, rank, pos = _run_tags(run.group()) if run else (None, None, None, 0)
        level = src = None
        ts = rec.ts
        rest = text[pos:]
        m = _VLLM.match(rest)
        if m is None and len(rest) > 8:
            # VLLM_LOGGING_PREFIX junk or a partial line glued before the level (and its tags)
            m = _VLLM.search(rest)
            if m is not None:
                run = _TAG_RUN.search(rest, 0, m.start())
                if run is not None:
                    proc, role, rank, _ = _tags(rest, run.start())
            else:
                g = _GLUED_UVICORN.search(rest)
                if g is not None:
                    proc, role, rank, p2 = _tags(rest, g.start())
                    rest = rest[p2:]
        if m is not None:
            level = "WARNING" if m["level"] == "WARN" else m["level"]
            src, ts, msg = m["src"], _vllm_ts(m, rec, year), rest[m.end() :]
        elif (u := _UVICORN.match(rest)) is not None:
            level, msg = u["level"], rest[u.end() :]
        else:
            msg = rest
        if "[repeated" in msg:
            msg = _REPEATED.sub("", msg)
        return VLine(
            lineno=rec.lineno,
            text=rec.text,
            msg=msg,
            ts=ts,
            proc=proc,
            role=role,
            rank=rank,
            level=level,
            src=src,
            stream=rec.stream,
            tag=text[:pos] if pos else None,
        )
    except Exception:  # noqa: BLE001 - never raises: a line we cannot read is still a line
        return VLine(lineno=rec.lineno, text=rec.text, msg=rec.text, ts=rec.ts, stream=rec.stream)
