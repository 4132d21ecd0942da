"""Reads and writes over the store: save parsed boots, resolve refs, shape boots for output.

Every write is one transaction (boots, their figures and the read position together), so a crash
or a lost race leaves the database as it was; the whole transaction is retried on lock
contention.  Output dicts follow the `show --json` contract of cli-contract.md exactly.
"""
from __future__ import annotations

from itertools import islice
from typing import Any, Callable, Iterable, Sequence

from sqlalchemy import Engine, delete, func, insert, select, text, true, update
from sqlalchemy.engine import Connection

from bootlog.errors import StoreError  # noqa: F401  (re-exported)
from bootlog.plain import record
from bootlog.records import Boot
from bootlog.store.db import retry, writer
from bootlog.store.rows import (  # noqa: F401  (re-exported: callers import them from here)
    SourceInfo, _Rows, _config_rows, _event_rows, _finite, _iso, _jsonable, _metric_rows, _now,
    PositionMoved, _plain_floats, _sample_rows, boot_row, config_hash, fallback_fingerprint, match_stored)
from bootlog.store.models import BootRow, ConfigRow, EventRow, MetricRow, Position, SampleRow, Source
from bootlog.store import reads
from bootlog.store.rows import counts_differ, has_user_rows, user_sql, with_tail
from bootlog.store.reads import RuntimeFold as _RuntimeFold, _json_number, typed_config_value  # noqa: F401  (re-exported)
from bootlog.store.samplerows import insert_sql

_CHUNK = 500  # bound on IN (...) lists: SQLite's variable limit is 999 on old builds
# rows per executemany: child rows are generated lazily and inserted this many at a time, so a
# boot with 100,000+ stats samples never exists as one list of parameter dicts
_BATCH = 5000


# ---------------------------------------------------------------- writing


@record
class _Prepared:
    """A Boot's own row, flattened once outside the transaction (retries reuse it); its
    metrics, config, events and samples rows are made lazily, batch by batch, as inserted."""

    boot: dict[str, Any]
    metrics: _Rows
    config: _Rows
    events: _Rows
    samples: _Rows
    # the parsed Boot, asked for again when its rows are made (ingest.Boots reads a retired one
    # back from disk: none is held between uses); the SQLite sample fast path reads it directly
    load: Callable[[], Boot]

    @property
    def nlines(self) -> int:
        return self.boot["last_line"] - self.boot["first_line"] + 1


def _prepare(src: SourceInfo, b: Boot, load: Callable[[], Boot] | None = None) -> _Prepared:
    boot = boot_row(src, b)
    # save_boots runs its transaction before returning: the Boot is not changed meanwhile
    get = load if load is not None else (lambda: b)
    return _Prepared(
        boot,
        _Rows(lambda: _metric_rows(get()), sum(1 for m in b.metrics if _finite(m.value) is not None)),
        _Rows(lambda: _config_rows(get()), len(b.config)),
        _Rows(lambda: _event_rows(get()), len(b.events)),
        _Rows(lambda: _sample_rows(get()), len(b.samples)),
        get,
    )


def _source_id(conn: Connection, src: SourceInfo) -> int:
    found = conn.execute(select(Source.id).where(Source.key == src.key)).scalar()
    if found is not None:
        return found
    res = conn.execute(
        insert(Source).values(key=src.key, name=src.name, kind=src.kind, container=src.container,
                              host=src.host, created=_now())
    )
    return res.inserted_primary_key[0]


def _chunks(items: list, n: int = _CHUNK) -> Iterable[list]:
    for i in range(0, len(items), n):
        yield items[i : i + n]


def _insert_batched(conn: Connection, model, rows: Iterable[dict[str, Any]]) -> None:
    """executemany in bounded batches, rows drawn lazily from `rows` (same transaction)."""
    it = iter(rows)
    stmt = insert(model)
    while True:
        batch = list(islice(it, _BATCH))
        if not batch:
            return
        conn.execute(stmt, batch)


