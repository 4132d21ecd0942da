"""Looking after the database: where it is, its state, upgrade, check, backup, prune.

The `bootlog db ...` and `bootlog prune` commands are thin shells over these functions.
"""
from __future__ import annotations

import os
from typing import Any

from sqlalchemy import Engine, delete, select
from sqlalchemy.engine import make_url

from bootlog.errors import StoreError
from bootlog.store import db as dbmod
from bootlog.store.models import BootRow, SampleRow


def db_path(db: str | None) -> str:
    """Where the database is: the SQLite file, or the URL with its password hidden."""
    url = dbmod.resolve_url(db)
    return dbmod.sqlite_path(url) or make_url(url).render_as_string(hide_password=True)


def _head() -> str:
    from alembic.script import ScriptDirectory

    return ScriptDirectory.from_config(dbmod.alembic_config()).get_current_head()


def status(engine: Engine) -> dict[str, Any]:
    """Revision, whether it is current, rows per table, file size (SQLite)."""
    from bootlog.store.queries import count_rows

    url = engine.url.render_as_string(hide_password=True)
    rev = dbmod.retry(lambda: dbmod.current_revision(engine))
    out: dict[str, Any] = {
        "url": url,
        "dialect": engine.dialect.name,
        "revision": rev,
        "head": dbmod.HEAD_REVISION,
        "up_to_date": rev == dbmod.HEAD_REVISION,
        "rows": dbmod.retry(lambda: count_rows(engine)) if rev else {},
    }
    path = dbmod.sqlite_path(url)
    if path:
        out["path"] = path
        out["size_bytes"] = sum(os.path.getsize(p) for p in (path, path + "-wal") if os.path.exists(p))
    return out


def upgrade(db: str | None, revision: str = "head") -> tuple[str | None, str | None]:
    """Migrate to `revision` (open_db already upgrades to head); (before, after) revisions."""
    engine = dbmod.make_engine(dbmod.resolve_url(db))
    dbmod.refuse_foreign(dbmod.sqlite_path(dbmod.resolve_url(db)))
    try:
        before = dbmod.retry(lambda: dbmod.current_revision(engine))
        try:
            dbmod.retry(lambda: dbmod.upgrade(engine, revision))
        except StoreError:
            raise
        except Exception as err:
            raise StoreError(f"upgrade failed: {dbmod.one_line(err)}") from err
        return before, dbmod.current_revision(engine)
    finally:
        engine.dispose()


def schema_diffs(engine: Engine) -> list:
    """Differences between the live schema and the models (what `alembic check` reports)."""
    from alembic.autogenerate import compare_metadata
    from alembic.migration import MigrationContext

    from bootlog.store.models import Base

    with engine.connect() as conn:
        ctx = MigrationContext.configure(conn, opts={"compare_type": True, "render_as_batch": True})
        return compare_metadata(ctx, Base.metadata)


def check(engine: Engine) -> list[str]:
    """Problems found (empty when healthy): revision, schema drift, SQLite integrity."""
    problems: list[str] = []
    rev = dbmod.current_revision(engine)
    if rev != dbmod.HEAD_REVISION:
        problems.append(f"schema revision {rev} is not the newest ({dbmod.HEAD_REVISION})")
        return problems
    problems += [f"schema differs from the models: {d}" for d in schema_diffs(engine)]
    if engine.dialect.name == "sqlite":
        with engine.connect() as conn:
            for (msg,) in conn.exec_driver_sql("PRAGMA integrity_check"):
                if msg != "ok":
                    problems.append(f"integrity: {msg}")
            for row in conn.exec_driver_sql("PRAGMA foreign_key_check"):
                problems.append(f"foreign key: {tuple(row)}")
    return problems


def backup(engine: Engine, dest: str) -> str:
    """A consistent copy of a SQLite database at `dest` (VACUUM INTO: safe while others write)."""
    if engine.dialect.name != "sqlite":
        raise StoreError("backup copies SQLite files only; for PostgreSQL use pg_dump")
    dest = os.path.abspath(os.path.expanduser(dest))
    if os.path.exists(dest):
        raise StoreError(f"backup target exists: {dest}")
    parent = os.path.dirname(dest)
    if not os.path.isdir(parent):
        raise StoreError(f"backup directory does not exist: {parent}")
    try:
        # raw DBAPI connection: it is in autocommit mode, and VACUUM refuses to run in a transaction
        raw = engine.raw_connection()
        try:
            raw.cursor().execute("VACUUM INTO ?", (dest,))
        finally:
            raw.close()
        os.chmod(dest, 0o600)
    except Exception as err:
        raise StoreError(f"backup failed: {dbmod.one_line(err)}") from err
    return dest


def prune(engine: Engine, keep_last: int, container: str | None = None,
          figures: bool = False, host: str | None = None) -> dict[str, int]:
    """Delete runtime samples of all but the newest `keep_last` boots (of `container` and/or
    `host` if given: a container of one name on several hosts has a history per host).

    Boot figures, config and events stay: they are what diffs and history need.  With
    figures=True the older boots are deleted entirely.
    """
    if keep_last < 0:
        raise StoreError("keep_last must be 0 or more")

    def run() -> dict[str, int]:
        with dbmod.writer(engine).begin() as conn:
            q = select(BootRow.id)
            if container is not None:
                q = q.where(BootRow.container == container)
            if host is not None:
                q = q.where(BootRow.host == host)
            ids = list(conn.execute(q.order_by(BootRow.id.desc())).scalars())[keep_last:]
            out = {"boots": 0, "samples": 0}
            for i in range(0, len(ids), 500):
                chunk = ids[i : i + 500]
                out["samples"] += conn.execute(delete(SampleRow).where(SampleRow.boot_id.in_(chunk))).rowcount
                if figures:
                    from bootlog.store.models import ConfigRow, EventRow, MetricRow

                    for model in (MetricRow, ConfigRow, EventRow):
                        conn.execute(delete(model).where(model.boot_id.in_(chunk)))
                    out["boots"] += conn.execute(delete(BootRow).where(BootRow.id.in_(chunk))).rowcount
            return out

    return dbmod.retry(run)
