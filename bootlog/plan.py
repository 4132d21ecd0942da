"""Plan files: what a deploy is expected to look like.

A plan is TOML plus an optional env file (the operator's KEY=VALUE deploy config), so the
expectations can quote the very numbers the deploy was launched with (`${MAXLEN}`) instead of
repeating them and drifting apart.

```toml
env_file = "frank-primary.env"        # relative to this plan file
env_prefix = "FRANK_PRIMARY_"         # ${MAXLEN} -> FRANK_PRIMARY_MAXLEN

[config]                              # every key must be in the boot's config with this value
max_model_len = "${MAXLEN}"
expert_precise_memory = true

[metrics.kv_cache_tokens]             # min / max / eq / approx (+ tol, relative) / rank / hard
min = 400700
hard = true
[metrics.graph_capture_gib]
max = "cudagraph_estimate_gib"        # a bound may name another figure (same rank) or config key

[events]
oom = { max = 0, hard = true }
gdn_hip_fault = 0                     # shorthand for { max = 0 }

[boot]
status = "ready"
boot_to_ready_s = { max = 900 }
compile_cache = "warm"

[tolerance]                           # timing judgement against history
k = 3.0
min_pct = 20.0

[[pattern]]                           # a user figure or event, checked against its samples
name = "expert_arena_gib"
regex = 'arena (?P<value>[\\d.]+) GiB'
unit = "GiB"
samples = [{ line = "expert arena 17.77 GiB / 7,762 slots", value = 17.77 }]
```
"""
from __future__ import annotations

import math
import os
import re
import tomllib
from pathlib import Path
from typing import Any, Iterable

import regex as _regex

from bootlog.errors import PlanError
from dataclasses import dataclass, field
from bootlog.records import EVENT_KINDS, Event, Metric, Record  # noqa: F401  (EVENT_KINDS: plan's vocabulary too)

# The public vocabulary (metrics.md). Plans may name these, user patterns, and catalogue names.
CAPACITY_METRICS = (
    "kv_cache_tokens", "num_gpu_blocks", "num_cpu_blocks", "max_concurrency",
    "max_concurrency_request_tokens", "kv_cache_available_gib", "model_load_gib",
    "graph_capture_gib", "cudagraph_estimate_gib", "kv_bytes_per_token", "kv_margin_tokens",
)
TIMING_METRICS = (
    "model_load_s", "weights_load_s", "memory_profiling_s", "dynamo_transform_s",
    "compile_graph_s", "compile_cache_load_s", "torch_compile_s", "graph_capture_s",
    "init_engine_s", "init_engine_compile_s", "boot_to_ready_s",
)
RUNTIME_METRICS = (
    "prompt_throughput_tps", "generation_throughput_tps", "running_reqs", "waiting_reqs",
    "kv_cache_usage_pct", "prefix_cache_hit_rate_pct", "spec_acceptance_rate_pct",
    "spec_mean_acceptance_length",
)
UNITS = {
    "kv_cache_tokens": "tokens", "max_concurrency": "x", "max_concurrency_request_tokens": "tokens",
    "kv_cache_available_gib": "GiB", "num_gpu_blocks": "blocks", "num_cpu_blocks": "blocks",
    "model_load_gib": "GiB", "graph_capture_gib": "GiB", "cudagraph_estimate_gib": "GiB",
    "kv_bytes_per_token": "B/token", "kv_margin_tokens": "tokens",
    **{name: "s" for name in TIMING_METRICS},
}

_BOUND_KEYS = ("min", "max", "eq", "approx")
_METRIC_KEYS = set(_BOUND_KEYS) | {"tol", "rank", "hard", "kind"}
_PATTERN_TIMEOUT_S = 0.25  # per search: a catastrophic regex must not hang an ingest
_PATTERN_GIVE_UP = 3  # runaway lines after which a pattern is dropped for the rest of the run


@dataclass
class Expect:
    """Bounds on one figure (or an event count). Bound values are numbers, or strings naming
    another figure / config key to read from the same boot."""

    name: str
    min: Any = None
    max: Any = None
    eq: Any = None
    approx: Any = None
    tol: float = 0.01  # relative tolerance of `approx`
    rank: int | str | None = None  # None/"each": every rank; an int: that rank only
    hard: bool = False


