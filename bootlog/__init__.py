"""bootlog: turn vLLM server logs into a regression database.

The Python face, for a deploy script or a notebook that would otherwise shell out (docs/python.md):

    import bootlog

    store = bootlog.open_store("boots.db")            # a path, a postgresql:// URL, or None (BOOTLOG_DB, the default)
    stored = bootlog.ingest(store, "/var/log/vllm.log")   # the boots this read stored, in order
    plan = bootlog.load_plan("deploy.toml")
    result = bootlog.check(store, "last", plan=plan)  # the document `bootlog check --json` prints
    if bootlog.exit_code(result):                     # 0 OK, 3 drift, 4 violation or a failed boot
        print(bootlog.diff(store, "last", "prev")["findings"])

Every error is a bootlog.BootlogError (its `exit` the command line's exit code).  Nothing is
imported until it is used: `bootlog --help` pays for none of it.
"""

from __future__ import annotations

from typing import Any

__version__ = "0.3.0"
__all__ = ["BootlogError", "check", "diff", "exit_code", "ingest", "load_plan", "open_store", "show"]


def open_store(db: str | None = None, *, create: bool = True) -> Any:
    """The database at `db` (a SQLite path or a database URL; None: BOOTLOG_DB, else the user's
    default), its schema created or upgraded; close() it when done."""
    from bootlog.store.db import open_store as _open

    return _open(db, create=create)


def ingest(
    store: Any,
    path: str | None = None,
    *,
    container: str | None = None,
    plan: Any = None,
    host: str | None = None,
    source: Any = None,
) -> list:
    """Read a log file (or `-`: stdin; or, with container= and no path, a container's log; or any
    read.sources.Source) into the store, as `bootlog ingest` does; the stored boots (each: .id,
    .created, .boot)."""
    from bootlog.run.ingest import ingest as _ingest

    return _ingest(store, path, container=container, plan=plan, host=host, source=source)


def load_plan(path: str) -> Any:
    """A plan file (TOML, and the env file it names), checked as `check --plan` checks it."""
    from bootlog.judge.plan import load_plan as _load

    return _load(path, judge=True)


def show(store: Any, ref: str = "last", **where: Any) -> dict:
    """`show --json`'s document of the boot `ref` (last, prev, last~N or an id; container=, host=)."""
    from bootlog.run.query import show_ref

    return show_ref(store, ref, **where)


def diff(store: Any, a: str = "last", b: str = "prev", *, plan: Any = None, **where: Any) -> dict:
    """`diff --json`'s document: boot `a` against boot `b`."""
    from bootlog.run.query import diff_refs

    return diff_refs(store, a, b, plan=plan, **where)[0]


def check(store: Any, ref: str = "last", *, plan: Any, **where: Any) -> dict:
    """`check --json`'s document: boot `ref` held to `plan` (load_plan)."""
    from bootlog.run.query import check_ref

    return check_ref(store, ref, plan=plan, **where)


def exit_code(result: dict) -> int:
    """The exit code `diff` or `check` gives for `result`: 0 nothing wrong, 3 drift, 4 violation."""
    from bootlog.judge.verdict import exit_code as _code

    return _code(result)


def __getattr__(name: str) -> Any:
    if name == "BootlogError":
        from bootlog.errors import BootlogError

        return BootlogError
    raise AttributeError(f"module 'bootlog' has no attribute {name!r}")
