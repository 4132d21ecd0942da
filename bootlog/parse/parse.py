"""Records -> Boots: the vLLM line shape, the year of vLLM's MM-DD dates, boot splitting.

`parse` takes candidate records (scan.Lines' lines through the envelope) or every record of a
log: it keeps those holding a literal of the scan (boots.LITERALS + patterns.LITERALS) and the
TB_CONTEXT records after each traceback start, so both give the same boots.

A periodic stats line in the usual shape (most of a big log's candidates) is read whole in one
match (stats.stats_line: vline.PREFIX + a stats wording) and handed to the splitter as a
VLine carrying its figures; every other line is split by vline.parse_line and read by the
catalogue there.
"""

from __future__ import annotations

from datetime import datetime
from typing import Callable, Iterable

from bootlog.parse import patterns, stats
from bootlog.parse.hits import unreadable_number
from bootlog.parse.boots import LITERALS as BOOT_LITERALS
from bootlog.parse.boots import TB_CONTEXT, BootSplitter
from bootlog.records import Boot, Record
from bootlog.read.scan import TRACEBACK, Search
from bootlog.parse.vline import from_prefix, json_exc_lines, parse_line


def all_literals() -> tuple[str, ...]:
    """Every literal the parser or the catalogue reads: what the scan looks for."""
    return tuple(dict.fromkeys((*BOOT_LITERALS, *patterns.LITERALS)))


_SEARCH: list[Search] = []


def has_literal(text: str) -> bool:
    """True when the line holds any literal the parser or the catalogue reads."""
    if not _SEARCH:
        _SEARCH.append(Search(all_literals()))
    return _SEARCH[0].holds(text)


def parse(
    records: Iterable[Record],
    *,
    year: int | None = None,
    total_lines: int | Callable[[], int | None] | None = None,
    continuing: str | None = None,
    splitter: BootSplitter | None = None,
) -> list[Boot]:
    """Split a record stream into boots with their figures, config, events and samples.

    year: of vLLM's own MM-DD timestamps (records without an envelope time); None: this year.  A
    log running over New Year bumps the year when the month goes backwards.  total_lines: the
    source's physical line count (or a call asked once the records are read), so the last boot
    ends at the file's end; None: the last record's line.  continuing: status of the stored boot
    a resumed read continues (the lines before the first start marker form one Boot with
    continued=True).  splitter: one made by the caller (ingest's spill file and retire callback);
    continuing is then the splitter's."""
    cur_year = year if year is not None else datetime.now().year
    last_month = 0
    owed = 0  # records still owed as traceback context (as scan.Lines counts them)
    splitter = splitter if splitter is not None else BootSplitter(continuing)
    last_lineno = 0
    stats_literal, stats_line = stats.STATS_LITERAL, stats.stats_line
    for rec in records:
        last_lineno = rec.lineno
        try:
            text = rec.text
            context = owed > 0
            if context:
                owed -= 1
            if stats_literal in text and "\x1b" not in text and (got := stats_line(text)) is not None:
                m, keys, values = got
                v = from_prefix(m, rec, cur_year, m["msg"])
                v.stats = (keys, values)
                literal = True
            else:
                literal = rec.hit if rec.hit is not None else has_literal(text)
                if TRACEBACK in text and TB_CONTEXT > owed:
                    owed = TB_CONTEXT
                if not (literal or context):
                    continue
                v = parse_line(rec, cur_year)
            if rec.ts is None and v.ts is not None:
                if last_month and v.ts.month < last_month and last_month - v.ts.month >= 6:
                    cur_year += 1  # New Year inside the log
                    try:
                        v.ts = v.ts.replace(year=cur_year)
                    except ValueError:
                        v.ts = None
                if v.ts is not None:
                    last_month = v.ts.month
            splitter.feed(v, literal)
            if text[:1] == "{":  # a JSON record's traceback is a field of the same line
                for x in json_exc_lines(v):
                    splitter.feed(x, has_literal(x.text))
        except ValueError as e:  # (the line is not read)
            if not unreadable_number(e):
                raise
    total = total_lines() if callable(total_lines) else total_lines
    return splitter.finish(total if total is not None else last_lineno)
