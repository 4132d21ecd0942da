"""What `bootlog ingest` does once its arguments are read: ingest each input, print a line per
boot (or JSON), and the exit code."""

from __future__ import annotations

import sys
from typing import Callable

from bootlog.render.bursts import gdn_summary
from bootlog.cli.console import to_json
from bootlog.render.render import fmt_value
from bootlog.errors import BootlogError, InputError
from bootlog.figures import FIGURES, UNITS
from bootlog.safe import pad, term, width

NAME_COLS = 60  # an input's name on its boot lines, cut to this many columns
BOOT_LINES = 100  # boot lines printed per input; the rest are counted in one line (list shows all)


def key_figures(boot) -> str:
    """One-line summary of the figures an operator reads first."""
    want = tuple(f.name for f in FIGURES if f.brief)
    seen: dict[str, list[float]] = {}
    for m in boot.metrics:
        if m.name in want:
            seen.setdefault(m.name, []).append(m.value)
    parts = []
    for name in want:
        if name in seen:
            vals = seen[name]
            shown = fmt_value(vals[0]) if len(set(vals)) == 1 else "/".join(fmt_value(v) for v in vals)
            parts.append(f"{name}={shown}{'x' if UNITS[name] == 'x' else ''}")
    burst = gdn_summary(boot.events)
    if burst:
        parts.append(f"gdn_hip: {burst}")
    return "  ".join(parts)


def tail_cut(label: str, cols: int) -> str:
    """A (term-safe) file name in at most `cols` columns, cut at its start: the file's own name
    is the part that tells two inputs apart."""
    if width(label) <= cols:
        return label
    keep = label
    while width(keep) > cols - 1:
        keep = keep[1:]
    return "…" + keep


def plan_tag(store, boot_id: int, boot, plan, stored_before: bool) -> str:
    """What an ingest with --plan did to one boot, for its line: the plan's own figures and
    events it read (on a boot stored before, what the re-read added to it) and the plan's verdict
    on the boot, instead of a bare "[already stored]"."""
    from bootlog.judge import compare
    from bootlog.records import EVENT_KINDS
    from bootlog.store.reads import show_boots
    from bootlog.store.write import USER_PATTERN
    from bootlog.judge.verdict import judge

    names = list(dict.fromkeys(m.name for m in boot.metrics if (m.pattern or "").startswith(USER_PATTERN)))
    events = sum(1 for e in boot.events if e.kind not in EVENT_KINDS)  # (a plan's event kinds are its own)
    shown = ", ".join(term(n, one_line=True) for n in names[:3]) + (
        f" and {len(names) - 3} more" if len(names) > 3 else ""
    )
    read = (
        f"{len(names)} plan figure{'' if len(names) == 1 else 's'}"
        + (f" ({shown})" if names else "")
        + (f", {events} plan event{'' if events == 1 else 's'}" if events else "")
    )
    doc = show_boots(store, [boot_id], runtime=False)[0]
    result = compare.check(doc, plan)
    v = judge(doc, results=[("plan", result)])
    missed = [f"{f['key']}" for f in result.get("findings", []) if f["verdict"] in ("violation", "drift")]
    why = (
        f" ({', '.join(term(k, one_line=True) for k in missed[:3])}{' …' if len(missed) > 3 else ''})" if missed else ""
    )
    head = f"stored before, now with {read}" if stored_before else f"new, with {read}"
    return f"[{head}; plan: {v.word}{why}]"


