"""Boots across time: the history table (one row per boot, the chosen figures as columns).

Works on `show --json` documents (queries.show_boot), so it never touches the schema and never
parses logs.  A "figure" here is anything a column can hold: a boot field (status, model…), a
config key (max_model_len…), a metric (kv_cache_tokens…), the derived `faults` count, or a
runtime statistic spelled `runtime.max.X` / `runtime.last.X`.
"""

from __future__ import annotations

import csv
import io
from typing import Any, Callable, Iterable, Sequence

from bootlog import safe

DEFAULT_COLUMNS: tuple[str, ...] = (
    "id",
    "status",
    "vllm_version",
    "max_model_len",
    "max_num_seqs",
    "kv_cache_tokens",
    "max_concurrency",
    "graph_capture_gib",
    "torch_compile_s",
    "boot_to_ready_s",
    "faults",
)
# Events that mean the engine lost state or memory at runtime; counted in the `faults` column.
FAULT_KINDS: tuple[str, ...] = ("gdn_hip_fault", "oom")


class PerRank(tuple):
    """Values of one figure that differ between ranks, in rank order; renders as "a/b"."""

    __slots__ = ()


PAGE = 500  # boots read at a time


def load_docs(
    store,
    *,
    container: str | None = None,
    host: str | None = None,
    last: int | None = None,
    runtime: bool = True,
    trim: Callable[[dict], dict] | None = None,
) -> list[dict]:
    """show --json documents of the stored boots, oldest first; `last` keeps only the newest N.

    runtime=False leaves the (sample-heavy) runtime summary out; nothing but runtime.* columns
    and the report's last-boot section read it.  `trim`: what of each document the caller
    keeps, applied a PAGE of boots at a time (a plot of 100,000 boots keeps one figure each).
    """
    from bootlog.store.reads import boot_ids, show_boots

    ids = boot_ids(store, container=container, host=host)
    if last is not None:
        ids = ids[-last:] if last > 0 else []
    docs: list[dict] = []
    for i in range(0, len(ids), PAGE):
        page = show_boots(store, ids[i : i + PAGE], runtime=runtime)
        docs.extend(map(trim, page) if trim is not None else page)
    return docs


def _json_number(v: float) -> int | float:
    # as show --json prints it: 398658, not 398658.0
    return int(v) if float(v).is_integer() and abs(v) < 2**53 else v


def metric_values(doc: dict, name: str) -> list[tuple[int | None, float]]:
    """(rank, value) of every printing of metric `name`, engine (rank None) first, then by rank.

    Sorted stably so several printings by one rank keep their log order.
    """
    vals = [(m.get("rank"), m["value"]) for m in doc.get("metrics", []) if m["name"] == name]
    return sorted(vals, key=lambda rv: -1 if rv[0] is None else rv[0])


def metric_cell(doc: dict, name: str) -> Any:
    """One value when every rank agrees (the usual case), else PerRank of the values."""
    vals = metric_values(doc, name)
    if not vals:
        return None
    distinct = {v for _, v in vals}
    if len(distinct) == 1:
        return vals[0][1]
    return PerRank(v for _, v in vals)


def figure(doc: dict, name: str) -> Any:
    """The value of a column for one boot (None when the boot does not have it)."""
    boot = doc.get("boot", {})
    if name == "faults":
        # as diff counts them: a line may stand for a run ("fault #1-23" is 23)
        # (and one OOM re-raised by a wrapper is one)
        from bootlog.judge.verdict import count_of, event_counts

        return sum(count_of(evs) for kind, evs in event_counts(doc).items() if kind in FAULT_KINDS)
    if name.startswith("runtime."):
        _, part, key = (name.split(".", 2) + ["", ""])[:3]
        return ((doc.get("runtime") or {}).get(part) or {}).get(key)
    if name.startswith("config."):
        return (doc.get("config") or {}).get(name[len("config.") :])
    if name == "status" and boot.get("status") == "ready" and boot.get("failure"):
        return f"ready ({boot['failure']})"  # the engine died serving (as list and ingest say)
    if name == "status":
        loop = next((e for e in doc.get("events", []) if e["kind"] == "crash_loop"), None)
        if loop is not None:  # the last failed start of a loop: say it is one
            return f"failed (crash loop: {loop['detail']['failed_starts']} starts)"
    if name in boot:
        return boot[name]
    if any(m["name"] == name for m in doc.get("metrics", [])):
        return metric_cell(doc, name)
    return (doc.get("config") or {}).get(name)


def known_names(docs: Iterable[dict]) -> set[str]:
    """Every column name the documents could fill (used to reject typos in --metric)."""
    names = {"faults"}
    for d in docs:
        names.update(d.get("boot", {}))
        names.update(d.get("config") or {})
        names.update(f"config.{k}" for k in d.get("config") or {})
        names.update(m["name"] for m in d.get("metrics", []))
        for part, vals in (d.get("runtime") or {}).items():
            if isinstance(vals, dict):
                names.update(f"runtime.{part}.{k}" for k in vals)
    return names


def history_rows(docs: Sequence[dict], columns: Sequence[str] = DEFAULT_COLUMNS) -> list[dict]:
    """One dict per boot: {column: value}, oldest first."""
    return [{c: figure(d, c) for c in columns} for d in docs]


