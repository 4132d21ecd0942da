"""Text from a log made safe for where bootlog prints it: a terminal, Markdown, CSV, HTML.

A log is written by programs bootlog does not control: a model name, a prompt echoed into an
error, a config value can hold control sequences (window titles, hyperlinks, cursor moves),
Markdown/HTML that turns into live links or images, or spreadsheet formulas.  Every function
here is pure (str in, str out) and safe to call on any input, hostile or not; plain text
comes back unchanged.

The visible form of a character that must not reach the output as itself
(`term`, and the other functions through it):

* `\\t`, `\\n`, `\\r` for tab, newline, carriage return (tab and newline pass through as
  themselves unless the text must stay on one line: a table cell, an error message);
* `\\xHH` for every other C0 control (U+0000–U+001F), DEL (U+007F) and every C1 control
  (U+0080–U+009F, 8-bit CSI U+009B and OSC U+009D among them): ESC is `\\x1b`;
* `\\uHHHH` for the characters that reorder or break lines without being controls to a
  terminal: bidi overrides/isolates/marks (U+061C, U+200E, U+200F, U+202A–U+202E,
  U+2066–U+2069: "Trojan Source"), U+2028/U+2029 line/paragraph separators, and lone
  surrogates (which would make printing fail).

Escaping ESC and the C1 controls is enough to defuse every escape sequence (`ESC ] 0;TITLE
BEL`, `ESC ] 8;;URL ESC \\`, `ESC [ … X`, 8-bit `CSI … X`): what follows the escaped
introducer is printable text.  Backslashes are not doubled: the form is for a reader, not for
a parser (JSON output carries the exact text).
"""

from __future__ import annotations

import html as _html
import re
import unicodedata

__all__ = [
    "term",
    "width",
    "pad",
    "cut",
    "fit",
    "one_line",
    "md_text",
    "md_code",
    "md_fence",
    "md_cell",
    "csv_cell",
    "html",
    "json_text",
    "storable",
]

# C0 but tab and newline, DEL, C1
_CONTROLS = "\x00-\x08\x0b-\x1f\x7f-\x9f"
# bidi marks, embeddings, overrides, isolates; line/paragraph separators; surrogates
_INVISIBLE = "\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069\ud800-\udfff"
_UNSAFE = re.compile(f"[{_CONTROLS}{_INVISIBLE}]")
_UNSAFE_LINE = re.compile(f"[\t\n{_CONTROLS}{_INVISIBLE}]")  # ... where text must stay on one line
_NAMED = {"\t": "\\t", "\n": "\\n", "\r": "\\r"}


def _visible(c: str) -> str:
    """The escaped form of one unsafe character (module docstring)."""
    n = ord(c)
    return _NAMED.get(c) or (f"\\x{n:02x}" if n < 0x100 else f"\\u{n:04x}")


def _sub_visible(m: re.Match) -> str:
    return _visible(m.group())


def term(s: object, *, one_line: bool = False) -> str:
    """`s` as text safe to write to a terminal (a TTY or a pipe read by one): controls and
    invisible reordering characters shown escaped.  one_line: tab and newline escaped too
    (a table cell, a one-line message)."""
    text = s if isinstance(s, str) else str(s)
    return (_UNSAFE_LINE if one_line else _UNSAFE).sub(_sub_visible, text)


def _char_width(c: str) -> int:
    if unicodedata.combining(c) or unicodedata.category(c) in ("Mn", "Me", "Cf"):
        return 0
    return 2 if unicodedata.east_asian_width(c) in ("W", "F") else 1


def width(s: str) -> int:
    """Columns `s` takes on a terminal (wide CJK characters 2, combining marks 0); `s` is
    expected to be term()-safe already."""
    if s.isascii():
        return len(s)
    return sum(_char_width(c) for c in s)


def pad(s: str, cols: int, right: bool = False) -> str:
    """`s` (term()-safe) filled with spaces to `cols` columns, on the left when `right`."""
    fill = " " * max(0, cols - width(s))
    return fill + s if right else s + fill


def cut(s: object, cols: int, tail: str = "…") -> str:
    """`s` as one terminal-safe line of at most `cols` columns, ending in `tail` when cut.
    The text is escaped first and cut between whole characters of the escaped form, so a cut
    never leaves half an escape (`\\x1` of `\\x1b`) or an unfinished sequence behind."""
    text = s if isinstance(s, str) else str(s)
    safe = term(text, one_line=True)
    if width(safe) <= cols:
        return safe
    if cols <= 0:
        return ""
    room = cols - width(tail)
    if room < 0:
        return tail[:cols]
    out: list[str] = []
    used = 0
    for c in text:
        piece = _visible(c) if _UNSAFE_LINE.match(c) else c
        w = width(piece)
        if used + w > room:
            break
        out.append(piece)
        used += w
    return "".join(out) + tail