@dataclass
class UserPattern:
    name: str
    regex: Any  # compiled `regex` pattern with a `value` group (figures) or none (events)
    source: str
    unit: str | None = None  # figures
    event: str | None = None  # event kind, when the pattern marks an event instead of a figure
    literal: str | None = None  # cheap prefilter
    kind: str | None = None  # "capacity" | "timing": how diff judges moves
    timeouts: int = 0  # lines it ran away on; at _PATTERN_GIVE_UP it is used no more


@dataclass
class Plan:
    path: Path | None = None
    env: dict[str, Any] = field(default_factory=dict)
    env_prefix: str = ""
    config: dict[str, Any] = field(default_factory=dict)
    metrics: dict[str, Expect] = field(default_factory=dict)
    events: dict[str, Expect] = field(default_factory=dict)
    boot: dict[str, Any] = field(default_factory=dict)  # status, compile_cache, hard
    boot_metrics: dict[str, Expect] = field(default_factory=dict)  # [boot] boot_to_ready_s = {...}
    patterns: list[UserPattern] = field(default_factory=list)
    k: float = 3.0  # timing tolerance: median +/- k * MAD ...
    min_pct: float = 20.0  # ... never tighter than this percentage of the median

    @property
    def user_names(self) -> set[str]:
        return {p.name for p in self.patterns}


# ---------------------------------------------------------------------------- env files

_ENV_LINE = re.compile(r"^\s*(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)\s*=\s*(.*?)\s*$")


def coerce(text: str) -> Any:
    """An env/config string as the value it means: '' -> None, ints, floats, booleans."""
    s = text.strip()
    if s == "":
        return None
    low = s.lower()
    if low in ("true", "yes", "on"):
        return True
    if low in ("false", "no", "off"):
        return False
    if low in ("none", "null"):
        return None
    try:
        return int(s.replace("_", "")) if re.fullmatch(r"[+-]?\d[\d_]*", s) else float(s)
    except ValueError:
        return s


def _unquote(raw: str) -> str:
    if raw[:1] in ("'", '"'):
        q = raw[0]
        end = raw.find(q, 1)
        if end < 0:
            raise ValueError("unterminated quote")
        return raw[1:end]
    # an unquoted value ends at an inline comment (" #"), as in shell
    return re.split(r"\s+#", raw, maxsplit=1)[0].strip()


_MAX_TEXT = 4 << 20  # bytes: a plan or env file is a page of text, never a device or a log


def _read_small(p: Path, what: str) -> str:
    """A plan's or env file's text: a regular file of at most _MAX_TEXT bytes (a FIFO would
    block, /dev/zero would fill the memory), UTF-8."""
    import os
    import stat

    fd = os.open(p, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))  # (a FIFO opens without a writer)
    with os.fdopen(fd, "rb") as f:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise PlanError(f"{what} {p}: not a regular file", path=str(p))
        data = f.read(_MAX_TEXT + 1)
    if len(data) > _MAX_TEXT:
        raise PlanError(f"{what} {p}: larger than {_MAX_TEXT >> 20} MiB: not a {what}", path=str(p))
    return data.decode("utf-8")


def load_env(path: str | Path) -> dict[str, Any]:
    """KEY=VALUE lines: comments, blank lines, `export `, single/double quotes; values coerced."""
    p = Path(path)
    try:
        text = _read_small(p, "env file")
    except OSError as e:
        raise PlanError(f"env file {p}: {e.strerror or e}", path=str(p)) from e
    except UnicodeDecodeError as e:
        raise PlanError(f"env file {p}: {_not_utf8(e)}", path=str(p)) from None
    env: dict[str, Any] = {}
    for no, line in enumerate(text.splitlines(), 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        m = _ENV_LINE.match(line)
        if not m:
            raise PlanError(f"env file {p} line {no}: not KEY=VALUE: {line.strip()[:60]}",
                            path=str(p), line=no)
        try:
            raw = _unquote(m.group(2))
        except ValueError:
            raise PlanError(f"env file {p} line {no}: unterminated quote", path=str(p), line=no)
        quoted = m.group(2)[:1] in ("'", '"')
        if m.group(2)[:1] != "'":
            # as the shell does: ${NAME} inside an unquoted or "double-quoted" value refers to a
            # key defined above it (or the process environment); single quotes stay literal
            raw = _VAR.sub(lambda v: _env_ref(v, env), raw)
        # a quoted value stays text unless it reads as a number; "" still means unset
        env[m.group(1)] = coerce(raw) if (not quoted or raw == "" or _numberish(raw)) else raw
    return env


def _env_ref(m: re.Match, env: dict[str, Any]) -> str:
    name = m.group(1) or m.group(2)
    v = env.get(name, os.environ.get(name, ""))
    return "" if v is None else str(v)


def _numberish(s: str) -> bool:
    return bool(re.fullmatch(r"[+-]?(\d[\d_]*\.?\d*|\.\d+)([eE][+-]?\d+)?", s.strip()))


# ---------------------------------------------------------------------------- expansion

_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}|\$([A-Za-z_][A-Za-z0-9_]*)")  # env files: shell forms
_PLAN_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}()")  # plans: only ${NAME}, so a regex's $ is safe


