"""The `bootlog` console script: signal handling, then the command line."""

from __future__ import annotations

import os
import signal
import sys


class _Terminated(BaseException):
    """SIGTERM (systemd stopping a unit, `timeout`) or SIGHUP (a dropped ssh session): unwinds
    like an error, so an ingest's transaction rolls back and its temporary files go, then bootlog
    dies by the same signal as before."""


def _on_signal(signum, frame) -> None:
    raise _Terminated(signum)


def main() -> None:
    for sig in (signal.SIGTERM, getattr(signal, "SIGHUP", None)):
        try:
            if sig is not None and signal.getsignal(sig) == signal.SIG_DFL:  # (not nohup's SIG_IGN)
                signal.signal(sig, _on_signal)
        except (ValueError, OSError):  # (not the main thread: leave the default)
            pass
    got = 0
    try:
        from bootlog.cli.commands import cli

        cli(prog_name="bootlog")
    except _Terminated as end:
        got = end.args[0]
    if got:  # (out of the except block: its traceback no longer holds the ingest's frames)
        signal.signal(got, signal.SIG_DFL)
        os.kill(os.getpid(), got)
    sys.exit(0)


if __name__ == "__main__":
    main()
