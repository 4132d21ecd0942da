"""Records -> Boots: the parse pipeline (vline shape, year resolution, boot splitting).

`parse` reads only *candidate* lines: lines holding a literal of boots.LITERALS or
patterns.LITERALS, plus the TB_CONTEXT lines after each "Traceback (most recent call last)".
It applies that filter itself, so the full record stream and scan.py's pre-filtered stream
give identical boots.
"""
from __future__ import annotations

from datetime import datetime
from typing import Callable, Iterable

from bootlog.boots import TB_CONTEXT, BootSplitter
from bootlog.boots import LITERALS as BOOT_LITERALS
from bootlog.records import Boot, Record
from bootlog.vline import parse_line

_TB = "Traceback (most recent call last)"


def all_literals() -> tuple[str, ...]:
    from bootlog import patterns

    return tuple(dict.fromkeys((*BOOT_LITERALS, *patterns.LITERALS)))


def _literal_test(literals: tuple[str, ...]) -> Callable[[str], bool]:
    try:
        import ahocorasick
    except ImportError:  # plain substring tests: slower, same answer
        return lambda text: any(lit in text for lit in literals)
    auto = ahocorasick.Automaton()
    for lit in literals:
        auto.add_word(lit, lit)
    auto.make_automaton()

    def test(text: str) -> bool:
        for _ in auto.iter(text):
            return True
        return False

    return test


_TEST: Callable[[str], bool] | None = None


def has_literal(text: str) -> bool:
    """True when the line holds any literal the parser or the catalogue reads."""
    global _TEST
    if _TEST is None:
        _TEST = _literal_test(all_literals())
    return _TEST(text)


def parse(records: Iterable[Record], *, year: int | None = None, total_lines: int | None = None,
          continuing: str | None = None) -> list[Boot]:
    """Split a record stream into boots with their figures, config, events and samples.

    year: the year of vLLM's own MM-DD timestamps (records without an envelope time); None means
    the current year.  A log running over New Year bumps the year when the month goes backwards.
    total_lines: physical line count of the source, so the last boot ends at the file's end.
    continuing: status of the stored boot that a resumed read continues; the lines before the
    first start marker then form one Boot with continued=True (merged into it by the store).
    """
    cur_year = year if year is not None else datetime.now().year
    last_month = 0
    remaining = 0  # records still owed as traceback context (the same rule as scan.select)
    splitter = BootSplitter(continuing)
    last_lineno = 0
    for rec in records:
        last_lineno = rec.lineno
        text = rec.text
        literal = has_literal(text)
        keep = literal or remaining > 0
        if remaining > 0:
            remaining -= 1
        if _TB in text and TB_CONTEXT > remaining:
            remaining = TB_CONTEXT
        if not keep:
            continue
        v = parse_line(rec, cur_year)
        if rec.ts is None and v.ts is not None:
            if last_month and v.ts.month < last_month and last_month - v.ts.month >= 6:
                cur_year += 1
                try:
                    v.ts = v.ts.replace(year=cur_year)
                except ValueError:
                    v.ts = None
            if v.ts is not None:
                last_month = v.ts.month
        splitter.feed(v, literal)
    return splitter.finish(total_lines if total_lines is not None else last_lineno)
