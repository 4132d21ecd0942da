"""Looking after the database: where it is, its state, upgrade, check, backup, prune.

The `bootlog db ...` and `bootlog prune` commands are thin shells over these functions.
"""

from __future__ import annotations

import os
import tempfile
from typing import Any

from bootlog.errors import StoreError
from bootlog.store import db as dbmod
from bootlog.store.db import Store, retry
from bootlog.store.reads import NEWEST, TABLES, filtered, where_clause, count_rows
from bootlog.store.write import chunks, in_list


def db_path(db: str | None) -> str:
    """Where the database is: the SQLite file, or the URL with its password hidden."""
    url = dbmod.resolve_url(db)
    return dbmod.sqlite_path(url) or dbmod.hide_password(url)


def status(store: Store) -> dict[str, Any]:
    """Revision, whether it is current, rows per table, file size (SQLite)."""
    rev = dbmod.current_revision(store)
    out: dict[str, Any] = {
        "url": dbmod.hide_password(store.url),
        "dialect": store.dialect,
        "revision": rev,
        "head": dbmod.HEAD_REVISION,
        "up_to_date": rev == dbmod.HEAD_REVISION,
        "rows": count_rows(store) if rev == dbmod.HEAD_REVISION else {},
    }
    path = dbmod.sqlite_path(store.url)
    if path:
        out["path"] = path
        out["size_bytes"] = sum(os.path.getsize(p) for p in (path, path + "-wal") if os.path.exists(p))
    return out


def upgrade(store: Store, revision: str = "head") -> tuple[str | None, str | None]:
    """Migrate to `revision`; (before, after) revisions."""
    before = dbmod.current_revision(store)
    dbmod.migrate(store, revision)
    return before, dbmod.current_revision(store)


def _columns(store: Store) -> dict[str, set[str]]:
    """Table -> column names of the live schema (bootlog's tables only)."""
    out: dict[str, set[str]] = {}
    for table in (*TABLES, "alembic_version"):
        if store.pg:
            cols = {
                r[0]
                for r in store.rows(
                    "SELECT column_name FROM information_schema.columns "
                    "WHERE table_name = ? AND table_schema = current_schema()",
                    (table,),
                )
            }
        else:
            cols = {r[1] for r in store.rows(f'PRAGMA table_info("{table}")')}
        if cols:
            out[table] = cols
    return out


def expected_columns() -> dict[str, set[str]]:
    """What running every migration builds: made by running them into a scratch SQLite file."""
    with tempfile.TemporaryDirectory(prefix="bootlog-check-") as tmp:
        scratch = dbmod.open_store(os.path.join(tmp, "scratch.db"))
        try:
            return _columns(scratch)
        finally:
            scratch.close()


def check(store: Store) -> list[str]:
    """Problems found (empty when healthy): revision, tables and columns against what the
    migrations build, SQLite integrity and foreign keys."""
    rev = dbmod.current_revision(store)
    if rev != dbmod.HEAD_REVISION:
        return [f"schema revision {rev} is not the newest ({dbmod.HEAD_REVISION})"]
    problems: list[str] = []
    live, want = _columns(store), expected_columns()
    for table, cols in want.items():
        have = live.get(table)
        if have is None:
            problems.append(f"table {table} is missing")
            continue
        problems += [f"column {table}.{c} is missing" for c in sorted(cols - have)]
        problems += [f"column {table}.{c} is not in the schema" for c in sorted(have - cols)]
    if not store.pg:
        for (msg,) in store.rows("PRAGMA integrity_check"):
            if msg != "ok":
                problems.append(f"integrity: {msg}")
        for row in store.rows("PRAGMA foreign_key_check"):
            problems.append(f"foreign key: {tuple(row)}")
    return problems


def backup(store: Store, dest: str) -> str:
    """A consistent copy of a SQLite database at `dest` (VACUUM INTO: safe while others write)."""
    if store.pg:
        raise StoreError("backup copies SQLite files only; for PostgreSQL use pg_dump")
    dest = os.path.abspath(os.path.expanduser(dest))
    if os.path.exists(dest):
        raise StoreError(f"backup target exists: {dest}")
    parent = os.path.dirname(dest)
    if not os.path.isdir(parent):
        raise StoreError(f"backup directory does not exist: {parent}")
    try:
        store.execute("VACUUM INTO ?", (dest,))
        os.chmod(dest, 0o600)
    except (OSError, *dbmod.driver_errors()) as err:  # type: ignore[misc]  # (a tuple built at run time)
        raise StoreError(f"backup failed: {dbmod.one_line(err)}") from err
    return dest


def prune(
    store: Store, keep_last: int, container: str | None = None, figures: bool = False, host: str | None = None
) -> dict[str, int]:
    """Delete runtime samples of all but the newest `keep_last` boots (of `container` and/or
    `host` if given: a container of one name on several hosts has a history per host).
    Boot figures, config and events stay: they are what diffs and history need.  With
    figures=True the older boots are deleted entirely."""
    if keep_last < 0:
        raise StoreError("keep_last must be 0 or more")
    where, params = filtered(container, host)

    def run() -> dict[str, int]:
        out = {"boots": 0, "samples": 0}
        with store.transaction():
            ids = [
                r[0] for r in store.rows("SELECT id FROM boots" + where_clause(where) + f" ORDER BY {NEWEST}", params)
            ]
            for chunk in chunks(ids[keep_last:]):
                marks = in_list(len(chunk))
                out["samples"] += int(
                    store.one(f"SELECT coalesce(sum(n), 0) FROM sample_chunks WHERE boot_id IN {marks}", chunk)[0]
                )
                store.execute(f"DELETE FROM sample_chunks WHERE boot_id IN {marks}", chunk)
                if figures:
                    for table in ("metrics", "config", "events"):
                        store.execute(f"DELETE FROM {table} WHERE boot_id IN {marks}", chunk)
                    out["boots"] += store.execute(f"DELETE FROM boots WHERE id IN {marks}", chunk).rowcount
        return out

    return retry(run)