def _lookup(name: str, env: dict[str, Any], prefix: str) -> tuple[bool, Any]:
    for key in (prefix + name, name):
        if key in env:
            return True, env[key]
    for key in (prefix + name, name):
        if key in os.environ:
            return True, coerce(os.environ[key])
    return False, None


def expand(value: Any, env: dict[str, Any], prefix: str, where: str) -> Any:
    """`${NAME}` -> env[prefix+NAME] (else env[NAME]); a value that is one reference keeps the
    referenced type, a reference inside longer text is substituted as text."""
    if isinstance(value, list):
        return [expand(v, env, prefix, where) for v in value]
    if isinstance(value, dict):
        return {k: expand(v, env, prefix, f"{where}.{k}") for k, v in value.items()}
    if not isinstance(value, str) or "${" not in value:
        return value
    whole = _PLAN_VAR.fullmatch(value.strip())
    if whole:
        name = whole.group(1) or whole.group(2)
        found, v = _lookup(name, env, prefix)
        if not found:
            raise PlanError(f"{where}: ${{{name}}} is not defined in the env file "
                            f"(looked for {prefix + name} and {name})", key=where)
        return v

    def sub(m: re.Match) -> str:
        name = m.group(1) or m.group(2)
        found, v = _lookup(name, env, prefix)
        if not found:
            raise PlanError(f"{where}: ${{{name}}} is not defined in the env file", key=where)
        return "" if v is None else str(v)

    return _PLAN_VAR.sub(sub, value)


# ---------------------------------------------------------------------------- loading

def _line_of(text: str, needle: str | re.Pattern) -> int | None:
    # a pattern for keys too short to search as text (`k` of [tolerance])
    for no, line in enumerate(text.splitlines(), 1):
        if (needle.search(line) if isinstance(needle, re.Pattern) else needle in line):
            return no
    return None


def _err(text: str, needle: str | re.Pattern, msg: str, **data: Any) -> PlanError:
    no = _line_of(text, needle)
    at = f"line {no}: " if no else ""
    return PlanError(f"plan {at}{msg}", line=no, **data)


def _not_utf8(e: UnicodeDecodeError) -> str:
    """Where a file stops being UTF-8, as a user can find it in an editor."""
    line = e.object.count(b"\n", 0, e.start) + 1
    col = e.start - (e.object.rfind(b"\n", 0, e.start) + 1) + 1
    hint = " (UTF-16? save it as UTF-8)" if e.object[:2] in (b"\xff\xfe", b"\xfe\xff") else ""
    return f"line {line}: not UTF-8 text (byte 0x{e.object[e.start]:02x} at column {col}){hint}"


