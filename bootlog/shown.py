"""Typed records after the store: a stored boot as `show --json` gives it, and the findings of
`diff --json` / `check --json`, each a dataclass whose fields are the contract's keys in the
contract's order (reference/cli-contract.md).  `to_json()` is the only place the JSON shape is
spelled; a misspelt field is an AttributeError, where a dict's .get("…") read as a silent None.

records.py holds what the parser makes before the store (Boot, Metric, Event); these are what
the store gives back, with the ids, sources and times it added.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any


@dataclass(slots=True)
class BootRow:
    """The `boot` object of show --json (and one element of list --json)."""

    id: int
    status: str
    failure: str | None = None
    failure_message: str | None = None
    vllm_version: str | None = None
    engine: str | None = None
    model: str | None = None
    container: str | None = None
    host: str | None = None
    source: str | None = None
    started_at: Any = None  # ISO 8601 text as stored (the store's own time type on PostgreSQL)
    ready_at: Any = None
    ended_at: Any = None
    first_line: int | None = None
    last_line: int | None = None
    ended: str | None = None  # clean_stop | died | failed | log_ends
    kv_cache_sized_by: str | None = None  # explicit | measured

    def to_json(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in BOOT_KEYS}


BOOT_KEYS = tuple(f.name for f in fields(BootRow))


@dataclass(slots=True)
class Figure:
    """One extracted value (a row of show --json's `metrics`)."""

    name: str
    value: int | float
    unit: str | None = None
    rank: int | None = None
    line: int | None = None

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "value": self.value, "unit": self.unit, "rank": self.rank, "line": self.line}


@dataclass(slots=True)
class EventRow:
    """One event of a stored boot; `detail` is the event kind's own free-form facts."""

    kind: str
    rank: int | None = None
    line: int | None = None
    ts: Any = None
    message: str | None = None
    detail: dict[str, Any] | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "rank": self.rank,
            "line": self.line,
            "ts": self.ts,
            "message": self.message,
            "detail": self.detail,
        }

    @classmethod
    def of(cls, e: EventRow | dict[str, Any]) -> EventRow:
        """A show --json event as a record (itself when it is one already)."""
        if isinstance(e, EventRow):
            return e
        return cls(e["kind"], e.get("rank"), e.get("line"), e.get("ts"), e.get("message"), e.get("detail"))

    @property
    def facts(self) -> dict[str, Any]:
        """`detail`, {} when there is none."""
        return self.detail if isinstance(self.detail, dict) else {}


@dataclass(slots=True)
class Deploy:
    """What the container engine said of a boot's run (measure/deploy.py's document), read by name.  The
    document is kept as stored, so show --json gives back exactly what was written."""

    doc: dict[str, Any]

    def get(self, key: str) -> Any:
        return self.doc.get(key)

    @property
    def image(self) -> str | None:
        return self.doc.get("image")

    @property
    def image_digest(self) -> str | None:
        return self.doc.get("image_digest")

    @property
    def command(self) -> list | None:
        return self.doc.get("command")

    @property
    def env(self) -> dict[str, Any]:
        env = self.doc.get("env")
        return env if isinstance(env, dict) else {}

    @property
    def restart_count(self) -> int | None:
        return self.doc.get("restart_count")

    def to_json(self) -> dict[str, Any]:
        return self.doc


# the keys of show --json in their order; later stages add their own after them (timeline;
# plan_lines and plan_not_numbers of run/reread.py)
SHOW_KEYS = ("boot", "metrics", "config", "events", "runtime", "deploy")


@dataclass(slots=True)
class Shown:
    """One stored boot, all it knows: the `show --json` object."""

    boot: BootRow
    metrics: list[Figure] = field(default_factory=list)
    config: dict[str, Any] = field(default_factory=dict)  # values typed as JSON (store/reads.typed_config_value)
    events: list[EventRow] = field(default_factory=list)
    runtime: dict[str, Any] | None = None  # {"stats_lines", "last", "max"}; None when not read
    deploy: Deploy | None = None
    extra: dict[str, Any] = field(default_factory=dict)  # what a later stage added, under its own key

    def to_json(self) -> dict[str, Any]:
        return {
            "boot": self.boot.to_json(),
            "metrics": [m.to_json() for m in self.metrics],
            "config": self.config,
            "events": [e.to_json() for e in self.events],
            "runtime": self.runtime,
            "deploy": None if self.deploy is None else self.deploy.to_json(),
            **self.extra,
        }

    @classmethod
    def of(cls, doc: Shown | dict[str, Any]) -> Shown:
        """A show --json object as a record (itself when it is one already).  A hand-built or
        partial object (a test's, a plan check's) may lack keys: they read as empty."""
        if isinstance(doc, Shown):
            return doc
        b = doc.get("boot") or {}
        dep = doc.get("deploy")
        return cls(
            boot=BootRow(**{k: b.get(k) for k in BOOT_KEYS}),
            metrics=[
                Figure(m["name"], m.get("value"), m.get("unit"), m.get("rank"), m.get("line"))
                for m in doc.get("metrics") or []
            ],
            config=doc.get("config") or {},
            events=[EventRow.of(e) for e in doc.get("events") or []],
            runtime=doc.get("runtime"),
            deploy=Deploy(dep) if isinstance(dep, dict) else None,
            extra={k: v for k, v in doc.items() if k not in SHOW_KEYS},
        )


@dataclass(slots=True)
class Finding:
    """One row of a diff or check.  `old` is the earlier boot's value, or for a check the plan's
    bound; `expect` (a check's expectation as text, "≥ 400,700") only when there is one."""

    key: str
    section: str  # deploy | config | metric | event
    rank: int | None
    old: Any
    new: Any
    delta: int | float | None
    pct: float | None
    verdict: str  # same | changed | drift | violation | new | gone | insufficient_history
    why: str = ""
    expect: str | None = None

    def to_json(self) -> dict[str, Any]:
        out = {
            "key": self.key,
            "section": self.section,
            "rank": self.rank,
            "old": self.old,
            "new": self.new,
            "delta": self.delta,
            "pct": self.pct,
            "verdict": self.verdict,
            "why": self.why,
        }
        if self.expect is not None:
            out["expect"] = self.expect
        return out
