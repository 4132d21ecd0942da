"""The only place bootlog runs a container engine (podman, or docker for the same commands).

Always argument lists, never a shell.  The binary comes from $BOOTLOG_PODMAN (default "podman")
and $BOOTLOG_PODMAN_ARGS (shlex-split) is put before the subcommand, so a test or an operator can
point bootlog at a private store (`--root X --runroot Y`).  For docker, $BOOTLOG_DOCKER /
$BOOTLOG_DOCKER_ARGS play the same part.

Never `logs -f` and never `--tail`: both lose or reorder data in podman 4.3.1 (docs/podman.md).  Callers
poll `logs(since=...)` instead; `since` is exclusive (a record stamped exactly `since` is left out),
which `Cursor` below relies on.
"""

from __future__ import annotations

import heapq
import json
import os
import re
import shlex
import shutil
import subprocess
import tempfile
import time
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import IO, Iterator

from bootlog.errors import SourceError

ENGINES = ("podman", "docker")
CHUNK = 256 * 1024

# a record's timestamp as `logs --timestamps` prints it: RFC 3339, UTC "Z" (podman: always 9
# digits; docker: trailing zeros trimmed), followed by one space
TS_RE = re.compile(rb"(\d{4})-(\d\d)-(\d\d)T(\d\d):(\d\d):(\d\d)(?:\.(\d{1,9}))?(Z|[+-]\d\d:\d\d) ")
_NO_SUCH = re.compile(r"no such (container|object)|no container with name or id", re.I)


def command(engine: str = "podman") -> list[str]:
    """The engine's argv prefix: binary plus the global args from the environment."""
    if engine not in ENGINES:
        raise SourceError(f"unknown container engine {engine!r} (podman or docker)")
    var = engine.upper()
    binary = os.environ.get(f"BOOTLOG_{var}") or engine
    if shutil.which(binary) is None:
        shown = engine if binary == engine else f"{engine} ({binary})"
        raise SourceError(f"{shown} not found on PATH", engine=engine, binary=binary)
    return [binary, *shlex.split(os.environ.get(f"BOOTLOG_{var}_ARGS", ""))]


# podman's and docker's own rule for names (an id is hex, so it fits too): a name that starts
# with "-" would be read by the engine as an option (--latest, --help), never as a container
_NAME = re.compile(r"[a-zA-Z0-9][a-zA-Z0-9_.-]*")


def _checked(name: str) -> str:
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise SourceError(
            f"not a container name: {name!r} (letters, digits, _ . -; not starting with -)", container=name
        )
    return name


def _fail(engine: str, what: str, name: str, rc: int, stderr: str) -> SourceError:
    last = next((ln for ln in reversed(stderr.strip().splitlines()) if ln.strip()), "")
    if _NO_SUCH.search(last):
        return SourceError(f"no such container: {name}", container=name)
    return SourceError(
        f"{engine} {what} {name} failed (exit {rc}): {last.removeprefix('Error: ')}", container=name, rc=rc
    )


# An engine command can hang (a storage lock held by another podman): one that writes nothing
# for STALL_S seconds is stopped, and so is every command still running at the deadline that
# `deadline()` sets (the hook's --timeout).  The whole process group goes: podman's children too.
STALL_S = 60.0
_deadline: list[float] = []  # time.monotonic() values, innermost last


@contextmanager
def deadline(seconds: float) -> Iterator[None]:
    """Engine commands run inside this block end within `seconds` from now (SourceError)."""
    _deadline.append(time.monotonic() + seconds)
    try:
        yield
    finally:
        _deadline.pop()


def _limit(seconds: float) -> float:
    """`seconds`, or less when a deadline comes first (never below a short try)."""
    if not _deadline:
        return seconds
    return max(0.5, min(seconds, _deadline[-1] - time.monotonic()))


def stop(proc: subprocess.Popen) -> None:
    """Kill a child started in its own process group (the engine, a GPU tool) and reap it."""
    try:
        os.killpg(proc.pid, 9)
    except (ProcessLookupError, PermissionError):
        proc.kill()
    proc.wait()