def _insert_children(conn: Connection, pairs: list[tuple[int, _Prepared]]) -> None:
    """Child rows in one pass over the boots (each asked for once), each table's rows in boot
    order and at most _BATCH per executemany: the row ids are those of table-by-table inserts."""
    fast = _sqlite_fast(conn)
    tables = (MetricRow, ConfigRow, EventRow) if fast else (MetricRow, ConfigRow, EventRow, SampleRow)
    makes = (_metric_rows, _config_rows, _event_rows, _sample_rows)
    batches: list[list[dict[str, Any]]] = [[] for _ in tables]
    for bid, p in pairs:
        b = p.load()
        for model, make, batch in zip(tables, makes, batches):
            for r in make(b):
                batch.append(dict(r, boot_id=bid))
                if len(batch) >= _BATCH:
                    _insert_rows(conn, model, batch)
                    batch.clear()
        if fast:
            _insert_samples_sqlite(conn, [(bid, p)], b)
    for model, batch in zip(tables, batches):
        if batch:
            _insert_rows(conn, model, batch)


def _insert_rows(conn: Connection, model, rows: list[dict[str, Any]]) -> None:
    conn.execute(insert(model), rows)


# Sample rows are most of an ingest's rows (one per stats line: 140,000 in a 512 MiB log).  On
# SQLite they go to the driver as plain tuples, skipping SQLAlchemy's per-row parameter
# processing; the values column is serialised exactly as SQLAlchemy's JSON type does it (the
# dialect's json_serializer, else json.dumps: store/samplerows.py), so the stored text is the same
# byte for byte (tests/test_sqlite_fast.py compares both paths on the corpus).  Samples that
# ingest spilled to disk come back as ready-made rows (SpilledSamples.row_parts) and go to
# executemany as read.  PostgreSQL keeps the generic path.
def _sqlite_fast(conn: Connection) -> bool:
    d = conn.dialect
    return d.name == "sqlite" and d.paramstyle == "qmark" and not _FORCE_GENERIC


_FORCE_GENERIC = False  # tests: every row through SQLAlchemy, to compare the two paths


def _sample_row_parts(p: _Prepared, dumps, b: Boot | None = None) -> Iterable[list[tuple]]:
    """A prepared boot's sample rows as lists of (line, ts, values JSON), in log order."""
    from bootlog.store.samplerows import sample_rows

    samples = (b if b is not None else p.load()).samples
    if dumps is None:  # SQLAlchemy's default serialiser: json.dumps, as the ready-made rows
        parts = getattr(samples, "row_parts", None)
        if parts is not None:
            yield from parts()
            return
        for k in range(0, len(samples), _BATCH):
            yield sample_rows(samples[k : k + _BATCH])
        return
    rows = []
    for s in samples:  # a serialiser of the engine's own
        v = s.values
        rows.append((s.line, _iso(s.ts), dumps(v if _plain_floats(v) else _jsonable(v))))
        if len(rows) >= _BATCH:
            yield rows
            rows = []
    yield rows


def _insert_samples_sqlite(conn: Connection, pairs: Iterable[tuple[int, _Prepared]], b: Boot | None = None) -> None:
    """The sample rows of `pairs` through the DBAPI, at most _BATCH rows per executemany (same
    transaction).  b: the Boot of a single pair, when the caller has it already."""
    dumps = conn.dialect._json_serializer
    for bid, p in pairs:
        if not p.samples:
            continue
        sql = insert_sql(bid)
        for rows in _sample_row_parts(p, dumps, b):
            for k in range(0, len(rows), _BATCH):
                batch = rows[k : k + _BATCH] if len(rows) > _BATCH else rows
                if batch:
                    _execute_rows(conn, sql, batch)


def _execute_rows(conn: Connection, sql: str, rows: list[tuple]) -> None:
    conn.exec_driver_sql(sql, rows)


