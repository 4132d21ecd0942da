"""The report in a real browser: headless Chromium (Debian's `chromium`) lays the page out in a
1,400 x 1,000 window, as an operator's laptop would, and says how wide it came out.

The page itself has no script; a copy gets a small one that writes what the browser measured
into data attributes of <body> (the page's scroll width, the faults column's right edge), and
`--dump-dom` prints the DOM after it ran.  Screenshots of the same page: with
BOOTLOG_WRITE_DOCS=1 the test writes docs/report.png (the window) and docs/timeline.png,
docs/kv_cache_tokens.png (the report's charts), the pictures the README shows, and
docs/report.txt, the text of what they show; without it, a test holds that text to the page the
code renders today, so a picture in docs/ cannot silently go stale.

No Chromium: the test is skipped LOUDLY (a warning in every run's summary).
"""

from __future__ import annotations

import difflib
import os
import re
import shutil
import struct
import subprocess
import warnings
from html.parser import HTMLParser
from pathlib import Path

import pytest
from click.testing import CliRunner

from bootlog.cli import cli
from paths import FIXTURES, ROOT

SEED = FIXTURES / "seed"
PLAN = FIXTURES.parent / "plans" / "frank-primary.toml"
WINDOW = (1400, 1000)
DOCS_TEXT = ROOT / "docs" / "report.txt"
REGENERATE = "BOOTLOG_WRITE_DOCS=1 python -m pytest -n 0 tests/test_report_browser.py"
MEASURE = """<script>
window.addEventListener('load', () => {
  const d = document.documentElement, b = document.body;
  b.dataset.scrollWidth = d.scrollWidth;
  b.dataset.clientWidth = d.clientWidth;
  const th = [...document.querySelectorAll('table.history th')].find(t => t.textContent.trim() === 'faults');
  if (th) { const r = th.getBoundingClientRect(); b.dataset.faultsLeft = Math.round(r.left); b.dataset.faultsRight = Math.round(r.right); }
  const imgs = [...document.images];
  b.dataset.widestImg = Math.max(...imgs.map(i => Math.round(i.getBoundingClientRect().right)));
  b.dataset.imgsLoaded = imgs.every(i => i.complete && i.naturalWidth > 0) ? 1 : 0;
});
</script>"""


def chromium() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    reason = "chromium not installed (apt-get install -y chromium): the report's browser test is SKIPPED"
    warnings.warn(reason, UserWarning, stacklevel=2)
    pytest.skip(reason)