def _spawn(argv: list[str], out, err, engine: str) -> subprocess.Popen:
    """The engine command in a session of its own (so stop() reaches its children too)."""
    try:
        return subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=err, start_new_session=True)
    except OSError as e:
        raise SourceError(f"cannot run {argv[0]}: {e.strerror or e}", engine=engine) from None


def run_engine(engine: str, args: list[str], name: str, what: str, timeout: float = STALL_S) -> str:
    _checked(name)
    timeout = _limit(timeout)
    proc = _spawn([*command(engine), *args], subprocess.PIPE, subprocess.PIPE, engine)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        stop(proc)
        raise SourceError(f"{engine} {what} {name} did not answer within {timeout:.0f} s", container=name) from None
    if proc.returncode != 0:
        raise _fail(engine, what, name, proc.returncode, err.decode("utf-8", "replace"))
    return out.decode("utf-8", "replace")


def _run_to(argv: list[str], out: IO[bytes], err: IO[bytes], engine: str, name: str) -> int:
    """Run `<engine> logs` with its output spooled to files; stop it when it stalls (STALL_S
    without a byte) or outlives the deadline.  Its return code."""
    proc = _spawn(argv, out, err, engine)
    size, quiet_since = -1, time.monotonic()
    while True:
        try:
            return proc.wait(timeout=0.5)
        except subprocess.TimeoutExpired:
            pass
        now = time.monotonic()
        got = os.fstat(out.fileno()).st_size + os.fstat(err.fileno()).st_size
        if got != size:
            size, quiet_since = got, now
        if now - quiet_since >= STALL_S:
            stop(proc)
            raise SourceError(f"{engine} logs {name} wrote nothing for {STALL_S:.0f} s: stopped it", container=name)
        if _deadline and now >= _deadline[-1]:
            stop(proc)
            raise SourceError(f"{engine} logs {name} did not finish in time", container=name)


# ---------------------------------------------------------------------------------------- time


def ts_ns(m: re.Match) -> int:
    """Nanoseconds since the epoch of a TS_RE match (kept as an int: datetime drops nanoseconds)."""
    y, mo, d, h, mi, s, frac, zone = m.groups()
    base = datetime(int(y), int(mo), int(d), int(h), int(mi), int(s), tzinfo=timezone.utc)
    ns = int(base.timestamp()) * 10**9 + (int(frac.ljust(9, b"0")) if frac else 0)
    if zone != b"Z":
        sign = 1 if zone[:1] == b"+" else -1
        ns -= sign * (int(zone[1:3]) * 3600 + int(zone[4:6]) * 60) * 10**9
    return ns


def parse_time(text: str) -> int | None:
    """Nanoseconds since the epoch from inspect/events spellings: RFC 3339 (any fraction) or
    Go's `2026-11-29 14:25:24.814971381 +0000 UTC`.  None for Go's zero time."""
    text = text.strip()
    if not text or text.startswith("0001-01-01"):
        return None
    go = re.fullmatch(r"(\S+) (\S+) ([+-]\d\d)(\d\d)(?: \S+)?", text)
    if go:
        text = f"{go[1]}T{go[2]}{go[3]}:{go[4]}"
    m = TS_RE.match((text + " ").encode())
    if not m:
        raise SourceError(f"cannot read container time {text!r}")
    return ts_ns(m)


def format_time(ns: int) -> str:
    """RFC 3339 with nanoseconds, UTC: what --since/--until accept without rounding."""
    sec, frac = divmod(ns, 10**9)
    return datetime.fromtimestamp(sec, timezone.utc).strftime("%Y-%m-%dT%H:%M:%S") + f".{frac:09d}Z"


def now_ns() -> int:
    return time.time_ns()


def _since_arg(since: int | datetime | str | None) -> str | None:
    if since is None or isinstance(since, str):
        return since
    if isinstance(since, datetime):
        if since.tzinfo is None:
            raise ValueError("since must be timezone-aware")
        return format_time(int(since.timestamp()) * 10**9 + since.microsecond * 1000)
    return format_time(int(since))


# ---------------------------------------------------------------------------------------- logs


