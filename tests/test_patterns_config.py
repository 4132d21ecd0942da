"""The config tokenizer (parse/reprs.py) and caches against their definitions.

* The config tokenizer (_skip_string, _split_top, _clean_value) against per-character reference
  definitions below: on every config line of the fixture logs and the catalogue samples, and on
  random strings made of the characters the tokenizer acts on.
* _clean_value's shortcut for plain quoted strings against ast.literal_eval itself.
* The cached config parsers hand each caller its own dict.
* match()'s cache of recent lines gives what matching afresh gives, and no caller can change
  what it holds.
"""

from __future__ import annotations

import ast
import random
from datetime import datetime
from pathlib import Path

import pytest

from bootlog.parse import patterns as P
from bootlog.parse import reprs as R
from bootlog.records import Record
from bootlog.parse.vline import parse_line

ROOT = Path(__file__).resolve().parent.parent
LOGS = sorted((ROOT / "fixtures" / "logs").glob("*.log")) + sorted((ROOT / "fixtures" / "logs" / "seed").glob("*.log"))
CONFIG_MARKERS = ("with config: ", "non-default args: {", "args: Namespace(")


# ---------------------------------------------------------------------------------------------
# the reference: the tokenizer as it was before its fast paths (one Python step per character)

_CLOSERS = {"(": ")", "[": "]", "{": "}"}
_QUOTE_OK_BEFORE = set("=:,[({ \t")


def _skip_string_ref(s: str, i: int) -> int:
    q = s[i]
    j = i + 1
    n = len(s)
    while j < n:
        c = s[j]
        if c == "\\":
            j += 2
            continue
        if c == q:
            return j + 1
        j += 1
    return n


def _split_top_ref(s: str, start: int = 0) -> tuple[list[str], int]:
    parts: list[str] = []
    stack: list[str] = []
    seg = start
    i = start
    n = len(s)
    while i < n:
        c = s[i]
        if c in "'\"" and (i == start or s[i - 1] in _QUOTE_OK_BEFORE):
            i = _skip_string_ref(s, i)
            continue
        if c in _CLOSERS:
            stack.append(_CLOSERS[c])
        elif c == "<" and i + 1 < n and (s[i + 1].isalpha() or s[i + 1] == "_"):
            stack.append(">")
        elif c in ")]}>":
            if stack and stack[-1] == c:
                stack.pop()
            elif c == ">":
                pass
            elif not stack:
                parts.append(s[seg:i])
                return parts, i
            elif c in stack:
                while stack and stack.pop() != c:
                    pass
        elif c == "," and not stack:
            parts.append(s[seg:i])
            seg = i + 1
        i += 1
    parts.append(s[seg:])
    return parts, n


def _clean_value_ref(v: str) -> str:
    v = v.strip()
    if len(v) >= 2 and v[0] in "'\"" and _skip_string_ref(v, 0) == len(v):
        try:
            out = ast.literal_eval(v)
            if isinstance(out, str):
                return out
        except (ValueError, SyntaxError):
            pass
        return v[1:-1]
    return v


def _outcome(fn, *args):
    """fn(*args), or the type of what it raised (the fast path must fail the same way)."""
    try:
        return fn(*args)
    except Exception as e:  # noqa: BLE001 - any difference counts
        return type(e)


# ---------------------------------------------------------------------------------------------
# inputs: every config line we have, and random tokenizer food


def _config_starts(msg: str) -> list[int]:
    """Where parse_config starts tokenizing msg (engine config, dict body, Namespace body)."""
    out = []
    m = R._ENGINE_CONFIG.search(msg)
    if m:
        out.append(m.end())
    for marker in ("non-default args: {", "args: Namespace("):
        i = msg.find(marker)
        if i >= 0:
            out.append(i + len(marker))
    return out


def _config_lines() -> list[str]:
    lines = [line for p in P.CATALOGUE for line, _ in p.samples if any(k in line for k in CONFIG_MARKERS)]
    for path in LOGS:
        with open(path, encoding="utf-8", errors="replace") as f:
            lines += [ln.rstrip("\n") for ln in f if any(k in ln for k in CONFIG_MARKERS)]
    return list(dict.fromkeys(lines))


CONFIG_LINES = _config_lines()


def _literal_lines() -> list[str]:
    """Catalogue samples, and each fixture line holding a literal: the raw line and its message."""
    lines = [line for p in P.CATALOGUE for line, _ in p.samples]
    for path in LOGS:
        with open(path, encoding="utf-8", errors="replace") as f:
            for n, ln in enumerate(f, 1):
                ln = ln.rstrip("\n")
                if any(lit in ln for lit in P.LITERALS):
                    lines += [ln, parse_line(Record(lineno=n, text=ln)).msg]
    return list(dict.fromkeys(lines))