def browse(exe: str, page: Path, profile: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [
            exe,
            "--headless",
            "--disable-gpu",
            "--no-sandbox",
            f"--user-data-dir={profile}",
            f"--window-size={WINDOW[0]},{WINDOW[1]}",
            "--hide-scrollbars",
            *args,
            page.as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )


def png_size(data: bytes) -> tuple[int, int]:
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    return struct.unpack(">II", data[16:24])


@pytest.fixture(scope="module")
def report(tmp_path_factory) -> Path:
    """The seed deploy history's report, with the operator's plan."""
    tmp = tmp_path_factory.mktemp("browser")
    db = tmp / "seed.db"
    runner = CliRunner()
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(ROOT)  # (sources stored as fixtures/logs/seed/…, as the README's screenshot shows them)
        logs = [str(p.relative_to(ROOT)) for p in sorted(SEED.glob("*.log"))]
        res = runner.invoke(
            cli,
            ["--db", str(db), "ingest", "--container", "frank-primary-qwen", "--plan", str(PLAN), *logs],
            catch_exceptions=False,
        )
        assert res.exit_code == 0, res.output
        out = tmp / "report.html"
        res = runner.invoke(
            cli, ["--db", str(db), "report", "-o", str(out), "--plan", str(PLAN)], catch_exceptions=False
        )
    assert res.exit_code == 0, res.output
    return out


def test_the_page_fits_a_1400px_window_and_shows_the_faults_column(report, tmp_path):
    exe = chromium()
    measured = tmp_path / "measured.html"
    measured.write_text(report.read_text(encoding="utf-8").replace("</body>", MEASURE + "</body>"), encoding="utf-8")
    done = browse(exe, measured, tmp_path / "profile", "--virtual-time-budget=5000", "--dump-dom")
    assert done.returncode == 0, done.stderr[-2000:]
    body = re.search(r"<body([^>]*)>", done.stdout)
    assert body, done.stdout[:500]
    got = {k: int(v) for k, v in re.findall(r'data-([a-z-]+)="(\d+)"', body.group(1))}
    # no horizontal scrolling of the page: what does not fit scrolls inside its own box
    assert got["scroll-width"] <= got["client-width"] <= WINDOW[0], got
    # the faults column (32 on the gdn boot) is on screen without scrolling the table
    assert 0 < got["faults-left"] < got["faults-right"] <= got["client-width"], got
    assert got["imgs-loaded"] == 1 and got["widest-img"] <= got["client-width"], got


def test_screenshot_of_the_window(report, tmp_path):
    exe = chromium()
    shot = tmp_path / "report.png"
    done = browse(exe, report, tmp_path / "profile", f"--screenshot={shot}")
    assert done.returncode == 0 and shot.is_file(), done.stderr[-2000:]
    data = shot.read_bytes()
    assert png_size(data) == WINDOW and len(data) > 20_000  # (a blank page compresses to a few KiB)
    if os.environ.get("BOOTLOG_WRITE_DOCS"):
        write_docs(report, data)


def write_docs(report: Path, window_png: bytes) -> None:
    """The README's pictures: the window as the browser drew it, and two of the page's charts
    (the very images embedded in it)."""
    import base64

    docs = ROOT / "docs"
    (docs / "report.png").write_bytes(window_png)
    DOCS_TEXT.write_text(key_text(report.read_text(encoding="utf-8")), encoding="utf-8")
    page = report.read_text(encoding="utf-8")
    for alt, name in (("boot timelines", "timeline.png"), ("kv_cache_tokens", "kv_cache_tokens.png")):
        m = re.search(rf'alt="{re.escape(alt)}" src="data:image/png;base64,([A-Za-z0-9+/=]+)"', page)
        assert m, alt
        (docs / name).write_bytes(base64.b64decode(m.group(1)))


class _Text(HTMLParser):
    """A page's visible text: a line per block and per term of a definition list, table cells
    and a term's definition joined by " | ", an image as [image: its alt]."""

    BLOCKS = {"h1", "h2", "h3", "p", "tr", "li", "div", "dl", "section", "ul", "table"}

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.lines: list[str] = [""]
        self.skip = 0

    def handle_starttag(self, tag, attrs):
        if tag in ("style", "script", "title"):
            self.skip += 1
        elif tag in self.BLOCKS or tag == "dt":
            self.lines.append("")
        elif tag in ("td", "th", "dd") and self.lines[-1].strip():
            self.lines[-1] += " | "
        elif tag == "img":
            self.lines.append(f"[image: {dict(attrs).get('alt', '')}]")
            self.lines.append("")

    def handle_endtag(self, tag):
        if tag in ("style", "script", "title"):
            self.skip -= 1
        elif tag in self.BLOCKS:
            self.lines.append("")

    def handle_data(self, data):
        if not self.skip:
            self.lines[-1] += data


def key_text(page: str) -> str:
    """What docs/report.png shows, as text: the page down to the end of the latest boot's card
    (the window), then the charts (their names and what is said under them), with what depends
    on the machine masked: when it was generated, where the checkout is, the host's name."""
    from bootlog.run.ingest import default_host

    top = page[: page.index("</section>")]
    charts = "".join(re.findall(r'<img[^>]*alt="[^"]*"[^>]*>(?:<p class="cap">.*?</p>)?', page))
    parser = _Text()
    parser.feed(top + "<h2>charts</h2>" + re.sub(r' src="data:[^"]*"', "", charts))
    lines = [re.sub(r"\s+", " ", ln).strip() for ln in parser.lines]
    text = "\n".join(ln for ln in lines if ln and ln != "|")
    text = re.sub(r"generated \d{4}-\d\d-\d\d \d\d:\d\d UTC", "generated <time> UTC", text)
    text = text.replace(str(ROOT), "<checkout>")
    return re.sub(rf"^host \| {re.escape(default_host())}$", "host | <host>", text, flags=re.M)


def test_the_pictures_in_docs_are_of_the_page_the_code_renders_today(report):
    got = key_text(report.read_text(encoding="utf-8"))
    want = DOCS_TEXT.read_text(encoding="utf-8") if DOCS_TEXT.is_file() else ""
    if os.environ.get("BOOTLOG_WRITE_DOCS"):
        return  # (test_screenshot_of_the_window writes them, text and pictures together)
    diff = "\n".join(difflib.unified_diff(want.splitlines(), got.splitlines(), "docs/report.txt", "today", lineterm=""))
    assert got == want, f"docs/report.png is not what the code renders today; {REGENERATE} rewrites it:\n{diff}"