def _lines(f: IO[bytes]) -> Iterator[tuple[int, bytes]]:
    """(timestamp ns, physical line) of a spooled `logs --timestamps` stream.

    A physical line may hold several records (P chunks of one long line each carry their own
    stamp in 4.3.1); the line sorts by its first stamp.  Bytes without a stamp (the engine's own
    output, or timestamps off) inherit the previous stamp so order is kept.
    """
    last, last_stamp = 0, b""
    for line in f:
        m = TS_RE.match(line)
        if m:
            stamp = m.group(0)
            if stamp != last_stamp:  # one conmon read batch shares a stamp: parse it once
                last, last_stamp = ts_ns(m), stamp
        yield last, line


def logs(
    name: str,
    *,
    since: int | datetime | str | None = None,
    until: int | datetime | str | None = None,
    timestamps: bool = True,
    engine: str = "podman",
) -> Iterator[bytes]:
    """The container's log as `<engine> logs --timestamps` prints it, stdout and stderr merged
    by timestamp, in chunks of about 256 KiB.

    The engine writes both streams at once, so each is spooled to an unlinked temporary file
    (bounded memory, no pipe deadlock) and the two are merged once the command has ended.
    `since`/`until` are exclusive bounds: ns since the epoch, an aware datetime or the engine's
    own spelling.  Raises SourceError before yielding anything if the command fails.
    """
    args = ["logs", "--timestamps"]
    if (s := _since_arg(since)) is not None:
        args += ["--since", s]
    if (u := _since_arg(until)) is not None:
        args += ["--until", u]
    argv = [*command(engine), *args, _checked(name)]
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        rc = _run_to(argv, out, err, engine, name)
        if rc != 0:
            err.seek(0)
            # only the tail: the engine's own message is the last line after any stderr records
            err.seek(max(0, os.fstat(err.fileno()).st_size - 4096))
            raise _fail(engine, "logs", name, rc, err.read().decode("utf-8", "replace"))
        out.seek(0)
        err.seek(0)
        sizes = [os.fstat(f.fileno()).st_size for f in (out, err)]
        if timestamps and sizes[1] == 0:
            # stdout only: nothing to merge, copy it through in big blocks
            while block := out.read(CHUNK):
                yield block
            return
        err_lines = _lines(err)
        if timestamps:
            # every record line carries a stamp; an unstamped stderr line is the engine's own
            # chatter (`time="…" level=warning msg="cgroupv1 is deprecated"`), not the container's
            err_lines = ((t, ln) for t, ln in err_lines if TS_RE.match(ln))
        merged = heapq.merge(_lines(out), err_lines, key=lambda item: item[0])
        buf: list[bytes] = []
        size = 0
        ended = True
        for _, line in merged:
            if not ended:
                # a stream's output ended without a newline (a trailing P record) and the other
                # stream goes on: end the line instead of gluing the two streams' records (as
                # sources.container_source does, so both number lines alike)
                line = b"\n" + line
            ended = line.endswith(b"\n")
            if not timestamps:
                line = _strip_stamps(line)
            buf.append(line)
            size += len(line)
            if size >= CHUNK:
                yield b"".join(buf)
                buf, size = [], 0
        if buf:
            yield b"".join(buf)


def _strip_stamps(line: bytes) -> bytes:
    # a stamp opens the line and every glued P continuation; the strict shape makes a false hit
    # inside real text very unlikely
    return TS_RE.sub(b"", line)


@dataclass
class Cursor:
    """Where a poller stands in a container's log: the stamp of the last record it consumed and
    how many records carry exactly that stamp (one conmon read batch shares a stamp, so a batch
    can straddle two polls).  `ts=None` means "from the beginning"."""

    ts: int | None = None
    at_ts: int = 0

    def encode(self) -> str:
        return f"{self.ts or 0}:{self.at_ts}"

    @classmethod
    def decode(cls, text: str | None) -> "Cursor":
        if not text:
            return cls()
        ts, _, n = text.partition(":")
        return cls(int(ts) or None, int(n or 0))