def _insert_ids(conn: Connection, rows: list[dict[str, Any]]) -> list[int]:
    """Insert boot rows, their new ids in row order."""
    if getattr(conn.dialect, "insert_executemany_returning_sort_by_parameter_order", False):
        return list(conn.execute(
            insert(BootRow).returning(BootRow.id, sort_by_parameter_order=True), rows
        ).scalars())
    # SQLite before 3.35 has no RETURNING (Ubuntu 20.04 ships 3.31): one INSERT per boot
    return [conn.execute(insert(BootRow).values(**r)).inserted_primary_key[0] for r in rows]


def _should_replace(conn: Connection, stored: dict[str, Any], new: _Prepared, planned: bool = True) -> bool:
    # the stored copy was read while the boot was still running: the new read knows more
    old_n = stored["last_line"] - stored["first_line"] + 1
    if new.nlines > old_n:
        return True
    if new.nlines < old_n:
        return False
    if stored["status"] == "incomplete" and new.boot["status"] != "incomplete":
        return True
    # same span: the stored read may have ended in a half-written line that is whole now
    # (read without a plan: a plan's rows stored before are not this read's to count)
    user_m, user_e = user_sql()
    mine = (true(), true(), true()) if planned else (text(f"NOT ({user_m})"), text(f"NOT ({user_e})"), true())
    counts = [conn.execute(select(func.count()).select_from(m).where(m.boot_id == stored["id"], c)).scalar()
              for m, c in zip((MetricRow, EventRow, SampleRow), mine)]
    return counts_differ(counts, [len(new.metrics), len(new.events), len(new.samples)])


_MATCH_COLUMNS = (BootRow.id, BootRow.fingerprint, BootRow.first_line, BootRow.last_line, BootRow.status,
                  BootRow.started_at, BootRow.vllm_version, BootRow.model)


