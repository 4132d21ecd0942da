"""Boots as OpenMetrics gauges for Prometheus / Grafana (issue 25 "Prometheus / Grafana").

`render(boots)` turns the latest boot of each host/container (the caller picks them), in the
`show --json` shape, into OpenMetrics text for node_exporter's textfile collector; `write(path,
text)` puts it in place so the collector never reads half a file.

Families (every one a gauge, so the classic text parser node_exporter uses reads it too):

    bootlog_<metric>{host,container[,rank]}          every numeric figure of the boot
    bootlog_boot_info{host,container,vllm_version,engine,model,status,failure} 1
    bootlog_boot_ready{host,container}               1 when "Application startup complete." was seen
    bootlog_boot_started_timestamp_seconds{...}      the boot's first line, Unix time
    bootlog_boot_id{host,container}                  the boot's id (for `bootlog show ID`)
    bootlog_events{host,container,kind}              events of the boot per kind (0 for a known
                                                     kind it does not have, so alerts see 0,
                                                     not an absent series)
    bootlog_verdict{host,container}                  the boot's verdict as the hook gives it
                                                     (run.judged.judge_stored: its own faults, the
                                                     plan given to export/hook, the diff against
                                                     the boot before it): 0 OK, 1 drift,
                                                     2 violation, 3 failed
    bootlog_boot_died_serving{host,container}        1 when it was ready and its engine then died

Choices:
* Metric names stay bootlog's vocabulary (docs/figures.md; docs/cli.md says `bootlog_<metric>`),
  so `_s`/`_gib` are not rewritten to `_seconds`/`_bytes`.  A name is sanitised to
  [a-zA-Z0-9_] (colons are for recording rules).  `# UNIT` is written only when the name ends
  in `_<unit>` (OpenMetrics requires that suffix): `_tokens`, `_blocks`, `_s`, `_gib`; the
  unit is in every HELP.  A figure whose name would be one of the boot families is skipped.
* Labels: `host` and `container` (the source's file name when the boot has no container);
  `rank` only when the figure has one.  A label with no value is left out, never written as
  "": OpenMetrics and Prometheus treat an empty label as an absent one, and node_exporter's
  textfile collector fills missing label names of a family with "" itself.
* Values: NaN, +-Inf, None, booleans and text are skipped (NaN in a gauge reads as "no data" in
  Grafana but breaks `max()`; a missing figure should simply be absent).  One figure printed
  several times by the same rank keeps the last value in log order (the boot ended with it).
  Two boots with the same host/container: the later one in the list wins.
* Log text is hostile: a label value is shown on one line by bootlog's one escaping rule
  (safe.term: ESC as `\\x1b`, a bidi override as `\\u202e`, a newline as `\\n`; as `show` and
  `--json` show them) and then escaped as OpenMetrics says (`\\`, `\"`), so `cat file.prom` cannot
  drive a terminal and a parser reads back the visible form; values are cut to 1024 characters.
  HELP text is ours, never the log's.
* No timestamps on samples: node_exporter refuses a textfile that has them.
* Naive started_at (plain vLLM logs print no zone) is read as the exporting machine's local
  time, as datetime.timestamp() does; the textfile collector runs on the same host.
"""

from __future__ import annotations

import math
import os
import re
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Iterable

from bootlog.figures import FIGURES
from bootlog.safe import term

PREFIX = "bootlog_"
MAX_LABEL = 1024

# docs/figures.md's event kinds: each gets a sample (0 when absent) so alerts compare with 0
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
    "crash_loop",
    "gpu_fault",
)

# HELP text of the figures bootlog.figures lists; others get a generic one
HELP = {f.name: f.help for f in FIGURES if f.help}

