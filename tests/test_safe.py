"""bootlog.safe: hostile log text made harmless for a terminal, Markdown, CSV and HTML.

The inputs are what a log can carry in a model name, a config value or an error message
(issue 23 items 1-3): terminal escape sequences, CR/BS overwrites, raw HTML, backticks that
close a code span, spreadsheet formulas.
"""

from __future__ import annotations

import csv
import io
import json
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import markdown_util

from bootlog.safe import csv_cell, cut, html, json_text, md_cell, md_code, md_fence, md_text, term, width

TITLE = "\x1b]0;pwned\x07Qwen"  # OSC 0: sets the window title, BEL ends it
LINK = "\x1b]8;;http://evil\x1b\\click\x1b]8;;\x1b\\"  # OSC 8 hyperlink, ST = ESC \
CSI8 = "\u009b31mred"  # 8-bit CSI: colours on terminals that take C1 controls
OVERWRITE = "a\rb\bc"  # CR and BS rewrite what was printed
HOSTILE = [TITLE, LINK, CSI8, OVERWRITE, "\x1b[2J\x1b[Hcleared", "x\u202eevil", "\x00\x7f\x85"]

# every byte a terminal acts on: C0 but tab/newline, DEL, C1
RAW_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")


@pytest.mark.parametrize("s", HOSTILE)
def test_term_leaves_no_control_character(s):
    out = term(s)
    assert not RAW_CONTROL.search(out)
    assert "\u202e" not in out
    assert not RAW_CONTROL.search(term(s, one_line=True))


def test_term_visible_forms():
    assert term(TITLE) == "\\x1b]0;pwned\\x07Qwen"
    assert term(LINK) == "\\x1b]8;;http://evil\\x1b\\click\\x1b]8;;\\x1b\\"
    assert term(CSI8) == "\\x9b31mred"
    assert term(OVERWRITE) == "a\\rb\\x08c"
    assert term("x\u202eevil") == "x\\u202eevil"
    assert term("\ud800") == "\\ud800"  # a lone surrogate would make printing itself fail


def test_term_keeps_ordinary_text():
    for s in (
        "Qwen3.8-Flash-Next-Uncensored-FP8",
        "/home/dank/models/x",
        "tab\there",
        "日本語",
        "line\nnext",
        "C:\\models",
    ):
        assert term(s) == s
    assert term("tab\tand\nnl", one_line=True) == "tab\\tand\\nnl"
    assert term(42) == "42"


@pytest.mark.parametrize("s", HOSTILE + ["plain but much too long for the cell"])
@pytest.mark.parametrize("cols", [1, 3, 5, 8, 12])
def test_cut_never_leaves_half_an_escape(s, cols):
    out = cut(s, cols)
    assert width(out) <= cols
    assert not RAW_CONTROL.search(out)
    body = out.removesuffix("…")
    # the kept part is a prefix of the whole escaped text, ending between two escapes
    assert term(s, one_line=True).startswith(body)
    assert not re.search(r"\\(x[0-9a-f]?|u[0-9a-f]{0,3})$", body)


def test_cut_counts_wide_characters_and_keeps_short_text():
    assert cut("short", 10) == "short"
    out = cut("日本語のモデル名", 7)
    assert out == "日本語…" and width(out) == 7
    assert cut(TITLE, 4) == "…"  # "\\x1b" does not fit in 3 columns: not "\\x1…"
    assert cut(TITLE, 6) == "\\x1b]…"


MARKUP = [
    "<img src=x onerror=alert(1)>",
    "[click](http://evil)",
    "![i](http://t/p.png)",
    "*b*",
    "_i_",
    "~~s~~",
    "`c`",
    "a|b",
    "&#60;",
    "<http://evil>",
    "[x]: http://evil",
    "__init__",
    "\\*not*",
    "end\\",
]


@pytest.mark.parametrize("s", MARKUP)
@pytest.mark.parametrize("where", ["- ", "text "])  # a list item's start (a block start), mid-line
def test_md_text_renders_as_the_text_with_no_markup(s, where):
    md = where + md_text(s, one_line=True, inline=where == "text ")
    assert markdown_util.inert(md, frozenset({"p", "ul", "li"})) == [("" if where == "- " else where) + s]


def test_md_text_block_starts_and_controls_render_as_text():
    text = "# heading\n- item\n1. first\n> quote\n=\n---\n" + TITLE
    md = md_text(text)
    assert markdown_util.tags(md) == {"p"}  # one paragraph: no heading, list, quote or rule
    assert markdown_util.texts(md) == [term(text)]
    assert "\x1b" not in md and "\x07" not in md