def _save_tx(engine: Engine, src: SourceInfo, prepared: list[_Prepared],
             position: tuple[str, int, str] | None, extend: int | None = None,
             resumed_from: int | None = None, planned: bool = False) -> list[tuple[int, bool]]:
    every = prepared
    with writer(engine).begin() as conn:
        if resumed_from is not None and position is not None:
            # FOR UPDATE: two ingests resuming the same grown file at once must not both extend
            # the boot (PostgreSQL's READ COMMITTED lets both read the old offset; the second
            # now waits, reads the new one and reads again from there; SQLite ignores it, its
            # BEGIN IMMEDIATE already lets one writer in at a time)
            now_at = conn.execute(select(Position.byte_offset).where(Position.source_key == position[0])
                                  .with_for_update()).scalar()
            if now_at != resumed_from:
                raise PositionMoved(position[0])
        sid = _source_id(conn, src)
        head: list[tuple[int, bool]] = []
        if extend is not None:
            _extend_tx(conn, extend, prepared[0])
            head, prepared = [(extend, False)], prepared[1:]
        fps = list(dict.fromkeys(p.boot["fingerprint"] for p in prepared))
        by_fp: dict[str, dict[str, Any]] = {}
        for chunk in _chunks(fps):
            q = select(*_MATCH_COLUMNS).where(BootRow.fingerprint.in_(chunk))
            by_fp.update({r.fingerprint: r._asdict() for r in conn.execute(q)})
        # boots of this source starting at the same lines, for reads whose fingerprint moved
        firsts = list({p.boot["first_line"] for p in prepared if p.boot["fingerprint"] not in by_fp})
        by_start: dict[int, list[dict[str, Any]]] = {}
        for chunk in _chunks(firsts):
            q = select(*_MATCH_COLUMNS).where(BootRow.source_id == sid, BootRow.first_line.in_(chunk))
            for r in conn.execute(q.order_by(BootRow.id)):
                by_start.setdefault(r.first_line, []).append(r._asdict())

        now = _now()
        result: list[tuple[int, bool] | None] = [None] * len(prepared)
        replaced: list[tuple[int, _Prepared]] = []
        new_idx, known, seen = match_stored([p.boot for p in prepared], by_fp, by_start)
        keep_user: list[tuple[int, int, int]] = []  # (boot id, new metrics, new events): rows.USER_PATTERN
        for i, old in known:
            p = prepared[i]
            result[i] = (old["id"], False)
            b = p.load()
            with_plan = planned or has_user_rows(b)
            if _should_replace(conn, old, p, with_plan):
                values = {k: v for k, v in p.boot.items() if k not in ("container", "host")}
                conn.execute(update(BootRow).where(BootRow.id == old["id"]).values(**values, ingested_at=now))
                replaced.append((old["id"], p))
                if not with_plan:  # a plan's figures and events stay, after the new rows
                    keep_user.append((old["id"], len(b.metrics), len(b.events)))

        if replaced:
            ids = [bid for bid, _ in replaced]
            kept = {bid for bid, _, _ in keep_user}
            user_m, user_e = user_sql()
            for model in (MetricRow, ConfigRow, EventRow, SampleRow):
                conn.execute(delete(model).where(model.boot_id.in_([i for i in ids if i not in kept])))
                if kept:
                    mine = {MetricRow: text(f"NOT ({user_m})"), EventRow: text(f"NOT ({user_e})")}.get(model, true())
                    conn.execute(delete(model).where(model.boot_id.in_(kept), mine))
            for bid, n_metrics, n_events in keep_user:  # kept rows after the new ones, in their order
                conn.execute(update(MetricRow).where(MetricRow.boot_id == bid, text(user_m))
                             .values(seq=MetricRow.seq + n_metrics))
                conn.execute(update(EventRow).where(EventRow.boot_id == bid, text(user_e))
                             .values(seq=EventRow.seq + n_events))

        created: list[tuple[int, _Prepared]] = []
        if new_idx:
            ids = []
            for k in range(0, len(new_idx), _BATCH):
                ids += _insert_ids(conn, [dict(prepared[i].boot, source_id=sid, ingested_at=now)
                                          for i in new_idx[k : k + _BATCH]])
            for i, bid in zip(new_idx, ids):
                result[i] = (bid, True)
                created.append((bid, prepared[i]))

        _insert_children(conn, created + replaced)

        for i, p in enumerate(prepared):  # in-call duplicates point at the first copy
            if result[i] is None:
                bid = result[seen[p.boot["fingerprint"]]][0]
                result[i] = (bid, False)

        out = head + [r for r in result if r is not None]
        if position is not None:
            key, offset, at = position
            _save_position(conn, key, offset, with_tail(at, [p.boot["last_line"] for p in every], out))
    return out


def _save_position(conn: Connection, key: str, offset: int, head: str) -> None:
    n = conn.execute(
        update(Position).where(Position.source_key == key)
        .values(byte_offset=offset, head_fingerprint=head, updated=_now())
    ).rowcount
    if not n:
        conn.execute(insert(Position).values(source_key=key, byte_offset=offset, head_fingerprint=head,
                                             updated=_now()))


def save_boots(engine: Engine, src: SourceInfo, boots: Sequence[Boot],
               position: tuple[str, int, str] | None = None,
               extend: int | None = None, resumed_from: int | None = None,
               planned: bool = False) -> list[tuple[int, bool]]:
    """Store boots (and the read position) in one transaction; (boot_id, created) per boot.

    A boot whose fingerprint is stored already is not stored again, unless the stored copy has
    fewer lines (read while still running): then it is updated in place, keeping its id.
    extend: id of a stored boot that boots[0] (continued=True, a resumed read's lead-in)
    continues: its figures, events and samples are appended to that boot.
    resumed_from: the stored offset a resumed read started at; if another ingest moved it
    meanwhile, nothing is written and rows.PositionMoved says to read again.
    planned: read with a plan (its user-pattern rows are this read's to rewrite; rows.USER_PATTERN).
    """
    if extend is not None and not (boots and boots[0].continued):
        raise ValueError("extend needs a continued boot first")
    # boots: any sequence; ingest.Boots reads a retired boot back from disk each time it is asked
    prepared = [_prepare(src, b, lambda k=k: boots[k]) for k, b in enumerate(boots)]
    if not prepared and position is None:
        return []
    return retry(lambda: _save_tx(engine, src, prepared, position, extend, resumed_from, planned), attempts=10)


