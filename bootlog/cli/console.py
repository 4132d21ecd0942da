"""Output shared by every command: JSON, figures, and the error rule at the CLI's edge."""

from __future__ import annotations

import json
from datetime import date, datetime
from typing import Any, Callable

from bootlog.safe import json_text, term


def _default(o: Any) -> Any:
    if isinstance(o, (datetime, date)):
        return o.isoformat()
    if isinstance(o, (set, tuple)):
        return list(o)
    return str(o)


def to_json(obj: Any) -> str:
    """JSON for a terminal: the same value, with C1/bidi controls written as \\uXXXX (safe.json_text)."""
    try:
        text = json.dumps(obj, indent=2, ensure_ascii=False, default=_default, allow_nan=False)
    except ValueError:  # a NaN or infinity somewhere (a config value "nan"): JSON has no such number
        from bootlog.store.write import jsonable  # (as the store writes them: null)

        text = json.dumps(jsonable(obj), indent=2, ensure_ascii=False, allow_nan=False)
    return json_text(text)


def error_exit(err: BaseException, echo: Callable[..., None]) -> int | None:
    """The error rule of every command: a BootlogError is one stderr line and its exit code,
    Ctrl-C is 130, a closed pipe (`| head`) is success, anything else is one "internal error"
    line and 1.  None: let it propagate (BOOTLOG_DEBUG=1 wants the traceback).  A message may
    quote a log, a file name or an engine: it is printed on one line, controls escaped."""
    import os

    from bootlog.errors import BootlogError, Exit

    def say(msg: str) -> None:
        echo(f"bootlog: {term(msg, one_line=True)}", err=True)

    if isinstance(err, BootlogError):
        say(str(err))
        return int(err.exit)
    from bootlog.store.db import driver_errors, one_line

    if isinstance(err, driver_errors()):  # (a lost connection, a damaged file)
        say(f"database error: {one_line(err)}")
        return int(Exit.ERROR)
    if isinstance(err, KeyboardInterrupt):
        say("interrupted")
        return 130
    if isinstance(err, BrokenPipeError):
        return int(Exit.OK)
    if not isinstance(err, Exception) or os.environ.get("BOOTLOG_DEBUG"):
        return None
    if isinstance(err, OSError) and err.strerror and err.errno is not None:
        # an output that cannot be written (full disk, read-only or forbidden path: export,
        # report -o, plot -o, a redirect to /dev/full): the system's words, not "internal error"
        where = f": {err.filename}" if err.filename else ""
        say(f"{err.strerror}{where}")
        return int(Exit.ERROR)
    # the boundary: never show a traceback to a user
    say(f"internal error: {type(err).__name__}: {err} (set BOOTLOG_DEBUG=1 for the traceback)")
    return int(Exit.ERROR)
