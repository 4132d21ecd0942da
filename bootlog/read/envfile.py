"""Env files: the operator's KEY=VALUE deploy config, read as sh reads it (README "Plans").

A plan quotes its numbers (`${MAXLEN}`), the deploy context stores a redacted snapshot of it
(measure.deploy).  Errors give the line number, never the line: an env_file may point at a file
of secrets.  What reading one may cost is bounded: its size (MAX_TEXT) and what ${...} inserts
(MAX_EXPANDED); plan files are read through the same bounds (judge.plan).
"""

from __future__ import annotations

import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bootlog.errors import PlanError
from bootlog.safe import cut

MAX_MESSAGE = 1000  # columns: a 1 MiB key or value must not make a 1 MiB error line
MAX_EXPANDED = 1 << 20  # characters ${...} may insert into one env file, and into one plan
MAX_TEXT = 4 << 20  # bytes: a plan or env file is a page of text, never a device or a log


@dataclass
class Budget:
    """What is left of a budget: seconds a plan's patterns may still take together this run,
    or characters ${...} expansion may still insert."""

    left: float
    said: bool = False  # its warning, once

    def take(self, n: float) -> bool:
        self.left -= n
        return self.left >= 0


def file_error(what: str, p: Path, msg: str, **data: Any) -> PlanError:
    # (one terminal-safe line: keys and values of a plan copied from elsewhere can hold control characters)
    at = f" line {data['line']}" if data.get("line") else ""
    return PlanError(cut(f"{what} {p}{at}: {msg}", MAX_MESSAGE), path=str(p), **data)


def not_utf8(e: UnicodeDecodeError, show_byte: bool = True) -> str:
    """Where a file stops being UTF-8, as an editor shows it (the byte itself only for a plan:
    an env file may be a file of secrets)."""
    line = e.object.count(b"\n", 0, e.start) + 1
    col = e.start - (e.object.rfind(b"\n", 0, e.start) + 1) + 1
    hint = " (UTF-16? save it as UTF-8)" if e.object[:2] in (b"\xff\xfe", b"\xfe\xff") else ""
    byte = f"byte 0x{e.object[e.start]:02x} at " if show_byte else ""
    return f"line {line}: not UTF-8 text ({byte}column {col}){hint}"


TOO_BIG = f"expanding makes more than {MAX_EXPANDED >> 20} MiB of text (references that double each other?)"


# ---------------------------------------------------------------------------- env files

_WORDS = {
    "true": True,
    "yes": True,
    "on": True,
    "false": False,
    "no": False,
    "off": False,
    "": None,
    "none": None,
    "null": None,
}


def coerce(text: str) -> Any:
    """An env/config string as the value it means: '' -> None, ints, floats, booleans."""
    s = text.strip()
    if s.lower() in _WORDS:
        return _WORDS[s.lower()]
    try:
        return int(s.replace("_", "")) if re.fullmatch(r"[+-]?\d[\d_]*", s) else float(s)
    except ValueError:
        return s


def _a(what: str) -> str:
    return ("an " if what[0] in "aeiou" else "a ") + what


