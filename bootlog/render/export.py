"""Export the database for analysis elsewhere: boots × figures (wide), events and samples (long).

Formats:
  csv      FILE holds the boots; FILE-stem + `-events.csv` and `-samples.csv` beside it hold the
           events and the runtime samples (boots.csv -> boots-events.csv, boots-samples.csv).
  json     FILE is one object {"boots": [...], "events": [...], "samples": [...]}.
  parquet  like csv, three files (boots.parquet, boots-events.parquet, boots-samples.parquet);
           needs pyarrow (`pip install 'bootlog[parquet]'`).

  openmetrics  the latest boot of each host/container as gauges (openmetrics.py), for
           node_exporter's textfile collector: stdout, or FILE written whole then renamed.

Wide columns: every boot field, `config.KEY` for every config key, and one column `NAME` per
metric (its first printing in the log), whatever else the database holds, so a script can rely
on the name.  A metric whose ranks print different values in any boot also gets one column per
rank, `NAME@rankN` (`NAME@engine` for the engine-core printing); a rank printing the same metric
several times (one per compile range, per KV group) adds `NAME@rankN.2`, `.3`….

csv and json are streamed: the boots are read PAGE at a time, once to gather the columns and
once to write the rows (the events spooled to a temporary file meanwhile), so memory does not
grow with the database (100,000 boots).  Parquet builds its tables in memory (pyarrow needs
a column's type before it is written).  Every file is checked before anything is read
(output.check_target: never the database itself) and written whole, then renamed into place.
"""

from __future__ import annotations

import csv
import json
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Callable, Iterable, Iterator, Sequence

from bootlog.errors import BootlogError, InputError
from bootlog.render.output import check_target, writing
from bootlog.safe import csv_cell, json_text

BOOT_FIELDS = (
    "id",
    "status",
    "failure",
    "failure_message",
    "vllm_version",
    "engine",
    "model",
    "container",
    "host",
    "source",
    "started_at",
    "ready_at",
    "ended_at",
    "first_line",
    "last_line",
)


def _slots(doc: dict) -> dict[str, list[tuple[int | None, int, float]]]:
    """Per metric, (rank, nth printing by that rank, value) of each printing, in log order."""
    seen: dict[tuple[str, int | None], int] = {}
    out: dict[str, list[tuple[int | None, int, float]]] = {}
    for m in doc.get("metrics", []):
        name, r = m["name"], m.get("rank")
        k = seen.get((name, r), 0)
        seen[(name, r)] = k + 1
        out.setdefault(name, []).append((r, k, m["value"]))
    return out


def _slot_column(name: str, rank: int | None, k: int) -> str:
    base = f"{name}@engine" if rank is None else f"{name}@rank{rank}"
    return base if k == 0 else f"{base}.{k + 1}"


class Wide:
    """The wide table's columns, gathered over every boot before the first row is written (a
    metric gets per-rank columns when any boot's ranks disagree on it)."""

    def __init__(self) -> None:
        self.split: set[str] = set()
        self.extra_boot: dict[str, None] = {}
        self.config: dict[str, None] = {}
        self.metrics: dict[str, None] = {}
        self.slots: dict[str, dict[str, None]] = {}  # metric -> its per-rank columns, when split

    def add(self, doc: dict) -> None:
        for k in doc.get("boot", {}):
            if k not in BOOT_FIELDS:
                self.extra_boot[k] = None
        for k in doc.get("config") or {}:
            self.config[f"config.{k}"] = None
        for name, slots in _slots(doc).items():
            self.metrics[name] = None
            if len({v for _, _, v in slots}) > 1:
                self.split.add(name)
            cols = self.slots.setdefault(name, {})
            for r, k, _ in slots:
                cols[_slot_column(name, r, k)] = None

    def columns(self) -> list[str]:
        metric_cols = dict(self.metrics)
        for name in self.split:
            metric_cols.update(self.slots[name])
        return [*BOOT_FIELDS, *self.extra_boot, *sorted(self.config), *sorted(metric_cols)]

    def row(self, doc: dict, columns: Sequence[str]) -> dict:
        boot = doc.get("boot", {})
        row: dict[str, Any] = dict(boot)
        for k, v in (doc.get("config") or {}).items():
            row[f"config.{k}"] = v
        for name, slots in _slots(doc).items():
            row[name] = slots[0][2]
            if name in self.split:
                for r, k, v in slots:
                    row[_slot_column(name, r, k)] = v
        return {c: row.get(c) for c in columns}


def split_metrics(docs: Sequence[dict]) -> set[str]:
    """Metric names that need per-rank columns: some boot printed different values for them."""
    wide = Wide()
    for d in docs:
        wide.add(d)
    return wide.split


def wide_rows(docs: Sequence[dict]) -> tuple[list[str], list[dict]]:
    """(columns, rows): one row per boot with boot fields, config.KEY and metric columns."""
    wide = Wide()
    for d in docs:
        wide.add(d)
    columns = wide.columns()
    return columns, [wide.row(d, columns) for d in docs]