def ingest_command(
    store,
    paths: tuple[str, ...] | list[str],
    *,
    container: str | None = None,
    container_engine: str = "podman",
    host: str | None = None,
    plan=None,
    as_json: bool = False,
    echo: Callable[..., None],
) -> int:
    """Ingest `paths` (or the container) into `store`; returns the exit code.  echo(text,
    err=False) prints.  BootlogErrors of a single input propagate."""
    from bootlog.run.ingest import ingest as run_ingest
    from bootlog.read.sources import cut_note
    from bootlog.store.write import stored_name

    # (boots are ordered by when they started, whatever order the files come in: reads.py)
    specs = [("path", p) for p in paths] if paths else [("container", container)]
    name_cols = max(width(term(stored_name(p), one_line=True)) for p in paths) if paths else 0
    out = []
    failed: list[BootlogError] = []
    for kind, spec in specs:
        try:
            results = run_ingest(
                store,
                spec if kind == "path" else None,
                container=container,
                container_engine=container_engine,
                host=host,
                plan=plan,
                progress=sys.stderr.isatty(),
            )
        except InputError as err:
            if len(specs) == 1:
                raise
            # one unreadable file of several: nothing of it was stored (one transaction per
            # source); say so and go on with the others, then exit 1
            echo(f"bootlog: {err} (skipped: nothing of it stored)", err=True)
            failed.append(err)
            continue
        # (a file name that is not UTF-8 prints, and is stored, with \xNN escapes)
        label = term(f"{container_engine}:{spec}" if kind == "container" else stored_name(spec), one_line=True)
        if results.truncated:
            echo(
                f"bootlog: {label}: {results.truncated}: stopped at line {results.stopped_at_line:,}; "
                "the boots before it are stored",
                err=True,
            )
        if results.cut_lines:
            echo(f"bootlog: {cut_note(label, results.cut_lines)}", err=True)
        for up in getattr(plan, "patterns", None) or []:
            if up.not_numbers:  # (said once per input, with the first such line)
                line, text = up.not_numbers[0]
                more = f" (and {len(up.not_numbers) - 1:,} more)" if len(up.not_numbers) > 1 else ""
                echo(
                    f"bootlog: warning: {label}: [[pattern]] {term(up.name, one_line=True)} matched line "
                    f"{line or 0:,}{more}, but its value {term(repr(text), one_line=True)} is not a number: "
                    "no figure stored",
                    err=True,
                )
                up.not_numbers.clear()
        if results.up_to_date:
            if not as_json:
                echo(f"{label}: nothing new since line {results.resumed_at_line:,}")
            continue
        if not results:
            if not as_json and results.resumed_at_line is None:
                echo(f"no vLLM boot found in {label}")
            elif not as_json:
                echo(f"{label}: read on from line {results.resumed_at_line:,}; no vLLM lines in the new part")
            continue
        if results.resumed_at_line is not None and not as_json:
            echo(f"{label}: read on from line {results.resumed_at_line:,}")
        hidden = new_hidden = 0
        # several inputs: each boot line names its file (padded so the columns after it align)
        name = pad(tail_cut(label, NAME_COLS), min(NAME_COLS, name_cols)) + "  " if len(specs) > 1 else ""
        for n, r in enumerate(results, 1):
            b = r.boot
            if n > BOOT_LINES and not as_json:  # a crash loop of a million boots: one line for the rest
                hidden, new_hidden = hidden + 1, new_hidden + bool(r.created)
            if b.continued:
                if as_json:
                    out.append(
                        {
                            "id": r.id,
                            "created": False,
                            "extended": True,
                            "status": b.status,
                            "failure": b.failure,
                            "first_line": b.first_line,
                            "last_line": b.last_line,
                            "source": label,
                        }
                    )
                if not as_json and not hidden:
                    added = f"{len(b.events)} events, {len(b.samples)} stats lines, {len(b.metrics)} figures"
                    echo(
                        f"#{r.id:<5} {name}extended with lines {b.first_line}-{b.last_line}: {added}"
                        + (f"  (runtime failure: {b.failure})" if b.failure else "")
                    )
                continue
            if as_json:
                out.append(
                    {
                        "id": r.id,
                        "created": r.created,
                        "status": b.status,
                        "failure": b.failure,
                        "first_line": b.first_line,
                        "last_line": b.last_line,
                        "source": label,
                    }
                )
            if not as_json and not hidden:
                # (as list and show say it: "ready (oom)" is a boot whose engine died serving)
                state = f"{b.status} ({b.failure})" if b.failure else b.status
                tag = (
                    plan_tag(store, r.id, b, plan, not r.created)
                    if plan is not None
                    else "[new]"
                    if r.created
                    else "[already stored]"
                )
                echo(
                    f"#{r.id:<5} {name}{state:<22} v{term(b.vllm_version or '?', one_line=True)}  lines {b.first_line}-{b.last_line}"
                    f"  {key_figures(b)}  {tag}".replace("   [", " [")
                )
        if hidden:
            echo(f"… and {hidden:,} more boots in {label} ({new_hidden:,} new): `bootlog list` shows them")
    if as_json:
        echo(to_json(out))
    if failed:
        echo(f"bootlog: {len(failed)} of {len(specs)} inputs could not be read", err=True)
        return int(failed[0].exit)
    return 0