@pytest.mark.parametrize(
    "s, source",
    [
        # what the hook writes for a commit message: only what Markdown would act on is escaped
        ("CUDA graphs -0.05 GiB / -0.07 GiB", "CUDA graphs -0.05 GiB / -0.07 GiB"),
        ("torch.compile 4.21 s", "torch.compile 4.21 s"),
        ("4.21 s", "4.21 s"),
        ("-0.05 GiB", "-0.05 GiB"),
        ("kv_cache_tokens 398,658 (a & b)", "kv_cache_tokens 398,658 (a & b)"),
    ],
)
def test_md_text_leaves_plain_text_alone(s, source):
    assert md_text(s, one_line=True, inline=True) == source
    assert md_text(s, one_line=True) == source  # (none of these opens a block either)


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("ab1. -_*`[]()<>&#;!|~=+\\:/\t\nxé")), max_size=30), st.booleans())
def test_md_text_renders_any_text_as_itself(s, at_start):
    where = "- " if at_start else "text "
    md = where + md_text(s, one_line=True, inline=not at_start)
    got = markdown_util.inert(md, frozenset({"p", "ul", "li"}))
    # (a paragraph's or list item's edge spaces are layout, not text)
    want = term(s, one_line=True).strip(" ") if at_start else (where + term(s, one_line=True)).rstrip(" ")
    assert got == ([want] if want else [])


def test_md_code_fence_is_longer_than_any_backtick_run():
    msg = "ValueError: bad `x` then ``y`` `<img src=x onerror=alert(1)>`"
    out = md_code(msg)
    fence = re.match(r"`+", out).group()
    assert len(fence) == 3 and out.endswith(fence)
    inner = out[len(fence) : -len(fence)]
    assert "```" not in inner  # nothing inside closes the span
    assert md_code("`") == "`` ` ``"  # padded: CommonMark strips one space each side
    assert md_code("a\n\n<b>x") == "`a\\n\\n<b>x`"  # a blank line would end the span
    assert md_code("") == ""


def test_md_fence_and_cell():
    block = md_fence("line one\n````\nline three\x1b[0m")
    first, *_, last = block.splitlines()
    assert first == last == "`````"
    assert "\x1b" not in block
    assert md_cell("a|b\nc") == "a\\|b\\nc"
    assert md_cell("x|`y`", code=True) == "`` x\\|`y` ``"


def test_md_table_row_stays_one_row():
    cells = [md_cell(s) for s in ("a|b", "multi\nline", "<script>", TITLE)]
    row = "| " + " | ".join(cells) + " |"
    assert "\n" not in row
    assert row.count("|") - row.count("\\|") == len(cells) + 1


@pytest.mark.parametrize(
    "value, written",
    [
        ('=HYPERLINK("http://x","y")', '\'=HYPERLINK("http://x","y")'),
        ("-cmd", "'-cmd"),
        ("+SUM(A1)", "'+SUM(A1)"),
        ("@SUM(A1)", "'@SUM(A1)"),
        ("\t=1", "'\t=1"),
        ("\r=1", "\\r=1"),
        ("\x1b]0;t\x07", "\\x1b]0;t\\x07"),
        ("-1.5", "-1.5"),
        ("+3", "+3"),
        ("-2e-3", "-2e-3"),
        ("Qwen3", "Qwen3"),
        ("", ""),
        (-1.5, -1.5),
        (7, 7),
        (None, None),
        (True, True),
    ],
)
def test_csv_cell(value, written):
    assert csv_cell(value) == written


def test_csv_cell_through_the_csv_module():
    buf = io.StringIO()
    csv.writer(buf).writerow([csv_cell(v) for v in ('=HYPERLINK("http://x","y")', -1.5, "-1.5")])
    assert buf.getvalue().startswith('"\'=HYPERLINK(""http://x"",""y"")",-1.5,-1.5')


def test_html():
    assert html('<img src=x onerror="alert(1)">') == "&lt;img src=x onerror=&quot;alert(1)&quot;&gt;"
    assert html(TITLE) == "\\x1b]0;pwned\\x07Qwen"


def test_json_text_is_the_same_json_without_raw_controls():
    # json.dumps(ensure_ascii=False), as `show --json` prints, escapes C0 but leaves DEL, C1
    # (8-bit CSI) and bidi controls raw
    doc = {"model": CSI8 + TITLE + "x\u202eevil\x7f", "name": "日本語", "n": 1}
    raw = json.dumps(doc, ensure_ascii=False)
    assert "\x9b" in raw
    out = json_text(raw)
    assert json.loads(out) == doc
    assert not RAW_CONTROL.search(out) and "\u202e" not in out and "日本語" in out