EVENT_COLUMNS = ("boot_id", "kind", "rank", "line", "ts", "message", "detail")


def event_rows(docs: Iterable[dict]) -> list[dict]:
    """One row per event of every boot, in boot then log order."""
    out = []
    for d in docs:
        bid = d["boot"]["id"]
        for e in d.get("events", []):
            out.append(
                {
                    "boot_id": bid,
                    "kind": e.get("kind"),
                    "rank": e.get("rank"),
                    "line": e.get("line"),
                    "ts": e.get("ts"),
                    "message": e.get("message"),
                    "detail": e.get("detail") or {},
                }
            )
    return out


def sample_rows(store, boot_ids: Iterable[int]) -> Iterator[dict]:
    """Runtime samples (periodic stats lines) as long rows: boot_id, line, ts, name, value."""
    from bootlog.store.reads import samples

    for bid, s in samples(store, list(boot_ids)):
        for name, value in s.values.items():
            yield {"boot_id": bid, "line": s.line, "ts": s.ts, "name": name, "value": value}


SAMPLE_COLUMNS = ("boot_id", "line", "ts", "name", "value")


def sibling(path: Path, part: str) -> Path:
    """boots.csv + "events" -> boots-events.csv (same directory, same suffix)."""
    return path.with_name(f"{path.stem}-{part}{path.suffix}")


def _plain(v: Any) -> Any:
    if hasattr(v, "isoformat"):
        return v.isoformat()
    return v


def _csv_cell(v: Any) -> Any:
    if v is None:
        return ""
    if isinstance(v, (dict, list)):
        return json.dumps(v, ensure_ascii=False, default=str)
    return _plain(v)


class _CsvTable:
    """One CSV file: no cell (a header is a config key or a figure's name) that a spreadsheet
    runs as a formula."""

    def __init__(self, fh: IO, columns: Sequence[str]) -> None:
        self.columns, self.w = columns, csv.writer(fh)
        self.w.writerow([csv_cell(c) for c in columns])

    def add(self, rows: Iterable[dict]) -> None:
        for r in rows:
            self.w.writerow([csv_cell(_csv_cell(r.get(c))) for c in self.columns])


class _JsonArray:
    """One array of the JSON export's object, written element by element as
    json.dumps(obj, indent=1) would lay it out, with the characters a terminal acts on escaped
    (safe.json_text, as every JSON bootlog writes: the same values, read by any parser)."""

    def __init__(self, fh: IO, name: str, first: bool) -> None:
        self.fh, self.n = fh, 0
        fh.write(("{\n" if first else ",\n") + f" {json.dumps(name)}: [")

    def add(self, rows: Iterable[dict]) -> None:
        for r in rows:
            text = json.dumps({k: _plain(v) for k, v in r.items()}, indent=1, ensure_ascii=False, default=str)
            self.fh.write(("\n  " if self.n == 0 else ",\n  ") + json_text(text.replace("\n", "\n  ")))
            self.n += 1

    def close(self, last: bool) -> None:
        self.fh.write(("\n ]" if self.n else "]") + ("\n}" if last else ""))


def _parquet_frame(columns: Sequence[str], rows: Iterable[dict]):
    try:
        import pyarrow  # noqa: F401
    except ImportError:
        raise BootlogError("parquet export needs pyarrow: pip install 'bootlog[parquet]'") from None
    import pandas as pd

    frame = pd.DataFrame(
        [
            {c: _csv_cell(r.get(c)) if isinstance(r.get(c), (dict, list)) else _plain(r.get(c)) for c in columns}
            for r in rows
        ],
        columns=list(columns),
    )
    # pyarrow needs one type per column; config values mix numbers, text and lists by key
    for c in frame.columns:
        if frame[c].dtype != object:
            continue
        vals = [v for v in frame[c] if v is not None and v == v]
        if vals and all(isinstance(v, int) and not isinstance(v, bool) for v in vals):
            frame[c] = frame[c].astype("Int64")
        elif vals and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in vals):
            frame[c] = frame[c].astype("float64")
        elif not (vals and all(isinstance(v, bool) for v in vals)):
            frame[c] = frame[c].map(lambda v: None if v is None or v != v else str(v))
    return frame


def latest_boots(store, *, container: str | None = None, host: str | None = None) -> list[dict]:
    """show --json documents (no runtime summary) of the latest boot of each host + container
    (of each file, for boots read without one), in the order they started."""
    from bootlog.store.reads import list_boots, show_boots

    latest: dict[tuple, int] = {}
    for b in list_boots(store, container=container, host=host):  # (start order: the last one wins)
        key = (b.get("host"), b.get("container")) if b.get("container") else (b.get("host"), None, b.get("source"))
        latest.pop(key, None)
        latest[key] = b["id"]
    return show_boots(store, list(latest.values()), runtime=False)