def _what(v: Any) -> str:
    """A TOML value as an error message shows it: scalars as written, containers by kind."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float, str)):
        return repr(v)
    if isinstance(v, dict):
        return "a table"
    if isinstance(v, list):
        return "an array"
    if v is None:
        return "nothing (an empty ${NAME}?)"
    return "a date/time"


def _table(value: Any, text: str, needle: str, where: str) -> dict:
    # `config = 5` or `pattern = [1]` must be a plan error, not an AttributeError in .items()
    if not isinstance(value, dict):
        raise _err(text, needle, f"{where}: expected a table, got {_what(value)}", key=needle)
    return value


def _string(value: Any, text: str, needle: str, where: str) -> str | None:
    if value is not None and not isinstance(value, str):
        raise _err(text, needle, f"{where}: expected a string, got {_what(value)}", key=needle)
    return value


def _number(value: Any, text: str, needle: str | re.Pattern, where: str, key: str = "") -> float:
    """A finite number >= 0; a string holding one is taken as before (`k = "3"`)."""
    f = None
    if not isinstance(value, (bool, dict, list)):
        try:
            f = float(value)
        except (TypeError, ValueError):
            pass
    if f is None or not math.isfinite(f) or f < 0:
        raise _err(text, needle, f"{where}: expected a number ≥ 0, got {_what(value)}",
                   key=key or needle)
    return f


def _flag(value: Any, text: str, needle: str, where: str) -> bool:
    # bool("false") is True: a quoted flag must not silently mean the opposite.  1/0 stay
    # accepted because env files write flags that way (`hard = "${STRICT}"` with STRICT=1).
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    raise _err(text, needle, f"{where}: expected true or false, got {_what(value)}", key=needle)


def warning_whats() -> set[str]:
    """What the built-in warnings warn of (their detail "what"): a plan's [events] may bound
    each by that name, as check counts them (compare.check)."""
    from bootlog import patterns

    out = {"arg_overridden"}  # (made by boots.py from two config lines, not by one pattern)
    for p in patterns.CATALOGUE:
        if p.name == "warning":
            out.update(want["what"] for _, want in p.samples if isinstance(want.get("what"), str))
    return out


def known_figures() -> set[str]:
    """Names a plan may bound: metrics.md vocabulary plus whatever the catalogue adds."""
    names = set(CAPACITY_METRICS) | set(TIMING_METRICS) | set(RUNTIME_METRICS)
    try:  # the catalogue may define newer figures; it is optional for plan loading
        from bootlog import patterns as _patterns

        names |= {p.name for p in getattr(_patterns, "CATALOGUE", ()) if getattr(p, "kind", "") == "metric"}
    except Exception:  # noqa: BLE001 - a broken sibling module must not make plans unloadable
        pass
    return names


def _expect(name: str, spec: Any, text: str, section: str) -> Expect:
    import math

    bounds = [spec] if not isinstance(spec, dict) else [spec.get(op) for op in _BOUND_KEYS]
    if any(isinstance(b, float) and not math.isfinite(b) for b in bounds):
        # (TOML has nan and inf: a bound no figure can meet, or one every figure meets)
        raise _err(text, name, f"[{section}.{name}]: a bound must be a finite number", key=name)
    if section == "events" and any(isinstance(b, (int, float)) and not isinstance(b, bool) and b < 0
                                   for b in bounds):
        raise _err(text, name, f"[{section}.{name}]: an event count cannot be negative", key=name)
    if isinstance(spec, (int, float)) and not isinstance(spec, bool):
        return Expect(name=name, max=spec) if section == "events" else Expect(name=name, eq=spec)
    if not isinstance(spec, dict):
        raise _err(text, name, f"[{section}] {name}: expected a table like {{ min = … }}", key=name)
    unknown = set(spec) - _METRIC_KEYS
    if unknown:
        raise _err(text, name, f"[{section}.{name}]: unknown key(s) {', '.join(sorted(unknown))} "
                   f"(use {', '.join(sorted(_METRIC_KEYS))})", key=name)
    if not any(k in spec for k in _BOUND_KEYS):
        raise _err(text, name, f"[{section}.{name}]: no bound (min, max, eq or approx)", key=name)
    for op in _BOUND_KEYS:
        b = spec.get(op)
        if isinstance(b, bool) or not isinstance(b, (int, float, str, type(None))):
            raise _err(text, name, f"[{section}.{name}] {op}: expected a number or a figure/config "
                       f"name, got {_what(b)}", key=name)
    rank = spec.get("rank")
    if rank is not None and not ((isinstance(rank, int) and not isinstance(rank, bool))
                                 or rank in ("each", "all", "any")):
        raise _err(text, name, f"[{section}.{name}] rank: an integer or \"each\"", key=name)
    # (None: a ${NAME} the env file leaves empty, which means unset: the default)
    tol = 0.01 if spec.get("tol") is None else _number(spec["tol"], text, name, f"[{section}.{name}] tol")
    hard = spec.get("hard") is not None and _flag(spec["hard"], text, name, f"[{section}.{name}] hard")
    return Expect(name=name, min=spec.get("min"), max=spec.get("max"), eq=spec.get("eq"),
                  approx=spec.get("approx"), tol=tol, rank=rank, hard=hard)


def _sample(s: Any, text: str, name: str) -> tuple[str, float | None]:
    """One entry of a pattern's samples: a line, or { line = "…", value = N }."""
    if isinstance(s, str):
        return s, None
    where = f"[[pattern]] {name} samples"
    s = _table(s, text, name, where)
    line = s.get("line")
    if not isinstance(line, str):
        raise _err(text, name, f"{where}: each needs line = \"…\" (a string), got {_what(line)}",
                   key=name)
    want = s.get("value")
    if want is not None and (isinstance(want, bool) or not isinstance(want, (int, float))):
        raise _err(text, name, f"{where}: value must be a number, got {_what(want)}", key=name)
    return line, want


