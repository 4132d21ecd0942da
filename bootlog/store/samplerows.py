"""A stats sample as its `samples` row values, (line, ts, values JSON), made as cheaply as possible.

The JSON is exactly what SQLAlchemy's JSON type writes for store/rows.py's row (json.dumps with
default settings of the plain-JSON values): the store on SQLite, and ingest's spill file, hand
these tuples to the driver as they are (tests/test_sqlite_fast.py compares them with the generic
SQLAlchemy path on real logs).  No SQLAlchemy here: ingest's spill runs before the store is opened.
"""
from __future__ import annotations


TYPE_CHECKING = False
if TYPE_CHECKING:  # (typing for the annotations only: importing it costs ~5 ms of every start)
    from typing import Any, Callable

from bootlog.store.rows import _jsonable, _plain_floats

# json.dumps' own C encoder, made once instead of per call (json.dumps builds one each time)
from bootlog.jsontext import _make_encoder as _c_make_encoder, ascii_text as _ascii, dumps as _dumps


def _make_plain_dumps() -> Callable[[dict], str]:
    if _c_make_encoder is None:  # pragma: no cover
        return _dumps

    def _no_default(o: Any) -> Any:  # never reached for plain floats under str keys
        raise TypeError(f"Object of type {o.__class__.__name__} is not JSON serializable")

    # the arguments json.JSONEncoder.iterencode passes for json.dumps' defaults (ensure_ascii,
    # ", " and ": ", allow_nan), without the circular-reference markers (a flat dict has none)
    enc = _c_make_encoder(None, _no_default, _ascii, None, ": ", ", ", False, False, True)
    join = "".join

    def dumps(values: dict) -> str:
        return join(enc(values, 0))
    return dumps


plain_dumps = _make_plain_dumps()


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