def export_openmetrics(
    store,
    path: str | Path | None,
    *,
    container: str | None = None,
    host: str | None = None,
    verdict_of: Callable[[dict], Any] | None = None,
) -> tuple[str, int]:
    """The OpenMetrics text of the latest boots (latest_boots), each with its verdict
    (`verdict_of(doc)`: the flow that exports gives the hook's, run.judged.judge_stored; else the
    boot's own), written to `path` (whole, then renamed: the textfile collector never reads half a
    file); with no path it is only returned.  (text, number of boots in it)."""
    from bootlog.render import openmetrics

    target = check_target(path, store) if path is not None else None
    docs = latest_boots(store, container=container, host=host)
    verdicts = {d["boot"]["id"]: verdict_of(d) for d in docs} if verdict_of is not None else None
    text = openmetrics.render(docs, verdicts)
    if target is not None:
        openmetrics.write(target, text)
    return text, len(docs)


PAGE = 500  # boots read at a time


def targets(fmt: str, path: str | Path, store=None) -> list[Path]:
    """The files an export writes, each checked (output.check_target: a directory that exists,
    never the database): FILE, and for csv/parquet its -events and -samples siblings."""
    if fmt not in FORMATS:
        raise InputError(f"unknown export format {fmt!r} (choose {', '.join(FORMATS)})")
    path = Path(path)
    files = [path, *(sibling(path, s) for s in FORMATS[fmt].siblings)]
    return [check_target(p, store) for p in files]


def _pages(store, ids: Sequence[int]) -> Iterator[list[dict]]:
    from bootlog.store.reads import show_boots

    for i in range(0, len(ids), PAGE):
        yield show_boots(store, list(ids[i : i + PAGE]), runtime=False)


def export(
    store, fmt: str, path: str | Path, *, container: str | None = None, host: str | None = None, samples: bool = True
) -> tuple[list[Path], int]:
    """Write the export of the stored boots (of `container`/`host`); (the files written, the
    number of boots)."""
    from bootlog.store.reads import boot_ids

    files = targets(fmt, path, store)
    if FORMATS[fmt].check is not None:
        FORMATS[fmt].check()  # (a missing library is said before anything is read)
    ids = boot_ids(store, container=container, host=host)
    wide = Wide()
    for page in _pages(store, ids):
        for d in page:
            wide.add(d)
    FORMATS[fmt].write(store, files, ids, wide, wide.columns(), ids if samples else [])
    return files, len(ids)


def _write_parquet(
    store, files: list[Path], ids: Sequence[int], wide: Wide, columns: list[str], sample_ids: Sequence[int]
) -> None:
    docs = [d for page in _pages(store, ids) for d in page]
    for f, cols, rows in (
        (files[0], columns, [wide.row(d, columns) for d in docs]),
        (files[1], EVENT_COLUMNS, event_rows(docs)),
        (files[2], SAMPLE_COLUMNS, list(sample_rows(store, sample_ids))),
    ):
        frame = _parquet_frame(cols, rows)
        with writing(f, binary=True) as fh:
            frame.to_parquet(fh, engine="pyarrow", index=False)


def _write_json(
    store, files: list[Path], ids: Sequence[int], wide: Wide, columns: list[str], sample_ids: Sequence[int]
) -> None:
    import tempfile

    with writing(files[0]) as fh, tempfile.TemporaryFile("w+", encoding="utf-8") as spool:
        boots = _JsonArray(fh, "boots", first=True)
        events = _JsonArray(spool, "events", first=False)
        for page in _pages(store, ids):
            boots.add(wide.row(d, columns) for d in page)
            events.add(event_rows(page))
        boots.close(last=False)
        events.close(last=False)
        spool.seek(0)
        shutil.copyfileobj(spool, fh)
        rows = _JsonArray(fh, "samples", first=False)
        rows.add(sample_rows(store, sample_ids))
        rows.close(last=True)


def _write_csv(
    store, files: list[Path], ids: Sequence[int], wide: Wide, columns: list[str], sample_ids: Sequence[int]
) -> None:
    with writing(files[0]) as fb, writing(files[1]) as fe, writing(files[2]) as fs:
        boot_csv, event_csv = _CsvTable(fb, columns), _CsvTable(fe, EVENT_COLUMNS)
        for page in _pages(store, ids):
            boot_csv.add(wide.row(d, columns) for d in page)
            event_csv.add(event_rows(page))
        _CsvTable(fs, SAMPLE_COLUMNS).add(sample_rows(store, sample_ids))


@dataclass(frozen=True)
class Format:
    """An export format: the files it writes beside FILE (FILE-stem + `-events`, ...), its writer,
    and what it checks before anything is read."""

    siblings: tuple[str, ...]
    write: Callable[..., None]
    check: Callable[[], Any] | None = None


# The export formats, in the order the command line offers them (openmetrics, the latest boots as
# gauges, is export_openmetrics): a new format is one entry here.
FORMATS: dict[str, Format] = {
    "csv": Format(("events", "samples"), _write_csv),
    "json": Format((), _write_json),
    "parquet": Format(("events", "samples"), _write_parquet, check=lambda: _parquet_frame([], [])),
}
ALL_FORMATS = (*FORMATS, "openmetrics")