def compile_pattern(spec: dict, text: str = "") -> UserPattern:
    """One [[pattern]] table -> UserPattern; its samples must match and give their values."""
    name = spec.get("name")
    if not isinstance(name, str) or not re.fullmatch(r"[a-z_][a-z0-9_]*", name):
        raise _err(text, "[[pattern]]", f"[[pattern]] name {name!r}: lowercase_with_underscores",
                   key=str(name))
    src = spec.get("regex")
    if not isinstance(src, str) or not src:
        raise _err(text, name, f"[[pattern]] {name}: missing regex", key=name)
    try:
        rx = _regex.compile(src)
    except _regex.error as e:
        raise _err(text, name, f"[[pattern]] {name}: regex does not compile: {e}", key=name)
    unit, event, literal, kind = (_string(spec.get(k), text, name, f"[[pattern]] {name} {k}")
                                  for k in ("unit", "event", "literal", "kind"))
    if kind not in (None, "capacity", "timing"):
        raise _err(text, name, f"[[pattern]] {name} kind {kind!r}: capacity or timing", key=name)
    if event is None and "value" not in rx.groupindex:
        raise _err(text, name, f"[[pattern]] {name}: a figure pattern needs a named group "
                   "(?P<value>…); set event = \"kind\" for an event pattern", key=name)
    up = UserPattern(name=name, regex=rx, source=src, unit=unit, event=event, literal=literal,
                     kind=kind)
    samples = spec.get("samples") or []
    if not samples:
        raise _err(text, name, f"[[pattern]] {name}: give at least one sample line", key=name)
    if not isinstance(samples, list):  # a bare string would be taken apart character by character
        raise _err(text, name, f"[[pattern]] {name} samples: expected an array, got "
                   f"{_what(samples)}", key=name)
    for s in samples:
        line, want = _sample(s, text, name)
        try:
            hits = user_pattern_hits_one(up, line)
        except TimeoutError:
            raise _err(text, name, f"[[pattern]] {name}: regex timed out on its sample", key=name)
        if not hits:
            raise _err(text, name, f"[[pattern]] {name}: does not match its sample {line!r}",
                       key=name)
        got = hits[0]
        if want is not None and isinstance(got, Metric) and abs(got.value - float(want)) > 1e-9 * max(1.0, abs(float(want))):
            raise _err(text, name, f"[[pattern]] {name}: sample {line!r} gives {got.value}, "
                       f"expected {want}", key=name)
    return up


def load_plan(path: str | Path) -> Plan:
    """Read a plan TOML (and its env file); PlanError names the line or key that is wrong."""
    p = Path(path)
    try:
        text = _read_small(p, "plan")
    except OSError as e:
        raise PlanError(f"plan {p}: {e.strerror or e}", path=str(p)) from e
    except UnicodeDecodeError as e:  # TOML is UTF-8 by definition
        raise PlanError(f"plan {p}: {_not_utf8(e)}", path=str(p)) from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise PlanError(f"plan {p}: bad TOML: {e}", path=str(p)) from e
    except RecursionError:  # tomllib recurses once per nested array/table
        raise PlanError(f"plan {p}: bad TOML: arrays or tables nested too deeply", path=str(p)) from None
    try:
        return _build(data, text, p)
    except PlanError as e:
        msg, data_ = str(e), dict(e.data)
        if data_.get("line") is None and data_.get("key"):
            # name the line for errors found after parsing (an undefined ${NAME}, ...)
            no = _line_of(text, str(data_["key"]).split(".")[-1])
            if no:
                data_["line"] = no
                msg = f"plan line {no}: {msg}"
        raise PlanError(f"{p.name}: {msg}", path=str(p), **{k: v for k, v in data_.items() if k != "path"}) from None