def changed(rows: Sequence[dict], columns: Sequence[str], groups: Sequence[Any] | None = None) -> list[set[str]]:
    """Per row, the columns whose value differs from the boot before it: the previous row of the
    same group (`groups[i]`: container and host, as `prev` pairs boots), else the previous row.

    `id` never counts as a change; the first row of a group has nothing to compare with.
    """
    out: list[set[str]] = []
    last: dict[Any, dict] = {}
    for i, row in enumerate(rows):
        key = groups[i] if groups is not None else None
        prev = last.get(key)
        last[key] = row
        if prev is None:
            out.append(set())
            continue
        out.append({c for c in columns if c != "id" and _norm(row.get(c)) != _norm(prev.get(c))})
    return out


def series_key(doc: dict) -> tuple:
    """The series a boot belongs to for "the boot before": its container on its host, or the
    host's container-less log files (as `prev` falls back to them)."""
    boot = doc.get("boot", {})
    return (boot.get("container"), boot.get("host"))


def _norm(v: Any) -> Any:
    # The config stores Python spellings as text; 200704 and "200704" are the same setting.
    if isinstance(v, PerRank):
        return tuple(_norm(x) for x in v)
    if isinstance(v, bool) or v is None:
        return v
    if isinstance(v, (int, float)):
        return float(v)
    if isinstance(v, str):
        try:
            return float(v)
        except ValueError:
            return v
    return v


def cell_text(v: Any, none: str = "", exact: bool = False) -> str:
    """A value as the text table ("-" for missing) and CSV (empty, `exact`: every digit
    stored, not 6 significant ones) show it."""
    if v is None:
        return none
    if isinstance(v, PerRank):
        return "/".join(cell_text(x, exact=exact) for x in v)
    if isinstance(v, bool):
        return str(v)
    if isinstance(v, float):
        if v.is_integer() and abs(v) < 1e15:
            return str(int(v))
        return repr(v) if exact else f"{v:.6g}"
    return str(v)


def json_cell(v: Any) -> Any:
    """PerRank becomes a list in JSON; everything else stays as stored."""
    if isinstance(v, PerRank):
        return list(v)
    if isinstance(v, float):
        return _json_number(v)  # (past 2**53 a float's int() prints digits the log never had)
    return v


def render_text(rows: Sequence[dict], columns: Sequence[str], changes: Sequence[set[str]] | None = None) -> str:
    """An aligned table; a cell that moved since the previous boot carries a `*` suffix.  Cells
    are log text: escaped and cut to 80 columns (safe.cut)."""
    changes = changes if changes is not None else changed(rows, columns)
    head = [safe.cut(c, 80) for c in columns]
    cells = [
        [safe.cut(cell_text(r[c], "-"), 80) + ("*" if c in ch else "") for c in columns] for r, ch in zip(rows, changes)
    ]
    widths = [max([safe.width(h)] + [safe.width(row[i]) for row in cells]) for i, h in enumerate(head)]
    numeric = [all(_is_num(r[c]) for r in rows if r[c] not in (None, "")) for c in columns]

    def fmt(vals: Sequence[str]) -> str:
        return "  ".join(safe.pad(v, w, right=num) for v, w, num in zip(vals, widths, numeric)).rstrip()

    lines = [fmt(head)] + [fmt(row) for row in cells]
    if any(changes):
        lines.append("(* = differs from the boot before)")
    return "\n".join(lines)


def _is_num(v: Any) -> bool:
    return isinstance(v, (int, float, PerRank)) and not isinstance(v, bool)


def render_csv(rows: Sequence[dict], columns: Sequence[str], changes: Sequence[set[str]] | None = None) -> str:
    """CSV with plain values and a `changed` column naming the cells that moved (;-separated);
    no cell a spreadsheet would run as a formula (safe.csv_cell)."""
    changes = changes if changes is not None else changed(rows, columns)
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow([safe.csv_cell(c) for c in [*columns, "changed"]])
    for r, ch in zip(rows, changes):
        w.writerow(
            [
                safe.csv_cell(v)
                for v in [*(cell_text(r[c], exact=True) for c in columns), ";".join(c for c in columns if c in ch)]
            ]
        )
    return buf.getvalue()


def render_json(rows: Sequence[dict], columns: Sequence[str], changes: Sequence[set[str]] | None = None) -> list[dict]:
    """JSON-ready rows: the columns plus `changed`, the list of columns that moved."""
    changes = changes if changes is not None else changed(rows, columns)
    return [
        {**{c: json_cell(r[c]) for c in columns}, "changed": [c for c in columns if c in ch]}
        for r, ch in zip(rows, changes)
    ]


def history(
    docs: Sequence[dict], columns: Sequence[str] | None = None, *, skip_first: bool = False
) -> tuple[list[str], list[dict], list[set[str]]]:
    """Columns, rows and per-row changes for a history view.

    With skip_first the first document only serves as the "boot before" of the second, so a
    `--last N` view still marks what its first row changed.
    """
    from bootlog.errors import BootlogError

    cols = list(dict.fromkeys(columns)) if columns else list(DEFAULT_COLUMNS)
    if columns:
        known = known_names(docs) | set(DEFAULT_COLUMNS)
        unknown = [c for c in cols if c not in known and not c.startswith(("config.", "runtime."))]
        if unknown and docs:
            raise BootlogError(f"unknown figure {', '.join(unknown)} (none of the boots shown has it)")
    rows = history_rows(docs, cols)
    changes = changed(rows, cols, [series_key(d) for d in docs])
    if skip_first and rows:
        rows, changes = rows[1:], changes[1:]
    return cols, rows, changes


def nothing_stored(container: str | None, host: str | None) -> str:
    """The message for an empty view: an empty database, or filters that match no boot."""
    if container or host:
        what = " and ".join(
            x for x in (f"container {container}" if container else "", f"host {host}" if host else "") if x
        )
        return f"no boots stored for {what}"
    return "no boots stored yet (bootlog ingest LOG)"