def read_small(p: Path, what: str) -> str:
    """A regular file of at most MAX_TEXT bytes (a FIFO would block, /dev/zero would fill the
    memory), as UTF-8."""
    fd = os.open(p, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))  # (a FIFO opens without a writer)
    with os.fdopen(fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise file_error(what, p, "not a regular file")
        if os.path.realpath(p).startswith(("/proc/", "/sys/")):
            # (/proc/self/environ is a "regular file": bootlog's own environment, secrets and all)
            raise file_error(what, p, f"a file of the kernel's (/proc, /sys), not {_a(what)}")
        data = f.read(MAX_TEXT + 1)
    if len(data) > MAX_TEXT:
        raise file_error(what, p, f"larger than {MAX_TEXT >> 20} MiB: not {_a(what)}")
    if b"\0" in data:  # (NUL-separated records: no text file a person writes)
        raise file_error(what, p, "holds NUL bytes: not a text file", line=data.count(b"\n", 0, data.index(b"\0")) + 1)
    return data.decode("utf-8")


# One shell word is a list of segments: ("exp", text) where $NAME / ${NAME} is expanded
# (unquoted or "double-quoted" text), ("lit", text) taken as is ('single-quoted' text, a
# backslash-escaped character).
_Segments = list[tuple[str, str]]
# a part of a word: 'single-quoted', "double-quoted", a backslash and its character, plain text
_PART = re.compile(r"""'([^']*)'|"((?:[^"\\]|\\.)*)"|\\(.)|([^ \t'"\\]+)""", re.S)
# inside "…", a backslash escapes only $ ` " \ (as in sh)
_DQ_PART = re.compile(r'\\([$`"\\])|(\\)|([^\\]+)', re.S)
_UNCLOSED = {
    "'": "unterminated ' quote (a value spanning lines is not read)",
    '"': 'unterminated " quote (a value spanning lines is not read)',
    "\\": "a line ending in a backslash (continued lines are not read)",
}
_ASSIGN = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)=")
NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}|\$([A-Za-z_][A-Za-z0-9_]*)")  # env files: shell forms


def _shell_words(line: str) -> list[tuple[_Segments, bool]]:
    """The words of one env-file line as sh splits them: (segments, quoted); a # that starts a
    word starts a comment.  ValueError(reason) for what sh would read differently from a single
    line of assignments (an open quote, a continued line)."""
    words: list[tuple[_Segments, bool]] = []
    i, n = 0, len(line)
    while True:
        while i < n and line[i] in " \t":
            i += 1
        if i >= n or line[i] == "#":
            return words
        segs: _Segments = []
        quoted = False
        while i < n and line[i] not in " \t":
            m = _PART.match(line, i)
            if not m:
                raise ValueError(_UNCLOSED[line[i]])
            single, double, escaped, plain = m.groups()
            if double is not None:
                segs += [("lit", e or b) if e or b else ("exp", t) for e, b, t in _DQ_PART.findall(double)]
            elif plain is None:
                segs.append(("lit", escaped if single is None else single))
            else:
                segs.append(("exp", plain))
            quoted, i = quoted or plain is None, m.end()
        words.append((segs, quoted))


def _env_line(line: str) -> list[tuple[str, _Segments, bool]]:
    """(name, value segments, quoted) of each `NAME=value` of one line, after an optional
    `export` (which may also name variables without a value: those set nothing here).
    ValueError(reason) for anything else; the reason never quotes the line."""
    words = _shell_words(line)
    export = bool(words) and words[0] == ([("exp", "export")], False)
    if export:
        words = words[1:]
    out = []
    for k, (segs, quoted) in enumerate(words):
        m = _ASSIGN.match(segs[0][1]) if segs and segs[0][0] == "exp" else None
        if m:
            rest = segs[0][1][m.end() :]
            out.append((m.group(1), ([("exp", rest)] if rest else []) + segs[1:], quoted))
            continue
        bare = len(segs) == 1 and segs[0][0] == "exp" and NAME.fullmatch(segs[0][1])
        if export and bare:
            continue  # `export NAME`: marks a variable, sets nothing
        after = words[k + 1][0] if k + 1 < len(words) else []
        if k == 0 and bare and after and after[0][1].startswith("="):
            raise ValueError("spaces around = (sh would run the name as a command): write NAME=value")
        if out:
            raise ValueError("an unquoted space in a value (sh would run the rest as a command): quote the value")
        raise ValueError("not KEY=VALUE (an assignment NAME=value, or a # comment)")
    return out


def _loop(start: str, target: str, refs: dict[str, set[str]]) -> list[str] | None:
    """A chain of references start -> ... -> target, if there is one (breadth first)."""
    seen, paths = {start}, [[start]]
    while paths:
        nxt = []
        for path in paths:
            for r in sorted(refs.get(path[-1], ())):
                if r == target:
                    return path + [r]
                if r not in seen:
                    seen.add(r)
                    nxt.append(path + [r])
        paths = nxt
    return None