# What each top-level key holds: a wrong kind is a plan error here, not a crash further on.
_TOP_TYPES: dict[str, type] = {
    "env_file": str, "env_prefix": str, "name": str, "description": str, "config": dict,
    "metrics": dict, "events": dict, "boot": dict, "tolerance": dict, "pattern": list,
}


def _build(data: dict, text: str, p: Path) -> Plan:
    for k, v in data.items():
        if k not in _TOP_TYPES:
            raise _err(text, k, f"unknown top-level key {k!r}", key=k)
        if _TOP_TYPES[k] is list:
            if not isinstance(v, list):
                raise _err(text, k, f"{k}: expected [[{k}]] tables, got {_what(v)}", key=k)
            for item in v:
                _table(item, text, k, f"[[{k}]] entry")
        elif _TOP_TYPES[k] is str:
            _string(v, text, k, k)
        else:
            _table(v, text, k, k)
    env: dict[str, Any] = {}
    if data.get("env_file"):
        env = load_env((p.parent / data["env_file"]).resolve())
    prefix = data.get("env_prefix", "")
    plan = Plan(path=p, env=env, env_prefix=prefix)

    tol = data.get("tolerance", {})
    for key in ("k", "min_pct"):
        if tol.get(key) is not None:
            # `k = …`, `{ k = … }` or `tolerance.k = …`: a bare "k" would match any line
            at = re.compile(rf"(^\s*|[{{,.]\s*){key}\s*=")
            setattr(plan, key, _number(tol[key], text, at, f"[tolerance] {key}", f"tolerance.{key}"))

    for spec in data.get("pattern", []):
        # the regex is taken verbatim: `$` and `{…}` belong to the regex, not to the env file
        fields = {k: (v if k == "regex" else expand(v, env, prefix, f"pattern.{k}"))
                  for k, v in spec.items()}
        plan.patterns.append(compile_pattern(fields, text))

    figures = known_figures() | plan.user_names
    user_events = {up.event for up in plan.patterns if up.event}

    for key, value in data.get("config", {}).items():
        plan.config[key] = expand(value, env, prefix, f"config.{key}")

    for name, spec in data.get("metrics", {}).items():
        if name not in figures:
            raise _err(text, name, f"[metrics.{name}]: unknown figure {name!r} (not in the "
                       "metrics vocabulary nor a [[pattern]] name)", key=name)
        plan.metrics[name] = _expect(name, expand(spec, env, prefix, f"metrics.{name}"), text, "metrics")

    whats = warning_whats()
    for kind, spec in data.get("events", {}).items():
        if kind not in EVENT_KINDS and kind not in user_events and kind not in whats:
            raise _err(text, kind, f"[events]: unknown event kind {kind!r} (known: "
                       f"{', '.join(EVENT_KINDS)}, or a warning's what: {', '.join(sorted(whats))})", key=kind)
        plan.events[kind] = _expect(kind, expand(spec, env, prefix, f"events.{kind}"), text, "events")

    for key, value in data.get("boot", {}).items():
        value = expand(value, env, prefix, f"boot.{key}")
        if key == "status":
            if value not in ("ready", "failed", "incomplete"):
                raise _err(text, "status", f"[boot] status {value!r}: ready, failed or incomplete",
                           key=key)
            plan.boot["status"] = value
        elif key == "compile_cache":
            if value not in ("warm", "cold", "any"):
                raise _err(text, "compile_cache", f"[boot] compile_cache {value!r}: warm, cold "
                           "or any", key=key)
            plan.boot["compile_cache"] = value
        elif key == "hard":
            plan.boot["hard"] = value is not None and _flag(value, text, "hard", "[boot] hard")
        elif key in figures:
            plan.boot_metrics[key] = _expect(key, value, text, "boot")
        else:
            raise _err(text, key, f"[boot]: unknown key {key!r} (status, compile_cache, hard, "
                       "or a figure such as boot_to_ready_s)", key=key)
    _check_bound_refs(plan, figures, text)
    return plan


