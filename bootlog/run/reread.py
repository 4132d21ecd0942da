"""A plan's own patterns ([[pattern]]) on a boot stored without them: the boot's lines are read
again from its source (the file, or the container's log) and parsed as ingest parses them, with
the plan; nothing is stored.

`check`/`diff --plan` on a boot ingested without `--plan` would otherwise judge figures and
events that were never looked for: a `max = 0` bound on a pattern's event passed on a boot
whose lines no pattern ever read.  Where the lines cannot be read again (the file is gone or
was rewritten, the container was removed, the boot came from stdin or from another host), the
show dict says so in `"plan_lines"` and check reports the plan's figures and events as `?`.
"""

from __future__ import annotations

from datetime import timezone, tzinfo
from typing import Any

from bootlog.errors import BootlogError
from bootlog.records import Metric
from bootlog.render.logclock import UTC, Clock, clock_of, offset_name, stamps_offset, unknown
from bootlog.store.reads import boot_source, boot_sources, has_user_rows


STORED = "stored with the plan"


def stored_file(kind: str, name: str, host: str | None, *, verified: bool = False) -> str:
    """The path of a stored file source as this machine can open it again; BootlogError saying
    why not (read on another host, from stdin, or stored relative by an older bootlog: then
    which file it was depends on a directory nobody knows, and no directory is guessed, so the
    answer is the same from every working directory).  `verified`: the caller checks that the
    file still holds the boot (its fingerprint), so a file labelled with another host is read
    where it is found (`ingest --host h1` may label a file of this machine)."""
    import os

    from bootlog.run.ingest import default_host
    from bootlog.store.write import relative_source

    if host and host != default_host() and not (verified and os.path.isfile(name)):
        raise BootlogError(f"it was read on host {host}")
    if kind == "stdin" or name == "-":
        raise BootlogError("it was read from stdin, whose lines were not kept")
    if relative_source(kind, name):
        raise BootlogError(
            f"it was stored as the relative path {name} by an older bootlog; ingest the file again to store where it is"
        )
    return name


def open_stored(kind: str, name: str, host: str | None):
    """The stored source (a file, a container's log) opened again on this machine, or
    BootlogError saying why it cannot be (stored_file)."""
    from bootlog.run.ingest import default_host
    from bootlog.read.sources import container_source, open_source

    if kind == "container":
        if host and host != default_host():
            raise BootlogError(f"it was read on host {host}")
        engine, _, container = name.partition(":")
        return container_source(container, engine=engine or "podman")
    return open_source(stored_file(kind, name, host, verified=True))  # (the caller checks the fingerprint)


def with_plan_patterns(store, show: dict, plan) -> dict:
    """`show` with the plan's pattern figures and events of its boot (module docstring)."""
    if plan is None or not plan.patterns or show.get("plan_lines"):
        return show
    bid = show["boot"]["id"]
    if has_user_rows(store, bid, sorted({up.event for up in plan.patterns if up.event})):
        return {**show, "plan_lines": STORED}  # read with the plan when it was stored
    from bootlog.run.ingest import read_boots

    name, kind, host, fingerprint = boot_source(store, bid)
    for up in plan.patterns:
        up.not_numbers.clear()
    try:
        boots, _, _ = read_boots(open_stored(kind, name, host), plan=plan)
        same = next((b for b in boots if b.fingerprint == fingerprint), None)
    except BootlogError as err:
        return {**show, "plan_lines": f"source no longer readable: {err}"}
    # what a pattern matched that was no number (said by check instead of a silent gap)
    bad: dict[str, tuple] = {}
    for up in plan.patterns if same is not None else ():
        mine = [h for h in up.not_numbers if same.first_line <= (h[0] or 0) <= same.last_line]
        if mine:
            bad[up.name] = mine[0]
    if same is None:
        from bootlog.run.ingest import default_host

        why = f"it was read on host {host}" if host and host != default_host() else f"{name} no longer holds this boot"
        return {**show, "plan_lines": f"source no longer readable: {why}"}
    metrics = [_metric_row(m) for m in same.metrics if (m.pattern or "").startswith("user:")]
    user_kinds = {up.event for up in plan.patterns if up.event}
    events = [_event_row(e) for e in same.events if e.kind in user_kinds]
    return {
        **show,
        "metrics": [*show.get("metrics", []), *metrics],
        "events": [*show.get("events", []), *events],
        "plan_lines": f"read again from {name}",
        **({"plan_not_numbers": bad} if bad else {}),
    }


def both_with_plan_patterns(store, a: dict, b: dict, plan) -> tuple[dict, dict]:
    """The two boots of a diff, each with the plan's pattern figures and events (read again from
    its source where it was stored without them): both sides read the same way, or a figure the
    older boot printed too would be "new" (expert_arena_gib None -> 17.77)."""
    return with_plan_patterns(store, a, plan), with_plan_patterns(store, b, plan)


def _metric_row(m: Metric) -> dict[str, Any]:
    return {"name": m.name, "value": m.value, "unit": m.unit, "rank": m.rank, "line": m.line}


def _event_row(e) -> dict[str, Any]:
    from bootlog.store.write import jsonable

    return {
        "kind": e.kind,
        "rank": e.rank,
        "line": e.line,
        "ts": e.ts.isoformat() if e.ts else None,
        "message": e.message,
        "detail": jsonable(e.detail or {}),
    }


def log_clock(store, doc: dict) -> Clock:
    """The clock of the boot in `doc` (a show --json document): boot_clocks."""
    return boot_clocks(store, [doc["boot"]])[doc["boot"]["id"]]


def boot_clocks(store, boots: list[dict]) -> dict[int, Clock]:
    """Boot id -> its clock, for `boots` (show --json "boot" objects, as `list` has them): a boot
    stored with the envelope's own offset is on it; else the head of its source read again
    (render.logclock says how), each source at most once."""
    # (name, kind, host): one clock per source, whatever boot of it asks
    where = {bid: row[:3] for bid, row in boot_sources(store, list(dict.fromkeys(b["id"] for b in boots))).items()}
    seen: dict[tuple, Clock] = {}
    return {b["id"]: _clock(b.get("started_at"), where.get(b["id"]), seen) for b in boots}


def _clock(started_at: str | None, row: tuple | None, seen: dict[tuple, Clock]) -> Clock:
    started = Clock(None, "").at(started_at)
    if started is not None and started.tzinfo is None:
        return Clock(None, "times as the log printed them (its lines carry no zone)")
    if started is not None and started.utcoffset():
        # the envelope stamped the host's own offset (podman on a host in PDT): stored with it
        zone = timezone(started.utcoffset())
        return Clock(zone, f"times in {offset_name(zone)}, the log's offset (the envelope's stamps)")
    if row is None:
        return UTC
    if row not in seen:
        seen[row] = _source_clock(*row)
    return seen[row]


def _source_clock(name: str, kind: str, host: str | None) -> Clock:
    if kind not in ("file", "gzip"):
        return unknown("it was read from a container" if kind == "container" else "it was read from stdin")
    try:
        return clock_of(head_offset(stored_file(kind, name, host)))
    except (BootlogError, OSError) as err:  # the file is gone or unreadable since it was stored
        return unknown(err)


def head_offset(path: str) -> tuple[tzinfo, str] | None:
    """(the offset of the log at `path`, how it was found) from its first lines, or None."""
    from bootlog.read import envelope
    from bootlog.read.sources import open_source

    return stamps_offset(envelope.read(open_source(path).chunks(size=1 << 16)))