def _extend_tx(conn: Connection, boot_id: int, p: _Prepared) -> None:
    """Append a resumed read's lead-in to the stored boot it continues (log order kept)."""
    row = conn.execute(select(BootRow.status, BootRow.failure, BootRow.last_line, BootRow.ended_at)
                       .where(BootRow.id == boot_id)).first()
    if row is None:
        raise PositionMoved(f"boot {boot_id}")  # deleted meanwhile (prune): read again
    values: dict[str, Any] = {"last_line": max(row.last_line, p.boot["last_line"])}
    if p.boot["ended_at"]:
        values["ended_at"] = p.boot["ended_at"]
    if row.failure is None and p.boot["failure"]:
        # a ready boot whose engine then died serving: keep ready, name the runtime cause
        values["failure"], values["failure_message"] = p.boot["failure"], p.boot["failure_message"]
        if row.status != "ready":
            values["status"] = p.boot["status"]
    conn.execute(update(BootRow).where(BootRow.id == boot_id).values(**values))
    for model, attr in ((MetricRow, "metrics"), (EventRow, "events")):
        base = conn.execute(select(func.max(model.seq)).where(model.boot_id == boot_id)).scalar()
        rows = [dict(r, seq=r["seq"] + (base + 1 if base is not None else 0), boot_id=boot_id)
                for r in getattr(p, attr)]
        if rows:
            conn.execute(insert(model), rows)
    if p.samples:
        if _sqlite_fast(conn):
            _insert_samples_sqlite(conn, [(boot_id, p)])
        else:
            _insert_batched(conn, SampleRow, (dict(r, boot_id=boot_id) for r in p.samples))
    known = set(conn.execute(select(ConfigRow.key).where(ConfigRow.boot_id == boot_id)).scalars())
    cfg = [dict(r, boot_id=boot_id) for r in p.config if r["key"] not in known]
    if cfg:
        conn.execute(insert(ConfigRow), cfg)


def get_position(engine: Engine, source_key: str) -> tuple[int, str] | None:
    def run():
        with engine.connect() as conn:
            row = conn.execute(
                select(Position.byte_offset, Position.head_fingerprint).where(Position.source_key == source_key)
            ).first()
        return (row[0], row[1]) if row else None

    return retry(run)


# ---------------------------------------------------------------- reading

_BOOT_COLUMNS = (
    BootRow.id, BootRow.status, BootRow.failure, BootRow.failure_message, BootRow.vllm_version,
    BootRow.engine, BootRow.model, BootRow.container, BootRow.host, Source.name.label("source"),
    BootRow.started_at, BootRow.ready_at, BootRow.ended_at, BootRow.first_line, BootRow.last_line,
)


def _boot_select():
    return select(*_BOOT_COLUMNS).join(Source, Source.id == BootRow.source_id)


def _filtered(q, container: str | None, host: str | None):
    if container is not None:
        q = q.where(BootRow.container == container)
    if host is not None:
        q = q.where(BootRow.host == host)
    return q


def list_boots(engine: Engine, container: str | None = None, host: str | None = None) -> list[dict]:
    """Boot objects (the `boot` of show --json), oldest first, newest last (by ingest order)."""
    def run():
        with engine.connect() as conn:
            q = _filtered(_boot_select(), container, host).order_by(BootRow.id)
            return [r._asdict() for r in conn.execute(q)]

    return retry(run)