# the families made from boot fields; a figure sanitised to one of these names is skipped
BOOT_FAMILIES = {
    "bootlog_boot_info": ("Boot identity (value 1): vLLM version, engine, model, status, failure", None),
    "bootlog_boot_ready": ("1 if the boot reached Application startup complete, else 0", None),
    "bootlog_boot_started_timestamp_seconds": ("Time of the boot's first line, Unix seconds", "seconds"),
    "bootlog_boot_id": ("bootlog's id of the boot (bootlog show ID)", None),
    "bootlog_events": ("Events of the boot, per kind", None),
    "bootlog_verdict": (
        "The latest boot's verdict, as the hook gives it (its own faults, the plan, the diff "
        "against the boot before it): 0 OK, 1 drift, 2 violation, 3 failed",
        None,
    ),
    "bootlog_boot_died_serving": ("1 if the boot was ready and its engine then died serving, else 0", None),
}

_BAD_NAME = re.compile(r"[^a-zA-Z0-9_]")
# control characters other than \n (escaped instead), and lone surrogates
_UNIT_TEXT = re.compile(r"^[A-Za-z0-9/%._-]{1,16}$")

Labels = tuple[tuple[str, str], ...]


@dataclass
class _Family:
    name: str
    help: str
    unit: str | None = None
    samples: dict[Labels, float] = field(default_factory=dict)  # insertion order = output order

    def lines(self) -> list[str]:
        out = [f"# HELP {self.name} {_escape_help(self.help)}", f"# TYPE {self.name} gauge"]
        if self.unit:
            out.append(f"# UNIT {self.name} {self.unit}")
        out += [f"{self.name}{_labels(labels)} {_number(v)}" for labels, v in self.samples.items()]
        return out


def render(boots: list[dict], verdicts: dict[int, Any] | None = None) -> str:
    """OpenMetrics text of `boots` (show --json objects: {"boot", "metrics", "events", ...}),
    ending with "# EOF".  `verdicts`: boot id -> verdict.Verdict as the hook gives it (plan,
    diff: run.judged.judge_stored); a boot not in it gets its own verdict (verdict.judge).  See the
    module docstring for families, labels and what is skipped."""
    families: dict[str, _Family] = {name: _Family(name, text, unit) for name, (text, unit) in BOOT_FAMILIES.items()}
    for doc in _one_per_identity(boots):
        ident = _identity(doc.get("boot") or {})
        _add_boot(families, doc.get("boot") or {}, ident)
        _add_verdict(families, doc, ident, (verdicts or {}).get((doc.get("boot") or {}).get("id")))
        _add_events(families, doc.get("events") or [], ident)
        _add_metrics(families, doc.get("metrics") or [], ident)
    boot_part = [families[name] for name in BOOT_FAMILIES]
    metric_part = sorted((f for n, f in families.items() if n not in BOOT_FAMILIES), key=lambda f: f.name)
    lines = [line for fam in boot_part + metric_part if fam.samples for line in fam.lines()]
    return "\n".join(lines + ["# EOF"]) + "\n"


def write(path: str | os.PathLike, text: str) -> None:
    """Put `text` at `path` whole (output.writing: a temp file in the same directory, fsynced,
    renamed over `path`); a new file gets mode 0644 whatever the umask (the collector may run as
    another user).  The temp name ends in .tmp, which the textfile collector (*.prom) never reads."""
    from bootlog.render.output import write_whole

    write_whole(path, text, new_mode=0o644)


# --- boots -> samples ---------------------------------------------------------------------


def _one_per_identity(boots: Iterable[dict]) -> list[dict]:
    """One boot per label set: the later one in the list wins (two boots must not write the
    same series twice)."""
    by_ident: dict[Labels, dict] = {}
    for doc in boots:
        by_ident[_identity(doc.get("boot") or {})] = doc
    return list(by_ident.values())


def _identity(boot: dict) -> Labels:
    container = boot.get("container") or _file_name(boot.get("source"))
    return _clean_labels((("host", boot.get("host")), ("container", container)))


def _file_name(source: Any) -> str | None:
    if not source:
        return None
    text = str(source).rstrip("/")
    return os.path.basename(text) or text


