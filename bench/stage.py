#!/usr/bin/env python3
"""The first stages of `bootlog ingest` alone, as a whole process: where an ingest's time goes.

    python bench/stage.py records LOG   source -> candidate lines (the scan) -> envelope records
    python bench/stage.py boots LOG     ... -> vLLM lines -> boots (everything but the store)
    python bench/stage.py match LOG     the least a reader in Python does: the scan's search of each
                                        block, then one match of the catalogue's stats wording
                                        (vline.PREFIX + STATS_WORDINGS[0]) at each line it found

bench/run.py times all three beside the whole ingest; they carry no goal of their own.
"""

import re
import sys

from bootlog.run.ingest import parse_source, read_records
from bootlog.parse.parse import all_literals
from bootlog.parse.stats import STATS_WORDINGS
from bootlog.read.scan import Search
from bootlog.read.sources import BLOCK, Blocks, open_source
from bootlog.parse.vline import PREFIX


def match(log: str) -> int:
    search, n = Search(all_literals()), 0
    at = re.compile(f"{PREFIX}(?P<msg>{STATS_WORDINGS[0]})$".encode(), re.M).match
    for block in Blocks(open_source(log).chunks(0, BLOCK)):
        for start in search.lines(block)[0]:
            n += at(block, start) is not None
    return n


if __name__ == "__main__":
    what, log = sys.argv[1:3]
    if what == "match":
        n = match(log)
    elif what == "records":
        records, _ = read_records(open_source(log))
        n = sum(1 for _ in records)
    else:
        n = len(parse_source(open_source(log)))
    print(n)
