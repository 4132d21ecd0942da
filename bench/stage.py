#!/usr/bin/env python3
"""The first stages of `bootlog ingest` alone, as a whole process: where an ingest's time goes.

    python bench/stage.py records LOG   source -> candidate lines (the scan) -> envelope records
    python bench/stage.py boots LOG     ... -> vLLM lines -> boots (everything but the store)

bench/run.py times both beside the whole ingest; they carry no goal of their own.
"""
import sys

from bootlog.ingest import parse_source, read_records
from bootlog.sources import open_source

if __name__ == "__main__":
    what, log = sys.argv[1:3]
    if what == "records":
        records, _ = read_records(open_source(log))
        n = sum(1 for _ in records)
    else:
        n = len(parse_source(open_source(log)))
    print(n)