LITERAL_LINES = _literal_lines()


def _random_strings(n: int, seed: int = 7) -> list[str]:
    rnd = random.Random(seed)
    alphabet = list("'\"()[]{}<>,=: \t\\ab_1.") + ["\n", "\x00", "\u00e9", "\u00a0", "\ud800", "'abc'", '"x y"', "<E"]
    return ["".join(rnd.choice(alphabet) for _ in range(rnd.randint(0, 40))) for _ in range(n)]


RANDOM = _random_strings(20000)


def test_inputs_are_there():
    assert len(CONFIG_LINES) >= 40
    assert sum("with config: " in ln for ln in CONFIG_LINES) >= 20
    assert sum("non-default args: {" in ln for ln in CONFIG_LINES) >= 10
    assert any("args: Namespace(" in ln for ln in CONFIG_LINES)
    assert len(LITERAL_LINES) >= 2000


# ---------------------------------------------------------------------------------------------
# the tokenizer


def test_split_top_equals_reference_on_config_lines():
    n = 0
    for line in CONFIG_LINES:
        for start in _config_starts(line):
            assert R._split_top(line, start) == _split_top_ref(line, start), line
            n += 1
    assert n >= len(CONFIG_LINES)


@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # literal_eval of "\\)" and the like
def test_tokenizer_equals_reference_on_random_strings():
    rnd = random.Random(11)
    for s in RANDOM:
        start = rnd.randint(0, len(s))
        assert R._split_top(s, start) == _split_top_ref(s, start), (s, start)
        for i, c in enumerate(s):
            if c in "'\"":
                assert R._skip_string(s, i) == _skip_string_ref(s, i), (s, i)
        assert _outcome(R._clean_value, s) == _outcome(_clean_value_ref, s), s


def test_clean_value_equals_reference_on_every_config_value():
    values = 0
    for line in CONFIG_LINES:
        for start in _config_starts(line):
            parts, _ = _split_top_ref(line, start)
            for raw in parts:
                # the value after "=" or ":" and the key before it, as both parsers clean them
                for piece in {raw, *raw.partition("=")[::2], *raw.partition(":")[::2]}:
                    assert _outcome(R._clean_value, piece) == _outcome(_clean_value_ref, piece), piece
                    values += 1
    assert values > 1000


@pytest.mark.parametrize(
    "v",
    [
        "'a'",
        "''",
        '"it\'s"',
        "'a\\'b'",
        "'tab\there'",
        "'nl\nx'",
        "'nbsp\u00a0x'",
        "'\u00e9t\u00e9'",
        "'unterminated",
        "'mixed\"",
        "'\\x41'",
        "'nul\x00x'",
        "'lone \ud800'",
        "'\\'",
        "'a' 'b'",
    ],
)
@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_clean_value_shortcut_is_literal_eval(v):
    assert _outcome(R._clean_value, v) == _outcome(_clean_value_ref, v)


# ---------------------------------------------------------------------------------------------
# the cached parsers


def test_config_parse_equals_reference_and_is_a_fresh_dict(monkeypatch):
    fast = {line: R.parse_config(line) for line in CONFIG_LINES}
    # the same parse built on the reference tokenizer, with no cache in the way
    monkeypatch.setattr(R, "_split_top", _split_top_ref)
    monkeypatch.setattr(R, "_skip_string", _skip_string_ref)
    monkeypatch.setattr(R, "_clean_value", _clean_value_ref)
    monkeypatch.setattr(R, "kv_list_at", R._kv_list)
    monkeypatch.setattr(R, "dict_at", R._dict)
    for line in CONFIG_LINES:
        ref = R.parse_config(line)
        assert fast[line] == ref and list(fast[line]) == list(ref), line
    monkeypatch.undo()
    # a caller may change what it got (parse_config adds max_model_len): the next one must not see it
    line = next(ln for ln in CONFIG_LINES if "with config: " in ln)
    first = R.parse_config(line)
    first["bogus"] = "x"
    first.clear()
    again = R.parse_config(line)
    assert again == fast[line] and again is not first
    hits = [h for h in P.match(line) if h.kind == "config"]
    hits[0].value["bogus"] = "y"
    assert [h.value for h in P.match(line) if h.kind == "config"][0] == fast[line]


# ---------------------------------------------------------------------------------------------
# match(): which literals a line holds


