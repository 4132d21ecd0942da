"""A stats sample as its `samples` row values, (line, ts, values JSON), made as cheaply as possible.

The JSON is exactly what SQLAlchemy's JSON type writes for store/rows.py's row (json.dumps with
default settings of the plain-JSON values): the store on SQLite, and ingest's spill file, hand
these tuples to the driver as they are (tests/test_sqlite_fast.py compares them with the generic
SQLAlchemy path on real logs).  No SQLAlchemy here: ingest's spill runs before the store is opened.
"""
from __future__ import annotations

from bootlog.jsontext import dumps as _dumps, flat_encoder
from bootlog.store.rows import _jsonable, _plain_floats

plain_dumps = flat_encoder()  # (a sample's values: a flat dict of plain floats)


# the samples table's columns after boot_id, in the order of sample_rows' tuples
SAMPLE_COLS = ("line", "ts", "values")


def insert_sql(boot_id: int) -> str:
    """The INSERT for one boot's sample rows, the boot id written into the statement (an int
    from the database), so that the rows are sample_rows' (or the spill's) tuples as they are."""
    names = ", ".join(f'"{c}"' for c in SAMPLE_COLS)
    return f"INSERT INTO samples (boot_id, {names}) VALUES ({int(boot_id)}, ?, ?, ?)"


def sample_rows(samples) -> list[tuple[int, str | None, str]]:
    """(line, ts ISO text, values JSON) per Sample: the samples table's own columns."""
    plain, jsonable, pdumps, dumps = _plain_floats, _jsonable, plain_dumps, _dumps
    out = []
    add = out.append
    for s in samples:
        row = getattr(s, "row", None)  # (a Sample read the fast way: its row is made already)
        if row is not None:
            add((s.line, *row))
            continue
        v = s.values
        ts = s.ts
        add((s.line, ts.isoformat() if ts is not None else None,
             pdumps(v) if plain(v) else dumps(jsonable(v))))
    return out