def read_batches(
    name: str,
    cursor: Cursor,
    *,
    until: int | None = None,
    final: bool = False,
    engine: str = "podman",
    batch: int = 8 << 20,
) -> Iterator[tuple[bytes, Cursor]]:
    """Log bytes after `cursor` in batches of about `batch` bytes cut at line ends, each with
    the cursor after it: memory stays bounded however long the log is.

    Unless `final` (the container has stopped writing), a trailing partial line (a P record
    whose rest is not written yet) is left for the next call.
    """
    since = None if cursor.ts is None else cursor.ts - 1  # exclusive bound: keep records AT ts
    skip = cursor.at_ts if cursor.ts is not None else 0
    pending = b""
    for chunk in logs(name, since=since, until=until, engine=engine):
        pending += chunk
        while len(pending) >= batch:
            # cut at the last line end within the batch (or after a line longer than it)
            cut = pending.rfind(b"\n", 0, batch) + 1 or pending.find(b"\n", batch) + 1
            if not cut:
                break
            data, pending = pending[:cut], pending[cut:]
            data, skip = _skip_seen(data, cursor, skip)
            if data:
                cursor = advance(cursor, data)
                yield data, cursor
    if not final:
        pending = pending[: pending.rfind(b"\n") + 1]
    data, skip = _skip_seen(pending, cursor, skip)
    if data:
        yield data, advance(cursor, data)


def _skip_seen(data: bytes, cursor: Cursor, skip: int) -> tuple[bytes, int]:
    """Drop the `skip` records stamped exactly cursor.ts that an earlier read consumed."""
    if skip <= 0:
        return data, 0
    for m in TS_RE.finditer(data):
        if skip > 0 and ts_ns(m) == cursor.ts:
            skip -= 1
            continue
        return data[m.start() :], 0
    return b"", skip


def advance(cursor: Cursor, data: bytes) -> Cursor:
    """The cursor after consuming `data` (every stamped record in it)."""
    ts, n, last_stamp = cursor.ts, cursor.at_ts, b""
    for m in TS_RE.finditer(data):
        stamp = m.group(0)
        if stamp != last_stamp:
            last_stamp, s = stamp, ts_ns(m)
            if s != ts:
                ts, n = s, 0
        n += 1
    return Cursor(ts, n)


def read_new(
    name: str, cursor: Cursor, *, until: int | None = None, final: bool = False, engine: str = "podman"
) -> tuple[bytes, Cursor]:
    """Everything after `cursor` at once (see read_batches) and the cursor after it."""
    batches = list(read_batches(name, cursor, until=until, final=final, engine=engine))
    return b"".join(data for data, _ in batches), batches[-1][1] if batches else cursor


# ------------------------------------------------------------------------------ inspect, events


def _unreadable(engine: str, what: str, name: str, err: BaseException) -> SourceError:
    """An engine's output that is not the JSON it documents (a wrapper script's chatter, another
    version's shape): one line naming the command, never an internal error."""
    why = err.msg if isinstance(err, json.JSONDecodeError) else str(err)
    return SourceError(f"{engine} {what} {name}: unreadable output ({type(err).__name__}: {why})", container=name)


def inspect(name: str, engine: str = "podman") -> dict:
    """`<engine> container inspect NAME` as a dict (State.Status, State.Running, State.StartedAt,
    State.FinishedAt, State.ExitCode, RestartCount, Id, Image, ImageName, HostConfig.LogConfig…)."""
    out = run_engine(engine, ["container", "inspect", name], name, "inspect")
    try:
        data = json.loads(out)
        if data and not (isinstance(data, list) and isinstance(data[0], dict)):
            raise TypeError(f"a {type(data).__name__} where a list of objects belongs")
    except (ValueError, TypeError, RecursionError) as err:  # (JSONDecodeError is a ValueError)
        raise _unreadable(engine, "inspect", name, err) from None
    if not data:
        raise SourceError(f"no such container: {name}", container=name)
    return data[0]


@dataclass
class State:
    """The few inspect fields that tell where a container's current boot stands (times in ns)."""

    id: str
    status: str  # created | running | exited | stopped | paused | ...
    running: bool
    started_at: int | None
    finished_at: int | None
    exit_code: int | None
    restart_count: int
    image: str | None