def _check_bound_refs(plan: Plan, figures: set[str], text: str) -> None:
    # A bound naming a figure must name a real one; config keys are open-ended, so only a
    # string that looks like neither a number nor a plausible name is rejected.
    for ex in [*plan.metrics.values(), *plan.boot_metrics.values(), *plan.events.values()]:
        for b in (ex.min, ex.max, ex.eq, ex.approx):
            if isinstance(b, str) and not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_.]*", b):
                raise _err(text, ex.name, f"{ex.name}: bound {b!r} is neither a number nor a "
                           "figure/config name", key=ex.name)


# ---------------------------------------------------------------------------- user patterns

def user_pattern_hits_one(up: UserPattern, msg: str, *, line: int | None = None,
                          rank: int | None = None, ts: Any = None) -> list[Metric | Event]:
    """Run one user pattern over one message; raises TimeoutError if the regex runs away."""
    if up.literal and up.literal not in msg:
        return []
    m = up.regex.search(msg, timeout=_PATTERN_TIMEOUT_S)
    if not m:
        return []
    if up.event:
        detail = {k: v for k, v in m.groupdict().items() if v is not None}
        return [Event(kind=up.event, line=line, rank=rank, ts=ts, message=msg.strip(),
                      detail=detail)]
    raw = (m.group("value") or "").replace(",", "")
    try:
        value = float(raw)
    except ValueError:
        return []
    return [Metric(name=up.name, value=value, unit=up.unit or "", rank=rank, line=line, ts=ts,
                   pattern=f"user:{up.name}")]


def user_pattern_hits(plan: Plan | None, text: str) -> list[Metric | Event]:
    """Every user-pattern figure/event in `text` (one line or many; lines numbered from 1)."""
    if plan is None or not plan.patterns:
        return []
    out: list[Metric | Event] = []
    lines = text.splitlines() or [text]
    for no, line in enumerate(lines, 1):
        if not any(up.literal is None or up.literal in line for up in plan.patterns):
            continue
        msg, rank = _msg_rank(line)
        for up in plan.patterns:
            # one line in, no line number out: the caller knows where the line was
            out.extend(_guarded_hits(up, msg, line=no if len(lines) > 1 else None, rank=rank))
    return out


def _guarded_hits(up: UserPattern, msg: str, **where: Any) -> list[Metric | Event]:
    """user_pattern_hits_one at ingest: a runaway search loses its line and the ingest goes on;
    the third drops the pattern (a 0.25 s search on every matching line of a big log is hours)
    and says so once on stderr."""
    if up.timeouts >= _PATTERN_GIVE_UP:
        return []
    try:
        return user_pattern_hits_one(up, msg, **where)
    except TimeoutError:
        pass
    up.timeouts += 1
    if up.timeouts == _PATTERN_GIVE_UP:
        import sys

        print(f"bootlog: warning: plan pattern {up.name!r} ran past {_PATTERN_TIMEOUT_S:g} s on "
              f"{_PATTERN_GIVE_UP} lines; it is skipped for the rest of this run (its regex "
              "backtracks catastrophically: simplify it)", file=sys.stderr)
    return []


def _msg_rank(text: str) -> tuple[str, int | None]:
    """The message part and TP rank of a raw line, so a user figure printed once per rank is
    stored once per rank like a catalogue figure."""
    try:
        from bootlog.vline import parse_line

        v = parse_line(Record(lineno=0, text=text))
        return (v.msg or text), v.rank
    except Exception:  # noqa: BLE001 - without the line parser the whole text is searched
        return text, None


def apply_user_patterns(plan: Plan | None, lines: Iterable[Any]) -> list[Metric | Event]:
    """User patterns over parsed lines (VLine/Record, or (lineno, text) pairs); rows carry the
    line's number, rank and time, exactly like catalogue hits."""
    if plan is None or not plan.patterns:
        return []
    out: list[Metric | Event] = []
    for item in lines:
        if isinstance(item, tuple):
            lineno, msg, rank, ts = item[0], item[1], None, None
        else:
            lineno, ts = getattr(item, "lineno", None), getattr(item, "ts", None)
            if hasattr(item, "msg"):  # a VLine: prefix already parsed
                msg, rank = item.msg or item.text, item.rank
            else:  # a Record: parse the prefix only when some pattern could match
                text = getattr(item, "text", "")
                if not any(up.literal is None or up.literal in text for up in plan.patterns):
                    continue
                msg, rank = _msg_rank(text)
        for up in plan.patterns:
            out.extend(_guarded_hits(up, msg, line=lineno, rank=rank, ts=ts))
    return out