def _literal_soup(n: int, seed: int = 5) -> list[str]:
    """Lines made of literals, their halves and filler: overlaps, repeats and near misses."""
    rnd = random.Random(seed)
    lits = list(P.LITERALS)
    pieces = (
        lits + [lit[: len(lit) // 2] for lit in lits] + [lit[len(lit) // 2 :] for lit in lits] + [" ", "x", "\u00e9"]
    )
    return ["".join(rnd.choice(pieces) for _ in range(rnd.randint(0, 8))) for _ in range(n)]


def _hit_key(hits: list[P.Hit]) -> list:
    # repr() spells nan "nan" on both sides, and keeps dict order
    return [repr((h.kind, h.name, h.value, h.unit, h.pattern, h.detail)) for h in hits]


_SCALARS = (str, int, float, bool, type(None))


def test_match_cached_equals_afresh_and_hits_are_flat():
    P._match_cached.cache_clear()
    n = 0
    for line in LITERAL_LINES:
        want = P._match(line) if "Received request " not in line else ()
        first, again = P.match(line), P.match(line)  # a miss, then a hit
        assert _hit_key(first) == _hit_key(again) == _hit_key(want), line
        for h in first:
            # match() copies value and detail one level deep: that is enough only while they
            # hold scalars
            assert type(h.detail) is dict and all(isinstance(x, _SCALARS) for x in h.detail.values()), h
            if isinstance(h.value, dict):
                assert type(h.value) is dict and all(isinstance(x, _SCALARS) for x in h.value.values()), h
            else:
                assert isinstance(h.value, _SCALARS), h
            n += 1
    assert n >= 2000


def test_match_callers_cannot_change_the_cache():
    lines = [line for line in LITERAL_LINES if P.match(line)]
    # few enough to stay cached: config and stats lines (dict values) first
    lines = sorted(lines, key=lambda ln: not any(isinstance(h.value, dict) for h in P.match(ln)))[: P._MATCH_CACHE // 2]
    assert sum(isinstance(h.value, dict) for ln in lines for h in P.match(ln)) >= 100
    want = [_hit_key(P._match(line)) for line in lines]
    hits_before = P._match_cached.cache_info().hits
    for line in lines:
        for h in P.match(line):
            if isinstance(h.value, dict):
                h.value["bogus"] = 1
                h.value.pop(next(iter(h.value)))
            h.detail["bogus"] = 2
            h.value, h.pattern, h.name = "changed", "changed", "changed"
    assert [_hit_key(P.match(line)) for line in lines] == want
    assert P._match_cached.cache_info().hits - hits_before == 2 * len(lines)  # (served by the cache)


# ---------------------------------------------------------------------------------------------
# vline.parse_line: the tag runs and timestamps it looks up instead of reading afresh


def _vllm_ts_ref(m, rec, year):
    """vline._vllm_ts as it was: the datetime built for every line."""
    if rec.ts is not None:
        return rec.ts
    if year is None:
        return None
    try:
        return datetime(year, int(m["mo"]), int(m["d"]), int(m["h"]), int(m["mi"]), int(m["s"]))
    except ValueError:
        return None


def _vline_key(v) -> tuple:
    return tuple(getattr(v, f) for f in v._fields)


def _tag_soup(n: int, seed: int = 3) -> list[str]:
    """Lines opening with runs of process tags (well formed or nearly), then a vLLM prefix or not."""
    rnd = random.Random(seed)
    tags = [
        "(APIServer pid=1) ",
        "(APIServer pid=1)",
        "(EngineCore_DP0 pid=89) ",
        "(Worker_TP1 pid=147) ",
        "(VllmWorker rank=1 pid=2) ",
        "(VllmWorker TP0 pid=3) ",
        "(RayWorkerWrapper pid=4, ip=10.0.0.1) ",
        "(pid=5, ip=10.0.0.2) ",
        "(pid=6) ",
        "(RayWorkerProc pid=9, ip=10.0.0.2)\t",
        "(Worker pid=7)  ",
        "(Bad name pid=8) ",
        "(APIServer pid=x) ",
        "(",
        ") ",
        "junk",
        "\u00e9",
    ]
    heads = [
        "INFO 10-02 16:53:01 [utils.py:344] hello",
        "WARN 02-29 23:59:59 [a.py:1] leap",
        "ERROR 13-40 25:61:61 x.py:2] bad time",
        "INFO:     uvicorn",
        "DEBUG 01-27 22:06:26 [v1/core.py:93] d",
        "INFO 10-02 16:53:01,123 [utils.py:344] ms",
        "plain text",
        "",
    ]
    return ["".join(rnd.choice(tags) for _ in range(rnd.randint(0, 3))) + rnd.choice(heads) for _ in range(n)]