def state(name: str, engine: str = "podman") -> State:
    info = inspect(name, engine=engine)
    try:
        st = info.get("State") or {}
        running, code, image = (
            st.get("Running", False),
            st.get("ExitCode"),
            info.get("ImageName") or (info.get("Config") or {}).get("Image") or info.get("Image"),
        )
        if not isinstance(running, bool) or type(code) not in (int, type(None)):
            raise TypeError("State.Running is not true/false or State.ExitCode not a number")
        return State(
            id=str(info.get("Id") or info.get("ID") or ""),
            status=str(st.get("Status") or ""),
            running=running,
            started_at=parse_time(str(st.get("StartedAt") or "")),
            finished_at=parse_time(str(st.get("FinishedAt") or "")),
            exit_code=code,
            restart_count=int(info.get("RestartCount") or 0),
            image=str(image) if image else None,
        )
    except (AttributeError, TypeError, ValueError, OverflowError) as err:  # (a State that is no object)
        raise _unreadable(engine, "inspect", name, err) from None


def events(
    name: str, since: int | datetime | str, until: int | datetime | str | None = None, engine: str = "podman"
) -> list[dict]:
    """The container's lifecycle events (oldest first), each the engine's JSON plus `status`
    (podman spelling: init, start, died, ...) and `time_ns`.

    podman's `init` and the previous `died` are the reliable boot boundaries: every record of a
    boot is later than both, while StartedAt and `start` can trail the first record (docs/podman.md).
    """
    args = ["events", "--filter", f"container={name}", "--since", _since_arg(since)]
    if engine == "podman":
        args += ["--stream=false", "--format", "json"]
    else:
        args += ["--format", "{{json .}}"]
    if until is not None or engine == "docker":  # docker streams forever without --until
        args += ["--until", _since_arg(until if until is not None else now_ns())]
    out = run_engine(engine, args, name, "events")
    found = []
    for line in out.splitlines():
        line = line.strip()
        if not line.startswith("{"):
            continue
        try:
            ev = json.loads(line)
            status = ev.get("Status") or ev.get("status") or ev.get("Action") or ""
            if not isinstance(status, str):
                raise TypeError(f"an event's status is a {type(status).__name__}")
            ev["status"] = {"die": "died"}.get(status, status)
            if "timeNano" in ev:
                ev["time_ns"] = int(ev["timeNano"])
            else:
                ev["time_ns"] = parse_time(str(ev.get("Time") or ev.get("time") or "")) or 0
        except (ValueError, TypeError, AttributeError, OverflowError, RecursionError) as err:
            raise _unreadable(engine, "events", name, err) from None
        found.append(ev)
    found.sort(key=lambda e: e["time_ns"])
    return found


@dataclass
class RunEvent:
    """An `init` or `died` event of a container: when, which, and a died run's exit code."""

    at: datetime  # aware, UTC
    status: str  # init | died
    exit_code: int | None = None


def run_events(name: str, engine: str = "podman") -> list[RunEvent]:
    """The `init` and `died` events of the current container of that name, oldest first; []
    when the engine cannot say (no such container, an event log that cannot be read).  Every
    record of a run is later than its init and than the previous run's died (docs/podman.md): they
    bound its runs, so a boot's lines never span one."""
    try:
        info = inspect(name, engine=engine)
        created = parse_time(str(info.get("Created") or "")) or now_ns() - 7 * 24 * 3600 * 10**9
        evs = events(name, since=created - 10**9, engine=engine)
    except SourceError:
        return []
    cid = str(info.get("Id") or info.get("ID") or "")
    out = []
    for e in evs:
        if e["status"] in ("init", "died") and (e.get("ID") or e.get("id") or cid) == cid:
            code = e.get("ContainerExitCode", (e.get("Actor") or {}).get("Attributes", {}).get("exitCode"))
            try:
                code = int(code) if code is not None else None
            except (TypeError, ValueError):
                code = None
            out.append(RunEvent(datetime.fromtimestamp(e["time_ns"] / 1e9, timezone.utc), e["status"], code))
    return sorted(out, key=lambda r: r.at)


def run_bounds(name: str, engine: str = "podman") -> list[datetime]:
    """The times of run_events(): where one run of the container ends and the next begins."""
    return [r.at for r in run_events(name, engine)]
