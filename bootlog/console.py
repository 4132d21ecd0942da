"""Output shared by every command, without click: JSON, figures, and an echo that writes as
click.echo does on a UTF-8 stream.  The quick ingest path (entry.py) prints through these
without importing click (~20 ms of a ~65 ms re-ingest)."""
from __future__ import annotations

import sys
from datetime import date, datetime

TYPE_CHECKING = False
if TYPE_CHECKING:  # (typing for the annotations only: importing it costs ~5 ms of every start)
    from typing import Any, Callable

from bootlog.lazyre import lazy

_ANSI = lazy(r"\033\[[;?0-9]*[a-zA-Z]")  # click's own pattern (click._compat._ansi_re)


def echo(message: str, err: bool = False) -> None:
    """click.echo(message, err=err) for a str on a UTF-8 stream: a newline, ANSI escapes
    stripped when the stream is not a terminal, flushed."""
    stream = sys.stderr if err else sys.stdout
    if stream is None:
        return
    out = message + "\n"
    if "\x1b" in out and not stream.isatty():
        out = _ANSI.sub("", out)
    stream.write(out)
    stream.flush()


def _default(o: Any) -> Any:
    if isinstance(o, (datetime, date)):
        return o.isoformat()
    if isinstance(o, (set, tuple)):
        return list(o)
    return str(o)


def to_json(obj: Any) -> str:
    import json  # (not at import: an ingest writes no JSON here, jsontext.py)

    try:
        return json.dumps(obj, indent=2, ensure_ascii=False, default=_default, allow_nan=False)
    except ValueError:  # a NaN or infinity somewhere (a config value "nan"): JSON has no such number
        from bootlog.store.rows import _jsonable  # (as the store writes them: null)

        return json.dumps(_jsonable(obj), indent=2, ensure_ascii=False, allow_nan=False)


def fmt_num(v: Any) -> str:
    """Human rendering of a figure: thousands separators for integers, trimmed floats."""
    if isinstance(v, bool) or v is None:
        return str(v)
    if isinstance(v, (int, float)):
        if float(v).is_integer() and abs(v) >= 1000:
            return f"{int(v):,}"
        if float(v).is_integer():
            return str(int(v))
        return f"{v:.4g}" if abs(v) < 1 else f"{v:,.2f}".rstrip("0").rstrip(".")
    return str(v)


def error_exit(err: BaseException, echo: Callable[..., None]) -> int | None:
    """The error rule of every command: a BootlogError is one stderr line and its exit code,
    Ctrl-C is 130, a closed pipe (`| head`) is success, anything else is one "internal error"
    line and 1.  None: let it propagate (BOOTLOG_DEBUG=1 wants the traceback)."""
    import os

    from bootlog.errors import BootlogError, Exit

    if isinstance(err, BootlogError):
        echo(f"bootlog: {err}", err=True)
        return int(err.exit)
    if isinstance(err, KeyboardInterrupt):
        echo("bootlog: interrupted", err=True)
        return 130
    if isinstance(err, BrokenPipeError):
        return int(Exit.OK)
    if not isinstance(err, Exception) or os.environ.get("BOOTLOG_DEBUG"):
        return None
    if isinstance(err, OSError) and err.strerror and err.errno is not None:
        # an output that cannot be written (full disk, read-only or forbidden path: export,
        # report -o, plot -o, a redirect to /dev/full): the system's words, not "internal error"
        where = f": {err.filename}" if err.filename else ""
        echo(f"bootlog: {err.strerror}{where}", err=True)
        return int(Exit.ERROR)
    # the boundary: never show a traceback to a user
    echo(f"bootlog: internal error: {type(err).__name__}: {err} "
         "(set BOOTLOG_DEBUG=1 for the traceback)", err=True)
    return int(Exit.ERROR)
