"""The `bootlog` console script: signal handling, then the command line.

A plain `bootlog [--db X] ingest PATH...` (the post-deploy re-ingest of a log that grew, run
again and again) skips click: importing it and building the command tree is ~25 ms of a
~65 ms re-ingest, more than the 1 MiB it reads.  quick_ingest() takes only that exact shape,
and anything else (an option, `-`, --help, a stream that is not UTF-8) goes through click, so
no behaviour differs: both call cli_ingest.ingest_command() and console.error_exit().
BOOTLOG_NO_QUICK=1 turns the quick path off.
"""
from __future__ import annotations

import os
import sys


class _Terminated(BaseException):
    """SIGTERM (systemd stopping a unit, `timeout`) or SIGHUP (a dropped ssh session): unwinds
    like an error, so an ingest's transaction rolls back and its temporary files go, then bootlog
    dies by the same signal as before."""


def _on_signal(signum, frame) -> None:
    raise _Terminated(signum)


def quick_args(argv: list[str]) -> tuple[str | None, list[str]] | None:
    """(db, paths) when argv is exactly `[--db X | --db=X] ingest PATH...` with no path that
    starts with "-", and the database is not given empty; else None (click reads it)."""
    i, db = 0, None
    if argv[:1] == ["--db"] and len(argv) > 1:
        i, db = 2, argv[1]
    elif argv[:1] and argv[0].startswith("--db="):
        i, db = 1, argv[0][5:]
    if argv[i:i + 1] != ["ingest"]:
        return None
    paths = argv[i + 1:]
    if not paths or any(p.startswith("-") or not p for p in paths):
        return None
    if db is None:
        db = os.environ.get("BOOTLOG_DB") or None  # (click reads an empty variable as unset)
    if db is not None and not db.strip():
        return None  # click's usage error
    for stream in (sys.stdout, sys.stderr):
        # click.echo writes to such a stream as it is; to another (ASCII, Latin-1) it rewraps
        enc = (getattr(stream, "encoding", None) or "").lower().replace("-", "").replace("_", "")
        if enc != "utf8":
            return None
    return db, paths


def quick_ingest(db: str | None, paths: list[str]) -> int:
    from bootlog.cli_ingest import ingest_command, open_ingest_store
    from bootlog.console import echo, error_exit

    stores = []

    def open_store():
        stores.append(open_ingest_store(db))
        return stores[-1]
    try:
        return ingest_command(open_store, paths, echo=echo)
    except (Exception, KeyboardInterrupt) as err:
        code = error_exit(err, echo)
        if code is None:
            raise
        return code
    finally:
        for store in stores:  # (the last connection to close checkpoints SQLite's WAL into the file)
            close = getattr(store, "close", None) or getattr(store, "dispose", None)
            if close is not None:
                close()


def _end(code: int) -> None:
    """Exit after a finished quick ingest without the interpreter's teardown (freeing every
    module and object: ~3.5 ms of a ~50 ms re-ingest).  Its store is closed by then; the output
    is flushed and atexit's functions run (a spill file's removal) as at any exit.  Anything
    odd (a flush to a closed pipe) takes the usual exit instead."""
    import atexit

    run_exitfuncs = getattr(atexit, "_run_exitfuncs", None)
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except BaseException:
        run_exitfuncs = None
    if run_exitfuncs is None:
        sys.exit(code)
    run_exitfuncs()
    os._exit(code)


def main() -> None:
    try:  # the C module itself: `signal` wraps it in enums, ~0.5 ms of every start
        import _signal as signal
    except ImportError:  # pragma: no cover - not CPython
        import signal

    for sig in (signal.SIGTERM, getattr(signal, "SIGHUP", None)):
        try:
            if sig is not None and signal.getsignal(sig) == signal.SIG_DFL:  # (not nohup's SIG_IGN)
                signal.signal(sig, _on_signal)
        except (ValueError, OSError):  # (not the main thread: leave the default)
            pass
    got = code = 0
    try:
        quick = None if os.environ.get("BOOTLOG_NO_QUICK") else quick_args(sys.argv[1:])
        if quick is not None:
            code = quick_ingest(*quick)
        else:
            from bootlog.cli import cli

            cli(prog_name="bootlog")
    except _Terminated as end:
        got = end.args[0]
    if got:  # (out of the except block: its traceback no longer holds the ingest's frames)
        import gc

        gc.collect()  # (a spill file's finalizer runs when its last reader is gone)
        signal.signal(got, signal.SIG_DFL)
        os.kill(os.getpid(), got)
    if quick is not None:
        _end(code)
    sys.exit(code)


if __name__ == "__main__":
    main()