def fit(s: object, cols: int | None, keep: tuple[int, int] | None = None, tail: str = "…") -> str:
    """`s` as one terminal-safe line of at most `cols` columns (None: as long as it is).  keep:
    the (start, end) of a part of term(s, one_line=True) that must stay whole -- where a figure
    was read -- so when the line is too long it is cut before that part ("…" in front) as well
    as after it; a part wider than `cols` is shown whole all the same."""
    safe = term(s if isinstance(s, str) else str(s), one_line=True)
    if cols is None or width(safe) <= cols:
        return safe
    if keep is None or width(safe[: keep[1]]) <= cols - width(tail):
        return cut(safe, cols, tail)
    start, end = keep
    if width(safe[start:end]) + 2 * width(tail) > cols:
        return tail + safe[start:end] + tail
    # as much of what leads up to the part as fits beside it, then what follows it
    room = cols - width(tail) - width(safe[start:end]) - width(tail)
    lead = start
    while lead > 0 and width(safe[lead - 1 : start]) <= room // 2 + max(0, room // 2 - width(safe[end:])):
        lead -= 1
    return cut(tail + safe[lead:], cols, tail)


_SPACES = re.compile("[\t\n\r\v\f\x85\u2028\u2029]")


def one_line(text: object, limit: int = 200) -> str:
    """`text` (str, or bytes read from a tool) as one short printable line for a message: every
    line break and whitespace run becomes one space, other controls are shown escaped, and the
    result is cut to `limit` columns (what a probe, a GPU tool or a container engine said)."""
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    return cut(" ".join(term(_SPACES.sub(" ", str(text))).split()), limit)


# ---------------------------------------------------------------------------- Markdown

# What CommonMark/GFM acts on wherever it stands: code spans, emphasis, strikethrough, link and
# image openers, table cells, raw HTML and autolinks.  `_` only at a word's edge (inside a word,
# kv_cache_tokens, it never makes emphasis), `&` only where an entity reference could start
# (&#60;), `\` only where it would escape the next character.  `]` needs nothing once every
# `[` is escaped: no link, image, footnote or reference definition can open.
_MD_ALWAYS = {"`": "\\`", "*": "\\*", "~": "\\~", "[": "\\[", "|": "\\|", "<": "&lt;"}
_MD_INLINE = re.compile(r"[`*~\[|<_]|&(?=[#A-Za-z0-9]|\Z)|\\(?=[!-/:-@\[-`{-~]|\Z)")
# what opens a block at the start of a line: a heading, a list item (bullet or ordered), a block
# quote, a thematic break or setext underline; "-0.05" and "4.21 s" open nothing
_MD_BLOCK = re.compile(
    r"^([ \t]{0,3})(#{1,6}(?=[ \t]|$)|[-+](?=[ \t]|$)|>|(?:-[ \t]*)+$|=+[ \t]*$|"
    r"\d{1,9}(?=[.)](?:[ \t]|$)))",
    re.M,
)


def _md_sub(m: re.Match) -> str:
    c = m.group()
    if c == "_":
        s, i = m.string, m.start()
        if 0 < i < len(s) - 1 and s[i - 1].isalnum() and s[i + 1].isalnum():
            return c  # intraword: never emphasis
        return "\\_"
    return _MD_ALWAYS.get(c) or "\\" + c  # (& and \\: escaped where they would act)


def _md_block(m: re.Match) -> str:
    indent, mark = m.groups()
    if mark[0].isdigit():  # "1." -> "1\\.": the dot is what makes the list item
        return f"{indent}{mark}\\"
    return f"{indent}\\{mark}"


