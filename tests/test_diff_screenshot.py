"""docs/diff.png: `bootlog diff` in a terminal, on the seeds' deploy history (issue 32).

The text is what the two commands print on a real terminal (a pty, 132 columns); docs/diff.txt
holds it, and the test checks that the code prints exactly that today.  The picture is that text
drawn by headless Chromium as a terminal window (monospace, dark, long lines wrapped at the
terminal's 132 columns); its PNG carries the SHA-256 of the text it shows (a tEXt chunk), so a
picture of older output fails here too.  BOOTLOG_WRITE_DOCS=1 writes both files anew.
"""

from __future__ import annotations

import hashlib
import html
import os
import struct
import subprocess
import zlib

import pytest
from click.testing import CliRunner

from bootlog.cli import cli
from paths import FIXTURES, ROOT
from pty_util import on_a_tty
from test_hostile import no_raw
from test_report_browser import chromium, png_size

DOCS = ROOT / "docs"
COLUMNS = 132
# the deploy as it went out (last against prev: shape G after the gdn_hip boot), then the 5 x
# 262,144 deploy against the night ladder's last step: an engine that died serving, its drift
COMMANDS = [["diff"], ["diff", "8", "13"]]
KEY = b"bootlog-text-sha256"


def _pty(args: list[str], env: dict) -> str:
    return on_a_tty(args, env=env, cwd=ROOT)[1]


@pytest.fixture(scope="module")
def session(tmp_path_factory) -> str:
    """The terminal session: each command after its prompt, its output as the pty got it."""
    db = tmp_path_factory.mktemp("shot") / "seed.db"
    logs = [str(p) for p in sorted((FIXTURES / "seed").glob("*.log"))]
    res = CliRunner().invoke(cli, ["--db", str(db), "ingest", "--container", "frank-primary-qwen", *logs])
    assert res.exit_code == 0, res.output
    env = {**os.environ, "BOOTLOG_DB": str(db), "COLUMNS": str(COLUMNS), "LINES": "50"}
    text = "".join(f"$ bootlog {' '.join(args)}\n" + _pty(args, env) for args in COMMANDS)
    no_raw(text)
    return text


def page(text: str) -> str:
    rows = []
    for line in text.splitlines():
        cls = ' class="prompt"' if line.startswith("$ ") else ""
        rows.append(f"<span{cls}>{html.escape(line)}</span>")
    return (
        "<!doctype html><meta charset=utf-8><style>"
        "body{margin:0;background:#1e1e1e}"
        "pre{margin:0;padding:14px 16px;color:#d4d4d4;font:14px/1.35 'DejaVu Sans Mono',monospace;"
        f"white-space:pre-wrap;word-break:break-all;width:{COLUMNS}ch}}"
        ".prompt{color:#8ae234;font-weight:bold}</style><pre>" + "\n".join(rows) + "</pre>"
    )


def with_text_hash(png: bytes, text: str) -> bytes:
    """The PNG with a tEXt chunk (after IHDR) naming the SHA-256 of the text it shows."""
    data = KEY + b"\0" + hashlib.sha256(text.encode()).hexdigest().encode()
    chunk = struct.pack(">I", len(data)) + b"tEXt" + data + struct.pack(">I", zlib.crc32(b"tEXt" + data))
    end_ihdr = 8 + 8 + 13 + 4
    return png[:end_ihdr] + chunk + png[end_ihdr:]


def text_hash(png: bytes) -> str | None:
    i = 8
    while i < len(png):
        n, kind = struct.unpack(">I4s", png[i : i + 8])
        body = png[i + 8 : i + 8 + n]
        if kind == b"tEXt" and body.startswith(KEY + b"\0"):
            return body[len(KEY) + 1 :].decode()
        i += 12 + n
    return None


def test_the_text_is_what_bootlog_prints_today(session):
    if os.environ.get("BOOTLOG_WRITE_DOCS"):
        (DOCS / "diff.txt").write_text(session, encoding="utf-8")
    assert (DOCS / "diff.txt").read_text(encoding="utf-8") == session
    # what it shows: the deploy's three rows, then the died-serving deploy's exit-4 findings
    assert "  ~ enable_prefix_caching: True → False" in session
    assert "✗ status: ready → ready  the engine died serving (oom)" in session


def test_the_screenshot_shows_that_text(session, tmp_path):
    shot = DOCS / "diff.png"
    if os.environ.get("BOOTLOG_WRITE_DOCS"):
        exe = chromium()
        (tmp_path / "diff.html").write_text(page(session), encoding="utf-8")
        lines = sum(1 + len(ln) // COLUMNS for ln in session.splitlines())
        size = (1180, int(lines * 14 * 1.35) + 40)
        done = subprocess.run(
            [
                exe,
                "--headless",
                "--disable-gpu",
                "--no-sandbox",
                f"--user-data-dir={tmp_path / 'p'}",
                f"--window-size={size[0]},{size[1]}",
                "--hide-scrollbars",
                f"--screenshot={tmp_path / 'diff.png'}",
                (tmp_path / "diff.html").as_uri(),
            ],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert done.returncode == 0, done.stderr[-2000:]
        shot.write_bytes(with_text_hash((tmp_path / "diff.png").read_bytes(), session))
    data = shot.read_bytes()
    width, height = png_size(data)
    assert width >= 1000 and height >= 400 and len(data) > 20_000  # (a blank window compresses to a few KiB)
    assert text_hash(data) == hashlib.sha256(session.encode()).hexdigest(), (
        "docs/diff.png shows older output: BOOTLOG_WRITE_DOCS=1 pytest tests/test_diff_screenshot.py"
    )