class Env(dict):
    """An env file's values; `unset`: name -> (the name its value referred to that is set
    neither above it in the file nor in the environment, line): sh reads such a reference as
    empty, and a plan quoting that value is told so instead of comparing "None"."""

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self.unset: dict[str, tuple[str, int]] = {}


def load_env(path: str | Path) -> dict[str, Any]:
    """An env file as sh reads it: `#` comments, blank lines, `export`, 'single' and "double"
    quotes, backslashes, several NAME=value on a line; `$NAME` / `${NAME}` of a name set above
    or in the environment.  Values are coerced (coerce); a quoted one stays text unless it reads
    as a number.  Errors say which line is wrong, never what it holds."""
    p = Path(path)
    try:
        content = read_small(p, "env file")
    except OSError as e:
        raise file_error("env file", p, e.strerror or str(e)) from e
    except UnicodeDecodeError as e:
        raise file_error("env file", p, not_utf8(e, show_byte=False)) from None
    lines = []
    # sh ends a line at \n only (str.splitlines would also split at \x85, \u2028, ...)
    for no, line in enumerate(content.removeprefix("\ufeff").split("\n"), 1):  # (a BOM some editors write)
        try:
            assigns = _env_line(line.removesuffix("\r"))
        except ValueError as e:
            raise file_error("env file", p, str(e), line=no) from None
        if assigns:
            lines.append((no, assigns))
    first: dict[str, int] = {}  # name -> line it is first set on
    refs: dict[str, set[str]] = {}  # name -> names its values refer to
    for no, assigns in lines:
        for name, segs, _ in assigns:
            first.setdefault(name, no)
            refs.setdefault(name, set()).update(
                m.group(1) or m.group(2) for kind, text in segs if kind == "exp" for m in _VAR.finditer(text)
            )
    text: dict[str, str] = {}  # values as text (what a later ${NAME} inserts)
    budget = Budget(MAX_EXPANDED)
    env = Env()

    def ref(name: str, owner: str, no: int) -> str:
        """What ${name} inserts on line `no` (assigning `owner`)."""
        if name in text:
            v = text[name]
        elif first.get(name, no) > no:
            # sh would read it from the environment (or as empty) before this file sets it
            chain = _loop(name, owner, refs)
            if chain:
                path = " → ".join([owner, *chain])
                nos = ", ".join(str(first[n]) for n in [owner, *chain[:-1]])
                raise file_error(
                    "env file",
                    p,
                    f"${{{owner}}} and ${{{name}}} refer to each other "
                    f"({path}, lines {nos}): a value cannot be made of itself",
                    line=None,
                )
            raise file_error(
                "env file",
                p,
                f"${{{name}}} is set below, on line {first[name]}: sh "
                "reads it here before it is set (move that line up)",
                line=no,
            )
        elif name in os.environ:
            v = os.environ[name]
        else:
            v = ""  # (sh's reading; a plan that uses the value is told: Env.unset)
            env.unset.setdefault(owner, (name, no))
        if not budget.take(len(v)):
            raise file_error("env file", p, f"${{{name}}}: {TOO_BIG}", line=no)
        return v

    for no, assigns in lines:
        for name, segs, quoted in assigns:
            raw = "".join(
                seg if kind == "lit" else _VAR.sub(lambda m: ref(m.group(1) or m.group(2), name, no), seg)  # noqa: B023  (called at once)
                for kind, seg in segs
            )
            text[name] = raw
            # a quoted value stays text unless it reads as a number; "" still means unset
            env[name] = coerce(raw) if (not quoted or raw == "" or _numberish(raw)) else raw
    return env


def _numberish(s: str) -> bool:
    return bool(re.fullmatch(r"[+-]?(\d[\d_]*\.?\d*|\.\d+)([eE][+-]?\d+)?", s.strip()))