def md_text(s: object, *, one_line: bool = False, inline: bool = False) -> str:
    """`s` as Markdown running text that renders as exactly this text: no HTML, no link,
    image, emphasis, code span, heading, quote or list comes out of it; controls shown
    escaped (term).  Only what Markdown would act on in its position is escaped, so the source
    reads as the text in `git log` too ("CUDA graphs -0.05 GiB", "torch.compile 4.21 s").
    inline: the text stands after other text on its line (a sentence, a table cell, a
    heading's words), where a leading "- ", "# " or "1. " is just text; otherwise its first
    line starts a block as every later line does.
    (A bare URL may still be autolinked by GFM: its target is then the text itself.)"""
    out = _MD_INLINE.sub(_md_sub, term(s, one_line=one_line))
    if inline:
        head, nl, rest = out.partition("\n")
        return head + nl + _MD_BLOCK.sub(_md_block, rest) if nl else out
    return _MD_BLOCK.sub(_md_block, out)


def _longest_backtick_run(s: str) -> int:
    return max((len(r) for r in re.findall(r"`+", s)), default=0)


def md_code(s: object) -> str:
    """`s` as an inline code span: delimited by a backtick run longer than any inside it
    (CommonMark), padded when it starts or ends with a backtick or a space, on one line
    (a blank line would end the span and let the rest out as Markdown), controls escaped."""
    body = term(s, one_line=True)
    if body == "":
        return ""
    fence = "`" * (_longest_backtick_run(body) + 1)
    if body[0] == "`" or body[-1] == "`" or (body[0] == " " and body[-1] == " " and body.strip()):
        # CommonMark strips one space each side of a padded span: the value keeps its own
        body = f" {body} "
    return f"{fence}{body}{fence}"


def md_fence(s: object, info: str = "") -> str:
    """`s` as a fenced code block (several lines): the fence is longer than any backtick run
    in the value, so no line of it can close the block; controls escaped."""
    body = term(s)
    fence = "`" * max(3, _longest_backtick_run(body) + 1)
    info = term(info, one_line=True).replace("`", "")  # a backtick fence's info has none
    if not body.endswith("\n"):
        body += "\n"
    return f"{fence}{info}\n{body}{fence}"


def md_cell(s: object, *, code: bool = False) -> str:
    """`s` as one GFM table cell: text (md_text) or a code span (md_code), on one line,
    every `|` escaped (GFM splits cells at a pipe even inside a code span)."""
    if code:
        return md_code(s).replace("|", "\\|")
    return md_text(s, one_line=True, inline=True)  # (md_text escapes | already)


# ---------------------------------------------------------------------------- CSV

_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
_NUMBER = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?")


def csv_cell(v: object) -> object:
    """A value for a CSV cell that no spreadsheet runs as a formula (OWASP "CSV injection"):
    text starting with = + - @ tab or CR gets a leading ', unless it is a plain number
    ("-1.5").  Controls but tab and newline are shown escaped as term() shows them (a CSV is
    printed to a terminal as often as it is opened: `history --csv`; the JSON export keeps the
    exact text).  Non-text values (numbers, None, booleans) are returned as they are."""
    if not isinstance(v, str):
        return v
    v = term(v)
    if v.startswith(_FORMULA_START) and not _NUMBER.fullmatch(v):
        return "'" + v
    return v


# ---------------------------------------------------------------------------- HTML


def html(s: object) -> str:
    """`s` as HTML text or attribute value: & < > " ' escaped, controls made visible (an
    invisible ESC or bidi override in a report hides what the log said)."""
    return _html.escape(term(s), quote=True)


# ---------------------------------------------------------------------------- JSON

# what json.dumps(ensure_ascii=False) leaves raw although a terminal acts on it (it escapes
# C0 itself): DEL, C1 (8-bit CSI ...), bidi controls, line separators, lone surrogates
_JSON_RAW = re.compile(f"[\x7f-\x9f{_INVISIBLE}]")


def json_text(doc: str) -> str:
    """A JSON document made by json.dumps(..., ensure_ascii=False) with the characters above
    written as \\uXXXX escapes: the same JSON value (they can only stand inside strings),
    safe to print (`show --json` on a terminal), still UTF-8 for everything else."""
    return _JSON_RAW.sub(lambda m: f"\\u{ord(m.group()):04x}", doc)


# ---------------------------------------------------------------------------- the database

_SURROGATE = re.compile("[\ud800-\udfff]")


def storable(s: str) -> str:
    """`s` as a database can hold it (UTF-8): a lone surrogate -- what Python's repr of a
    Latin-1 path prints as `\\udcff` reads back as, or a JSON `"\\ud83d"` of a cut emoji -- is
    kept as its escape `\\udcff` (the form term() shows), everything else as it is.  Without it
    one such character failed the whole input's transaction."""
    if s.isascii():
        return s
    return _SURROGATE.sub(_sub_visible, s)
