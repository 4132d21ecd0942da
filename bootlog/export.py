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
"""
from __future__ import annotations

import csv
import json
import os
import stat
from pathlib import Path
from typing import Any, Iterable, Sequence

from bootlog.errors import BootlogError, InputError
from bootlog.safe import csv_cell

FORMATS = ("csv", "json", "parquet")
ALL_FORMATS = (*FORMATS, "openmetrics")
BOOT_FIELDS = ("id", "status", "failure", "failure_message", "vllm_version", "engine", "model",
               "container", "host", "source", "started_at", "ready_at", "ended_at",
               "first_line", "last_line")


def _slots(doc: dict, name: str) -> list[tuple[int | None, int, float]]:
    """(rank, nth printing by that rank, value) of one metric, in log order."""
    seen: dict[int | None, int] = {}
    out = []
    for m in doc.get("metrics", []):
        if m["name"] != name:
            continue
        r = m.get("rank")
        k = seen.get(r, 0)
        seen[r] = k + 1
        out.append((r, k, m["value"]))
    return out


def _slot_column(name: str, rank: int | None, k: int) -> str:
    base = f"{name}@engine" if rank is None else f"{name}@rank{rank}"
    return base if k == 0 else f"{base}.{k + 1}"


def split_metrics(docs: Sequence[dict]) -> set[str]:
    """Metric names that need per-rank columns: some boot printed different values for them."""
    split: set[str] = set()
    for d in docs:
        by_name: dict[str, set[float]] = {}
        for m in d.get("metrics", []):
            by_name.setdefault(m["name"], set()).add(m["value"])
        split.update(n for n, vals in by_name.items() if len(vals) > 1)
    return split


def wide_rows(docs: Sequence[dict]) -> tuple[list[str], list[dict]]:
    """(columns, rows): one row per boot with boot fields, config.KEY and metric columns."""
    split = split_metrics(docs)
    rows: list[dict] = []
    config_cols: dict[str, None] = {}
    metric_cols: dict[str, None] = {}
    extra_boot: dict[str, None] = {}
    for d in docs:
        boot = d.get("boot", {})
        row: dict[str, Any] = {k: boot.get(k) for k in BOOT_FIELDS}
        for k, v in boot.items():
            if k not in row:
                extra_boot[k] = None
                row[k] = v
        for k, v in (d.get("config") or {}).items():
            config_cols[f"config.{k}"] = None
            row[f"config.{k}"] = v
        for name in dict.fromkeys(m["name"] for m in d.get("metrics", [])):
            slots = _slots(d, name)
            metric_cols[name] = None
            row[name] = slots[0][2]
            if name in split:
                for r, k, v in slots:
                    col = _slot_column(name, r, k)
                    metric_cols[col] = None
                    row[col] = v
        rows.append(row)
    columns = [*BOOT_FIELDS, *extra_boot, *sorted(config_cols), *sorted(metric_cols)]
    return columns, [{c: r.get(c) for c in columns} for r in rows]


EVENT_COLUMNS = ("boot_id", "kind", "rank", "line", "ts", "message", "detail")


def event_rows(docs: Sequence[dict]) -> list[dict]:
    """One row per event of every boot, in boot then log order."""
    out = []
    for d in docs:
        bid = d["boot"]["id"]
        for e in d.get("events", []):
            out.append({"boot_id": bid, "kind": e.get("kind"), "rank": e.get("rank"), "line": e.get("line"),
                        "ts": e.get("ts"), "message": e.get("message"), "detail": e.get("detail") or {}})
    return out


def load_samples(store, boot_ids: Iterable[int]) -> list[dict]:
    """Runtime samples (periodic stats lines) as long rows: boot_id, line, ts, name, value."""
    from bootlog.store.reads import samples

    return [{"boot_id": bid, "line": s.line, "ts": s.ts, "name": name, "value": value}
            for bid, s in samples(store, list(boot_ids)) for name, value in s.values.items()]


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


def _write_csv(path: Path, columns: Sequence[str], rows: Sequence[dict]) -> None:
    """No cell (a header is a config key or a figure's name) that a spreadsheet runs as a formula."""
    with open(path, "w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow([csv_cell(c) for c in columns])
        for r in rows:
            w.writerow([csv_cell(_csv_cell(r.get(c))) for c in columns])


def _json_ready(rows: Sequence[dict]) -> list[dict]:
    return [{k: _plain(v) for k, v in r.items()} for r in rows]


def _write_parquet(path: Path, columns: Sequence[str], rows: Sequence[dict]) -> None:
    try:
        import pyarrow  # noqa: F401
    except ImportError:
        raise BootlogError("parquet export needs pyarrow: pip install 'bootlog[parquet]'") from None
    import pandas as pd

    frame = pd.DataFrame([{c: _csv_cell(r.get(c)) if isinstance(r.get(c), (dict, list)) else _plain(r.get(c))
                           for c in columns} for r in rows], columns=list(columns))
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
    frame.to_parquet(path, engine="pyarrow", index=False)


def check_target(path: str | Path) -> Path:
    """An output file name that can be written: not a directory, in a directory that exists."""
    path = Path(path)
    if path.is_dir():
        raise InputError(f"{path} is a directory; give a file name")
    if not path.parent.exists():
        raise InputError(f"directory {path.parent} does not exist")
    return path


def write_whole(path: str | Path, text: str) -> None:
    """`text` into `path`.  A regular file (or a new one) is written whole, then renamed into
    place (openmetrics.write: a collector or a browser never reads half of it), through a
    symlink to the file it names (the link stays).  Anything else that exists -- /dev/stdout, a
    FIFO, /dev/full -- is written to as it is: a rename would put a file where the device was."""
    target = os.path.realpath(path) if os.path.islink(path) else os.fspath(path)
    try:
        mode = os.stat(target).st_mode
    except FileNotFoundError:
        mode = None
    if mode is not None and not stat.S_ISREG(mode):
        with open(target, "w", encoding="utf-8") as f:
            f.write(text)
        return
    from bootlog import openmetrics

    openmetrics.write(target, text)


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


def export_openmetrics(store, path: str | Path | None, *, container: str | None = None,
                       host: str | None = None) -> tuple[str, int]:
    """The OpenMetrics text of the latest boots (latest_boots), written to `path` (write_whole:
    the textfile collector never reads half a file); with no path it is only returned.
    (text, number of boots in it)."""
    from bootlog import openmetrics

    target = check_target(path) if path is not None else None
    docs = latest_boots(store, container=container, host=host)
    text = openmetrics.render(docs)
    if target is not None:
        write_whole(target, text)
    return text, len(docs)


def export(docs: Sequence[dict], fmt: str, path: str | Path, samples: Sequence[dict] = ()) -> list[Path]:
    """Write the export; return the files written."""
    if fmt not in FORMATS:
        raise InputError(f"unknown export format {fmt!r} (choose {', '.join(FORMATS)})")
    path = check_target(path)
    columns, boots = wide_rows(docs)
    events = event_rows(docs)
    if fmt == "json":
        obj = {"boots": _json_ready(boots), "events": _json_ready(events), "samples": _json_ready(samples)}
        path.write_text(json.dumps(obj, indent=1, ensure_ascii=False, default=str), encoding="utf-8")
        return [path]
    writer = _write_csv if fmt == "csv" else _write_parquet
    written = [path, sibling(path, "events"), sibling(path, "samples")]
    writer(written[0], columns, boots)
    writer(written[1], EVENT_COLUMNS, events)
    writer(written[2], SAMPLE_COLUMNS, samples)
    return written