def _fetcher(conn: Connection, *, stream: bool = False) -> reads.Fetch:
    """reads.Fetch over an SQLAlchemy connection (the DBAPI's own paramstyle; stream: rows come
    from a server-side cursor on PostgreSQL, as they are folded)."""
    if stream:
        conn = conn.execution_options(stream_results=True, max_row_buffer=2000)
    fmt = conn.dialect.paramstyle in ("format", "pyformat")

    def fetch(sql: str, params):
        return conn.exec_driver_sql(sql.replace("?", "%s") if fmt else sql, tuple(params))
    return fetch


def show_boot(engine: Engine, boot_id: int) -> dict:
    """One boot, all it knows, in the exact `show --json` shape."""
    return show_boots(engine, [boot_id])[0]


def show_boots(engine: Engine, boot_ids: list[int], *, runtime: bool = True) -> list[dict]:
    """reads.show_boots: several boots in the `show --json` shape, in the order of `boot_ids`."""
    def run():
        with engine.connect() as conn:
            return reads.show_boots(_fetcher(conn, stream=runtime), boot_ids, runtime=runtime)

    return retry(run)


def boot_samples(engine: Engine, boot_id: int) -> list[dict[str, Any]]:
    """The boot's periodic statistics lines in log order: {"line", "ts", "values"} each."""
    def run():
        with engine.connect() as conn:
            q = (select(SampleRow.line, SampleRow.ts, SampleRow.values)
                 .where(SampleRow.boot_id == boot_id).order_by(SampleRow.line, SampleRow.id))
            return [r._asdict() for r in conn.execute(q)]

    return retry(run)


def boot_config(engine: Engine, boot_id: int) -> dict[str, str]:
    """The stored config of a boot as printed (text values)."""
    with engine.connect() as conn:
        return {k: v for k, v in conn.execute(
            select(ConfigRow.key, ConfigRow.value).where(ConfigRow.boot_id == boot_id))}


def resolve_ref(engine: Engine, ref: str, container: str | None = None, host: str | None = None) -> int:
    """reads.resolve_ref: `last`, `prev`, `last~N` or an id."""
    with engine.connect() as conn:
        return reads.resolve_ref(_fetcher(conn), ref, container, host)


def boots_like(engine: Engine, boot_id: int, limit: int = 50) -> list[int]:
    """reads.boots_like: earlier boots of the same group and config, oldest first."""
    with engine.connect() as conn:
        return reads.boots_like(_fetcher(conn), boot_id, limit)


def last_boot_of_source(engine: Engine, key: str, ends_at: int | None = None) -> tuple[int, str] | None:
    """(id, status) of the boot of the source `key` (SourceInfo.key: kind, name, container and
    host) that reaches furthest into it; with ends_at, the newest one ending at that line (the
    last read's tail: a file rotated since holds older boots reaching further)."""
    q = select(BootRow.id, BootRow.status).join(Source, Source.id == BootRow.source_id).where(Source.key == key)
    if ends_at is not None:
        q = q.where(BootRow.last_line == ends_at).order_by(BootRow.id.desc())
    else:
        q = q.order_by(BootRow.last_line.desc(), BootRow.id.desc())
    with engine.connect() as conn:
        row = conn.execute(q.limit(1)).first()
    return (row.id, row.status) if row else None


def boot_status(engine: Engine, boot_id: int) -> str | None:
    """The status of boot `boot_id`, None when there is no such boot (pruned)."""
    with engine.connect() as conn:
        return conn.execute(select(BootRow.status).where(BootRow.id == boot_id)).scalar()


def count_rows(engine: Engine) -> dict[str, int]:
    """Rows per table (for `db status` and tests)."""
    out = {}
    with engine.connect() as conn:
        for model in (Source, BootRow, MetricRow, ConfigRow, EventRow, SampleRow, Position):
            out[model.__tablename__] = conn.execute(select(func.count()).select_from(model)).scalar_one()
    return out
