"""Config lines: a small tokenizer for Python reprs (dicts, Namespace(...), key=value lists), as
vLLM prints its engine config, `non-default args: {...}` and argparse Namespaces."""

from __future__ import annotations

import functools
import re as _re

import regex as re  # (its syntax; `_re` is the standard library's)

from bootlog.parse.hits import compile_rx

_CLOSERS = {"(": ")", "[": "]", "{": "}"}
_QUOTE_OK_BEFORE = set("=:,[({ \t")  # a quote only opens a string at the start of a value
# the characters _split_top acts on: one C-level search hops over everything between them (an
# engine config line is ~2 KB of mostly plain text)
_SPECIAL = _re.compile(r"""['"()\[\]{}<>,]""")


def _skip_string(s: str, i: int) -> int:
    """Index just past the string literal starting at s[i] (a quote); tolerant of no end.  A
    backslash escapes the next character (str.find per quote: a per-character loop was most of a
    config line's cost)."""
    q = s[i]
    j = i + 1
    while True:
        k = s.find(q, j)
        if k < 0:
            return len(s)
        b = s.find("\\", j, k)
        if b < 0:
            return k + 1
        j = b + 2  # past the escaped character (maybe the quote at k: then search on after it)


def _split_top(s: str, start: int = 0) -> tuple[list[str], int]:
    """Split s[start:] at top-level commas, respecting quotes and brackets.

    Stops at the first unmatched closing bracket (the ')' ending Namespace(...) or a V0 config
    line, the '}' ending a dict) and returns (parts, index of that bracket or len(s)).
    Enum reprs like <CUDAGraphMode.FULL: (2, 1)> are treated as brackets so their commas stay.
    """
    search = _SPECIAL.search
    parts: list[str] = []
    stack: list[str] = []
    seg = start
    n = len(s)
    m = search(s, start)
    while m is not None:
        i = m.start()
        c = s[i]
        if c == "'" or c == '"':
            if i == start or s[i - 1] in _QUOTE_OK_BEFORE:
                m = search(s, _skip_string(s, i))
                continue
            # else a quote inside a word ("it's"): plain text
        elif c == ",":
            if not stack:
                parts.append(s[seg:i])
                seg = i + 1
        elif c in _CLOSERS:
            stack.append(_CLOSERS[c])
        elif c == "<":
            if i + 1 < n and (s[i + 1].isalpha() or s[i + 1] == "_"):
                stack.append(">")
        elif stack and stack[-1] == c:  # one of ")]}>"
            stack.pop()
        elif c == ">":
            pass  # a stray '>' is text
        elif not stack:
            parts.append(s[seg:i])
            return parts, i
        elif c in stack:
            # mismatched nesting: unwind to the matching opener rather than give up
            while stack and stack.pop() != c:
                pass
        m = search(s, i + 1)
    parts.append(s[seg:])
    return parts, n


def _clean_value(v: str) -> str:
    """Python spelling kept; a value that is exactly one quoted string loses its quotes."""
    v = v.strip()
    if len(v) >= 2 and v[0] in "'\"" and _skip_string(v, 0) == len(v):
        body = v[1:-1]
        # without a backslash, literal_eval gives the body back or fails (unterminated, a
        # newline or NUL inside), and then the body is the answer too: a config line holds
        # hundreds of such values.  Escapes (and, to be safe, unprintables) go the exact way.
        if "\\" not in body and body.isprintable():
            return body
        import ast  # (rare: not imported by every start)
        import warnings

        try:
            with warnings.catch_warnings():  # "\c" in a Windows-ish path: an invalid escape, read as written
                warnings.simplefilter("ignore")
                out = ast.literal_eval(v)
            if isinstance(out, str):
                return out
        except (ValueError, SyntaxError):
            pass
        return body
    return v


_KEY = compile_rx(r"[A-Za-z_][\w.]*")
# v0.6.3-v0.6.4 print "chunked_prefill_enabled=False multi_step_stream_outputs=True" (no comma)
_GLUED = compile_rx(r"(?P<v>[^\s=,'\"\[\](){}]+) (?P<k>[A-Za-z_]\w*)=(?P<rest>.*)", re.S)


def _kv_list(s: str, start: int) -> dict[str, str]:
    """'a=1, b='x', c={...}' (engine config line, Namespace body) -> {'a': '1', 'b': 'x', ...}."""
    parts, _ = _split_top(s, start)
    out: dict[str, str] = {}
    last: str | None = None
    key_ok = _KEY.fullmatch
    glued = _GLUED.fullmatch
    for raw in parts:
        part = raw.strip()
        if not part:
            continue
        key, eq, val = part.partition("=")
        key = key.strip()
        if not eq or not key_ok(key):
            # an unquoted value that itself held a comma ("a, b"); quoted/bracketed values are whole
            if last is not None and out[last][:1] not in ("'", '"', "[", "(", "{", "<"):
                out[last] = out[last] + "," + raw
            continue
        val = val.strip()
        while g := glued(val):
            out[key] = g["v"]
            key, val = g["k"], g["rest"].strip()
        out[key] = val
        last = key
    return {k: _clean_value(v) for k, v in out.items()}


def _dict(s: str, start: int) -> dict[str, str]:
    """Body of a Python dict repr after its '{' -> {key: value-as-printed}."""
    parts, _ = _split_top(s, start)
    out: dict[str, str] = {}
    for raw in parts:
        part = raw.strip()
        if not part or part[0] not in "'\"":
            continue
        end = _skip_string(part, 0)
        key = _clean_value(part[:end])
        rest = part[end:].lstrip()
        if rest.startswith(":"):
            out[key] = _clean_value(rest[1:])
    return out


# A crash-looping server prints the very same config lines each boot (thousands of boots in one
# log): both parsers are pure functions of (line, start), so their results are cached and each
# caller gets its own copy (callers add keys, e.g. max_model_len).
kv_list_at = functools.lru_cache(maxsize=128)(_kv_list)
dict_at = functools.lru_cache(maxsize=128)(_dict)


# Config keys the engine prints under another name than the run line's: alias -> the name used.
CONFIG_ALIASES = {"max_seq_len": "max_model_len"}


def engine_config_at(msg: str, start: int) -> dict[str, str]:
    cfg = dict(kv_list_at(msg, start))
    for alias, name in CONFIG_ALIASES.items():
        if alias in cfg and name not in cfg:
            cfg[name] = cfg[alias]
    return cfg


_ENGINE_CONFIG = compile_rx(r"Initializing an? (?:V[01] )?LLM engine(?: \(v[^)\s]*\))? with config: ")
_CHUNKED = compile_rx(r"Chunked prefill is enabled with max_num_batched_tokens=(\d+)")


def parse_config(msg: str) -> dict[str, str] | None:
    """Config carried by one line, every key as printed (values in Python spelling).

    Understands the engine config line (`... LLM engine (vX) with config: model='m', ...`; adds
    `max_model_len` from `max_seq_len`), `non-default args: {...}`, V0 `args: Namespace(...)`
    and "Chunked prefill is enabled with max_num_batched_tokens=N".  None for other lines.
    """
    if "with config: " in msg and "LLM engine" in msg and (m := _ENGINE_CONFIG.search(msg)):
        return engine_config_at(msg, m.end())
    for marker, parse in (("non-default args: {", dict_at), ("args: Namespace(", kv_list_at)):
        i = msg.find(marker)
        if i >= 0:
            return dict(parse(msg, i + len(marker)))
    if "Chunked prefill is enabled with" in msg and (m := _CHUNKED.search(msg)):
        return {"max_num_batched_tokens": m.group(1)}
    return None