def _add_boot(families: dict[str, _Family], boot: dict, ident: Labels) -> None:
    info = _clean_labels(
        (
            ("vllm_version", boot.get("vllm_version")),
            ("engine", boot.get("engine")),
            ("model", boot.get("model")),
            ("status", boot.get("status")),
            ("failure", boot.get("failure")),
        )
    )
    families["bootlog_boot_info"].samples[ident + info] = 1
    if boot.get("status"):
        families["bootlog_boot_ready"].samples[ident] = 1 if boot["status"] == "ready" else 0
    started = _unix(boot.get("started_at"))
    if started is not None:
        families["bootlog_boot_started_timestamp_seconds"].samples[ident] = started
    if _is_number(boot.get("id")):
        families["bootlog_boot_id"].samples[ident] = boot["id"]


def _add_verdict(families: dict[str, _Family], doc: dict, ident: Labels, given: Any = None) -> None:
    from bootlog.judge import verdict

    boot = doc.get("boot") or {}
    if not boot.get("status"):
        return
    families["bootlog_verdict"].samples[ident] = verdict.gauge(given if given is not None else verdict.judge(doc))
    families["bootlog_boot_died_serving"].samples[ident] = int(boot["status"] == "ready" and bool(boot.get("failure")))


def _add_events(families: dict[str, _Family], events: list[dict], ident: Labels) -> None:
    counts = dict.fromkeys(EVENT_KINDS, 0)
    for e in events:
        kind = e.get("kind")
        if kind:
            counts[str(kind)] = counts.get(str(kind), 0) + 1
    for kind, n in counts.items():
        families["bootlog_events"].samples[ident + _clean_labels((("kind", kind),))] = n


def _add_metrics(families: dict[str, _Family], metrics: list[dict], ident: Labels) -> None:
    for m in metrics:
        value, name = m.get("value"), m.get("name")
        if not name or not _is_number(value):
            continue
        fam_name = _family_name(str(name))
        if fam_name in BOOT_FAMILIES:
            continue
        fam = families.get(fam_name)
        if fam is None:
            fam = families[fam_name] = _new_family(fam_name, str(name), m.get("unit"))
        rank = m.get("rank")
        extra = _clean_labels((("rank", rank if isinstance(rank, int) and not isinstance(rank, bool) else None),))
        fam.samples[ident + extra] = value  # the same series again: the later line wins


def _new_family(fam_name: str, name: str, unit: Any) -> _Family:
    unit_text = str(unit) if unit is not None and _UNIT_TEXT.match(str(unit)) else None
    help_text = HELP.get(name, f"bootlog figure {fam_name[len(PREFIX) :]}")
    if unit_text:
        help_text += f" [{unit_text}]"
    suffix = _BAD_NAME.sub("_", unit_text).lower() if unit_text else None
    om_unit = suffix if suffix and fam_name.endswith("_" + suffix) else None
    return _Family(fam_name, help_text + ", latest boot", om_unit)


def _family_name(name: str) -> str:
    return PREFIX + _BAD_NAME.sub("_", name)


def _clean_labels(pairs: Iterable[tuple[str, Any]]) -> Labels:
    return tuple((k, str(v)) for k, v in pairs if v is not None and str(v) != "")


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def _unix(ts: Any) -> float | None:
    if isinstance(ts, datetime):
        return ts.timestamp()
    if not isinstance(ts, str) or not ts:
        return None
    text = ts[:-1] + "+00:00" if ts.endswith(("Z", "z")) else ts
    try:
        return datetime.fromisoformat(text).timestamp()
    except ValueError:
        return None


# --- text ---------------------------------------------------------------------------------


def _labels(labels: Labels) -> str:
    if not labels:
        return ""
    return "{" + ",".join(f'{k}="{_escape_label(v)}"' for k, v in labels) + "}"


def _escape_label(value: str) -> str:
    """A label value on one line, shown escaped as everywhere else (safe.term: `\\x1b`,
    `\\u202e`, `\\n`), then OpenMetrics' own escaping; bounded length."""
    text = term(value[:MAX_LABEL], one_line=True)
    return text.replace("\\", "\\\\").replace('"', '\\"')


def _escape_help(text: str) -> str:
    # (HELP is ours; escaped anyway, and quotes dropped: the classic text format has no \")
    return term(text, one_line=True).replace("\\", "\\\\").replace('"', "'")


def _number(v: float) -> str:
    if float(v).is_integer() and abs(v) < 2**53:
        return str(int(v))
    return repr(float(v))
