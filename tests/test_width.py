"""Lines fit the terminal (issue 32): `show` and `explain` cut their lines to the terminal's
width on a terminal, to --width COLS when asked, and nothing into a pipe; a figure's own log
line is cut around the number it gave, never through it (explain used to cut the expert-plan
line at 160 columns, "runtime overhead 5.2", before the 17.77 / 7,762 it said it read)."""

from __future__ import annotations

import os
import re

import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from bootlog.cli import cli
from bootlog.safe import fit, term, width
from paths import FIXTURES, ROOT
from pty_util import on_a_tty

SHAPE_G = FIXTURES / "seed" / "04-shape-g-kv-400700-no-prefix-cache.log"
PLAN = ROOT / "fixtures" / "plans" / "frank-primary.toml"  # its user patterns read the expert-plan line


def run(*args, db=None):
    pre = ["--db", str(db)] if db else []
    return CliRunner().invoke(cli, [*pre, *args], catch_exceptions=False)


def log_line(n: int) -> str:
    """Line n of the fixture as the log has it, without its podman timestamp."""
    line = SHAPE_G.read_bytes().decode().split("\n")[n - 1]  # (read_text would split at CR too)
    return line.split(" ", 1)[1]


def figure_rows(out: str) -> list[tuple[str, int, str]]:
    """(figure, line, the source line shown under it) of explain's text."""
    lines = out.splitlines()
    rows = []
    for i, ln in enumerate(lines):
        m = re.match(r"  (.+?) = .*   line (\d+)  ← ", ln)
        if m and i + 1 < len(lines) and lines[i + 1].startswith("      "):
            rows.append((m.group(1), int(m.group(2)), lines[i + 1][6:]))
    return rows


@pytest.mark.parametrize("cols", [80, 120, 160])
def test_explain_cuts_around_the_figure_never_through_it(cols):
    out = run("explain", "--plan", str(PLAN), str(SHAPE_G), "--width", str(cols)).output
    assert max(width(ln) for ln in out.splitlines()) <= cols
    rows = {(name, line): text for name, line, text in figure_rows(out)}
    # what the expert-plan line printed, read here with a regex of this test's own
    plan_line = log_line(182)
    arena, slots = re.search(r"expert cache ([\d.]+) GiB / ([\d,]+) slots", plan_line).groups()
    overhead = re.search(r"runtime overhead ([\d.]+) GiB", plan_line).group(1)
    for name, printed in (
        ("expert_arena_gib[rank", arena),
        ("expert_arena_slots[rank", slots),
        ("planner_overhead_gib[rank", overhead),
    ):
        text = rows[(f"{name} 0]", 182)]
        assert printed in text, (name, text)
        assert text.strip("…") in plan_line  # a window of the log's own line, nothing else
    kv = re.search(r"GPU KV cache size: ([\d,]+) tokens", SHAPE_G.read_text()).group(1)
    assert any(name == "kv_cache_tokens" and kv in text for (name, _), text in rows.items())


def test_a_pipe_gets_every_line_whole():
    out = run("explain", "--plan", str(PLAN), str(SHAPE_G)).output  # (CliRunner: not a terminal)
    shown = [text for _, line, text in figure_rows(out) if line == 182]
    assert len(shown) == 3 and all(text == log_line(182) for text in shown)  # (3 figures of rank 0's line)


@pytest.fixture(scope="module")
def db(tmp_path_factory):
    db = tmp_path_factory.mktemp("w") / "w.db"
    assert run("ingest", str(SHAPE_G), db=db).exit_code == 0
    return db


def test_show_prints_a_warning_whole_into_a_pipe_and_fits_when_asked(db):
    warning = re.search(
        r"\[serving\.py:\d+\] (Default vLLM sampling parameters.*)|"
        r"\] (Default vLLM sampling parameters.*)",
        SHAPE_G.read_text(),
    )
    said = next(g for g in warning.groups() if g)
    assert said in run("show", "1", db=db).output  # whole: the dict is not cut in the middle
    out = run("show", "1", "--width", "80", db=db).output
    assert max(width(ln) for ln in out.splitlines()) <= 80
    assert any(ln.endswith("…") for ln in out.splitlines())
    assert run("show", "1", "--width", "0", db=db).output == run("show", "1", db=db).output


def _on_a_tty(args: list[str], columns: int) -> str:
    code, shown = on_a_tty(args, env={**os.environ, "COLUMNS": str(columns)})
    assert code == 0
    return shown


@pytest.mark.parametrize("columns", [72, 133])
def test_a_terminal_gets_its_own_width(db, columns):
    for args in (["--db", str(db), "show", "1"], ["explain", "--plan", str(PLAN), str(SHAPE_G)]):
        out = _on_a_tty(args, columns)
        assert max(width(ln) for ln in out.splitlines()) <= columns
        assert any(width(ln) == columns for ln in out.splitlines())  # filled, not cut at a fixed 100/160


@settings(max_examples=300, deadline=None)
@given(
    st.text(alphabet=st.sampled_from(list("ab 7.,\x1b界")), min_size=1, max_size=200),
    st.integers(min_value=8, max_value=120),
    st.data(),
)
def test_fit_keeps_the_part_whole_and_fits(s, cols, data):
    safe = term(s, one_line=True)
    start = data.draw(st.integers(min_value=0, max_value=len(safe) - 1))
    end = data.draw(st.integers(min_value=start + 1, max_value=min(len(safe), start + 6)))
    got = fit(s, cols, (start, end))
    assert safe[start:end] in got
    if width(safe[start:end]) + 2 <= cols:
        assert width(got) <= cols
    assert fit(s, None) == safe and width(fit(s, cols)) <= cols
