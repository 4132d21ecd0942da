"""bootlog run on a pseudo-terminal, as an operator's shell runs it: what a TTY gets (the width
rules, the escapes) is only seen there, not through a pipe."""

from __future__ import annotations

import os
import pty
import subprocess
import sys
from pathlib import Path


def on_a_tty(
    args: list[str], *, env: dict | None = None, cwd: Path | None = None, timeout: float = 60
) -> tuple[int, str]:
    """(exit code, what the terminal showed, its CRLF line ends made LF) of `bootlog ARGS`."""
    master, slave = pty.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-m", "bootlog.cli", *args],
        stdin=slave,
        stdout=slave,
        stderr=slave,
        close_fds=True,
        env=env,
        cwd=cwd,
    )
    os.close(slave)
    got = b""
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:  # EIO: the child closed its side
            break
        if not chunk:
            break
        got += chunk
    os.close(master)
    return proc.wait(timeout=timeout), got.decode("utf-8").replace("\r\n", "\n")
