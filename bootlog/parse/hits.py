"""What the line readers share: a fact read off one line (Hit), numbers as vLLM prints them
(decimal), and the readers' regexes (compile_rx: ASCII digits only)."""

from __future__ import annotations

import re as _re
from dataclasses import dataclass
from typing import Any

import regex as re  # (the readers' regexes use its syntax; `_re` is the standard library's)


@dataclass(slots=True)
class Hit:
    """One fact read off one line.  By kind: metric (value int|float, unit from UNITS; detail =
    the line's other named groups), boot (vllm_version | engine "v0"/"v1" | model), config
    (value dict[str, str] as printed; detail["source"]: engine_config | non_default_args |
    namespace | chunked_prefill), stat (name "stats", value dict[str, float]; detail engine_index
    / engines_aggregated, or part="spec_decode"), event (name the event kind, value the line's
    text, detail its figures) and mark (a line that says where the boot is — the stop was
    asked for, the engine died, a phase began or ended — which boots.py turns into the boot's
    end, its failure or a figure spanning two lines; value the line's text, detail its groups)."""

    kind: str
    name: str
    value: Any  # (by kind: see the docstring)
    unit: str | None
    pattern: str
    detail: dict


class NotDecimal(ValueError):
    """Text where a figure was expected that is no number as vLLM prints one (decimal)."""


_DECIMAL = _re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")


def decimal(text: str) -> int | float:
    """A number as vLLM prints one: '1,350,182' -> 1350182, '0.53' -> 0.53, 'nan' -> nan
    (thousands separators dropped).  ASCII decimal only: int() and float() also read "１.５",
    "٣.٥" and "1_0", which no vLLM prints: ValueError, as for "0x10" (a figure read wrong is
    worse than a figure not read)."""
    t = text.replace(",", "").strip()
    low = t.lower()
    if low in ("nan", "inf", "-inf", "+inf"):
        return float(low)
    if not _DECIMAL.fullmatch(t):
        raise NotDecimal(f"not a decimal number: {t[:40]!r}")
    if "." in t or "e" in low:
        return float(t)
    return int(t)


def compile_rx(pattern: str, flags: int = 0) -> Any:
    """A regex of the catalogue: \\d \\w \\s \\b match ASCII only (a fullwidth or
    Arabic-Indic digit is no digit of a figure: float() would read it as one)."""
    return re.compile(pattern, flags | re.ASCII)


def unreadable_number(e: ValueError) -> bool:
    """Whether `e` is Python refusing to read an int of over 4,300 digits (sys.set_int_max_str_digits),
    or decimal() refusing a number vLLM would not print: a hostile or corrupted log can hold such
    a number anywhere, and it is then no figure."""
    return isinstance(e, NotDecimal) or "integer string conversion" in str(e)


def maybe_num(v: str) -> object:
    try:
        return decimal(v)
    except ValueError:
        return v


NUM = r"-?\d+(?:\.\d+)?"  # a %.2f / format_gib / %d figure, possibly negative
TOK = r"\d{1,3}(?:,\d{3})+|\d+"  # a token count, with or without thousands separators
