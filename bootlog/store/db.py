"""The database connection: SQLite (the standard library's sqlite3) or PostgreSQL (psycopg 3),
spoken to in plain SQL with `?` placeholders, and migrated with Alembic on first use.

One Store serves every command and both backends: store/write.py and store/reads.py hold the
SQL.  SQLAlchemy and Alembic are imported only to migrate (a new database, or an older schema):
the schema is defined once, by the migrations.
"""

from __future__ import annotations

import os
import random
import sqlite3
import sys
import time
from contextlib import contextmanager
from typing import Any, Callable, Iterator, Sequence
from urllib.parse import quote

from bootlog.errors import StoreError
from bootlog.store.where import create_private_file, default_path, resolve_url

# The newest revision in migrations/versions (tests/test_migrations.py checks it against the
# scripts): a database at it needs no Alembic import.
HEAD_REVISION = "0006_unbounded_log_text"
BUSY_TIMEOUT_S = 30.0
# a new SQLite file's pages (its default is 4096): a big first ingest writes a sixteenth of the pages
PAGE_SIZE = 65536


class Store:
    """A DB-API connection and what differs between the two backends."""

    def __init__(self, conn: Any, dialect: str, url: str, where: str) -> None:
        self.conn, self.dialect, self.url, self.where = conn, dialect, url, where
        self.pg = dialect == "postgresql"
        # what a read found that depends on many rows (reads._crash_loops): forgotten at the
        # next write transaction, which may change it
        self.memo: dict[Any, Any] = {}

    def execute(self, sql: str, params: Sequence[Any] = ()) -> Any:
        """One statement; the cursor (rows, rowcount)."""
        cur = self.conn.cursor()
        cur.execute(sql.replace("?", "%s") if self.pg else sql, tuple(params))
        return cur

    def executemany(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        if rows:
            self.conn.cursor().executemany(sql.replace("?", "%s") if self.pg else sql, rows)

    def rows(self, sql: str, params: Sequence[Any] = ()) -> list[tuple]:
        return self.execute(sql, params).fetchall()

    def one(self, sql: str, params: Sequence[Any] = ()) -> tuple | None:
        return self.execute(sql, params).fetchone()

    def insert_id(self, sql: str, params: Sequence[Any]) -> int:
        """An INSERT's new id (sql has no RETURNING clause of its own)."""
        if self.pg:
            return self.execute(sql + " RETURNING id", params).fetchone()[0]
        return self.execute(sql, params).lastrowid

    @contextmanager
    def transaction(self, write: bool = True) -> Iterator["Store"]:
        """BEGIN ... COMMIT, rolled back on any error.  A SQLite writer takes the write lock at
        BEGIN (IMMEDIATE) and waits for it on the busy timeout, instead of upgrading a read lock
        mid-transaction, which SQLite refuses at once."""
        if write:
            self.memo.clear()
        self.execute("BEGIN IMMEDIATE" if write and not self.pg else "BEGIN")
        try:
            yield self
        except BaseException:
            try:
                self.execute("ROLLBACK")
            except Exception:  # noqa: BLE001 - a failed rollback must not hide the error that caused it
                pass
            raise
        self.execute("COMMIT")

    def close(self) -> None:
        try:
            self.conn.close()
        except Exception:  # noqa: BLE001 - closing a connection that broke: nothing left to do
            pass


# ---------------------------------------------------------------- errors and retries


def one_line(err: BaseException) -> str:
    """A database error as one readable line."""
    msg = str(err).strip().split("\n")[0].strip()
    return msg or type(err).__name__


def driver_errors() -> tuple[type[BaseException], ...]:
    """The exception classes of the drivers in use (psycopg's only when it was imported)."""
    pg = sys.modules.get("psycopg")
    return (sqlite3.Error, pg.Error) if pg is not None else (sqlite3.Error,)


def is_transient(err: BaseException) -> bool:
    """Errors worth retrying the whole transaction for: lock contention, serialisation, a
    concurrent writer that inserted the same unique key first (the retry finds its row)."""
    if isinstance(err, sqlite3.IntegrityError):
        return "UNIQUE constraint failed" in str(err)
    if isinstance(err, sqlite3.OperationalError):
        return "locked" in str(err).lower() or "busy" in str(err).lower()
    return getattr(err, "sqlstate", None) in ("23505", "40001", "40P01", "55P03")


def retry(
    fn: Callable[[], Any],
    attempts: int = 10,
    base_delay: float = 0.05,
    errors: tuple[type[BaseException], ...] = (),
    fail: Callable[[BaseException], str] | None = None,
) -> Any:
    """fn() again (exponential, jittered waits) while it fails with a transient database error
    (of `errors`, else the drivers'; a SQLAlchemy error is judged by the driver's error it wraps);
    any other is one StoreError line, `fail(error)` or "database error: ..."."""
    errors = errors or driver_errors()
    for attempt in range(attempts):
        try:
            return fn()
        except errors as err:
            cause = getattr(err, "orig", None) or err
            if attempt == attempts - 1 or not is_transient(cause):
                raise StoreError(fail(cause) if fail else f"database error: {one_line(err)}") from err
            time.sleep(base_delay * (2**attempt) * (0.5 + random.random()))
    raise AssertionError("unreachable")


# ---------------------------------------------------------------- opening


def sqlite_path(url: str) -> str | None:
    """The file behind a `sqlite:///PATH` URL, None for other databases and in-memory ones."""
    if not url.startswith("sqlite:///"):
        return None
    path = url[len("sqlite:///") :].split("?", 1)[0]
    return path if path and path != ":memory:" else None


def _dialect(url: str) -> str:
    scheme = url.split("://", 1)[0].lower() if "://" in url else ""
    base = scheme.split("+", 1)[0]
    if base == "sqlite":
        return "sqlite"
    if base in ("postgresql", "postgres"):
        if "+" in scheme and scheme.split("+", 1)[1] != "psycopg":
            raise StoreError(f"unsupported PostgreSQL driver {scheme!r}: use postgresql+psycopg://")
        return "postgresql"
    raise StoreError(
        f"unsupported database URL {hide_password(url)!r}: give a SQLite path, "
        "sqlite:///PATH or postgresql+psycopg://USER@HOST/DB"
    )


def hide_password(url: str) -> str:
    """The URL as it may be shown: its password replaced by ***."""
    if "://" not in url or "@" not in url.split("://", 1)[1].split("/", 1)[0]:
        return url
    scheme, rest = url.split("://", 1)
    auth, host = rest.split("@", 1)
    if ":" in auth:
        auth = auth.split(":", 1)[0] + ":***"
    return f"{scheme}://{auth}@{host}"


def _connect_sqlite(path: str, readonly: bool) -> sqlite3.Connection:
    # switching a new file to WAL needs it to itself: processes opening it at once can find it
    # "locked" past the busy handler (SQLite's deadlock rule); they try again
    deadline = time.monotonic() + BUSY_TIMEOUT_S
    for attempt in range(1000):
        conn = None
        try:
            if readonly:
                conn = sqlite3.connect(
                    f"file:{quote(path)}?mode=ro",
                    uri=True,
                    timeout=BUSY_TIMEOUT_S,
                    isolation_level=None,
                    check_same_thread=False,
                )
            else:
                conn = sqlite3.connect(path, timeout=BUSY_TIMEOUT_S, isolation_level=None, check_same_thread=False)
                conn.execute(f"PRAGMA page_size={PAGE_SIZE}")  # (a new, empty file's only)
                if conn.execute("PRAGMA journal_mode").fetchone()[0].lower() != "wal":
                    conn.execute("PRAGMA journal_mode=WAL")
                conn.execute("PRAGMA synchronous=NORMAL")
            conn.execute(f"PRAGMA busy_timeout={int(BUSY_TIMEOUT_S * 1000)}")
            conn.execute("PRAGMA foreign_keys=ON")
            return conn
        except sqlite3.OperationalError as err:
            if conn is not None:
                conn.close()
            if not is_transient(err) or time.monotonic() > deadline:
                raise
            time.sleep(min(0.5, 0.01 * (2 ** min(attempt, 6))) * (0.5 + random.random()))
    raise AssertionError("unreachable")


def _revision(pg: bool, one: Callable[[str], Any]) -> str | None:
    """The schema revision, through `one` (SQL -> first row or None) of either connection."""
    if pg:
        exists = one("SELECT to_regclass('alembic_version')")[0] is not None
    else:
        exists = one("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'alembic_version'") is not None
    row = one("SELECT version_num FROM alembic_version") if exists else None
    return row[0] if row else None


def _refuse_foreign(path: str) -> None:
    """A SQLite file with other tables and no bootlog schema is someone else's database (a --db
    typo pointing at an application's file): never add bootlog's tables to it, nor switch it to
    WAL.  Read read-only, before anything else opens it."""
    if os.path.getsize(path) == 0:
        return
    try:
        con = sqlite3.connect(f"file:{quote(path)}?mode=ro", uri=True)
        try:
            tables = [r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        finally:
            con.close()
    except sqlite3.Error:
        return  # (not SQLite at all, locked, damaged: opening it says what is wrong)
    if tables and "alembic_version" not in tables:
        shown = ", ".join(sorted(tables)[:5]) + (", ..." if len(tables) > 5 else "")
        raise StoreError(
            f"{path} is not a bootlog database (it holds other tables: {shown}); "
            "give a new file or an existing bootlog database"
        )


def connect(db: str | None, *, create: bool = True, readonly: bool = False) -> Store:
    """A connection to the user's database, without touching its schema.  create False: a SQLite
    file that is not there is an error (a read command with a mistyped --db must not leave an
    empty database behind); readonly: SQLite opened read-only (a read-only mount)."""
    url = resolve_url(db)
    dialect = _dialect(url)
    where = sqlite_path(url) or hide_password(url)
    try:
        if dialect == "postgresql":
            try:
                import psycopg
            except ImportError as err:
                raise StoreError("no PostgreSQL driver: pip install 'bootlog[postgres]' (psycopg 3)") from err
            conn = psycopg.connect("postgresql://" + url.split("://", 1)[1], autocommit=True, connect_timeout=10)
            return Store(conn, dialect, url, where)
        path = sqlite_path(url)
        if path is None:
            raise StoreError(f"not a database file: {url}")
        if not os.path.exists(path):
            if not create:
                raise StoreError(f"no database at {path} (bootlog ingest LOG creates it)")
            create_private_file(path)
        elif os.path.isdir(path):
            raise StoreError(f"cannot open database {path}: is a directory")
        elif not os.path.isfile(path):
            # /dev/stdout, a FIFO, a terminal: SQLite would write a database into the output
            # (or wait on the FIFO); a database is a regular file
            raise StoreError(
                f"cannot open database {path}: not a regular file (a device or a pipe); give a database file"
            )
        else:
            _refuse_foreign(path)
        return Store(_connect_sqlite(path, readonly), dialect, url, where)
    except StoreError:
        raise
    except driver_errors() as err:
        raise StoreError(f"cannot open database {where}: {one_line(err)}") from err


def open_store(db: str | None, *, create: bool = True) -> Store:
    """The user's database with its schema created or upgraded to the newest revision.
    create False (read commands): no new SQLite file is made, no schema is created where there
    is none (StoreError), and a file on a read-only mount is read as it is when its schema is
    current."""
    store = connect(db, create=create)
    try:
        rev = current_revision(store)
        if rev is None and not create:
            # a read command never writes: an empty database (an empty SQLite file, a PostgreSQL
            # database nothing was stored in) gets no tables from it
            raise StoreError(f"no bootlog database in {store.where} yet (bootlog ingest LOG creates it)")
        if rev != HEAD_REVISION:
            migrate(store)
        return store
    except (sqlite3.OperationalError, StoreError) as err:
        store.close()
        if not create and "readonly" in str(err).lower().replace(" ", ""):
            store = connect(db, create=False, readonly=True)
            if current_revision(store) != HEAD_REVISION:
                store.close()
                raise StoreError(
                    f"database {store.where} is read-only and its schema is older than this "
                    "bootlog's: run bootlog db upgrade where it is writable"
                ) from None
            return store
        if isinstance(err, StoreError):
            raise
        raise StoreError(f"cannot open database {store.where}: {one_line(err)}") from err
    except BaseException:
        store.close()
        raise


def current_revision(store: Store) -> str | None:
    return retry(lambda: _revision(store.pg, store.one))


# ---------------------------------------------------------------- migrations (Alembic)


def script_location() -> str:
    """The Alembic scripts: the bootlog.store.migrations package, beside this module."""
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), "migrations")


@contextmanager
def _alembic(store: Store) -> Iterator[tuple[Any, Any]]:
    """(alembic Config, SQLAlchemy connection) inside one locked transaction."""
    from alembic.config import Config
    from sqlalchemy import create_engine, event, text
    from sqlalchemy.pool import NullPool

    # (psycopg 3 for PostgreSQL, whatever driver the URL named)
    url = "postgresql+psycopg://" + store.url.split("://", 1)[1] if store.pg else store.url
    engine = create_engine(url, poolclass=NullPool)
    if not store.pg:

        def on_connect(dbapi_conn, _record) -> None:
            dbapi_conn.isolation_level = None  # (transactions are begun below, not by the driver)
            dbapi_conn.execute(f"PRAGMA busy_timeout={int(BUSY_TIMEOUT_S * 1000)}")

        event.listen(engine, "connect", on_connect)
        event.listen(engine, "begin", lambda conn: conn.exec_driver_sql("BEGIN IMMEDIATE"))
    try:
        with engine.begin() as conn:
            if store.pg:
                conn.execute(text("SELECT pg_advisory_xact_lock(7162534)"))
            cfg = Config()
            cfg.set_main_option("script_location", script_location())
            cfg.attributes["connection"] = conn
            yield cfg, conn
    finally:
        engine.dispose()


def migrate(store: Store, revision: str = "head", down: bool = False) -> None:
    """Run the migrations to `revision` in one locked transaction: processes opening a fresh
    database at once are serialised (SQLite BEGIN IMMEDIATE, a PostgreSQL advisory lock) and the
    losers find the schema done."""
    from alembic import command
    from alembic.script import ScriptDirectory
    from sqlalchemy import text
    from sqlalchemy.exc import SQLAlchemyError

    def run() -> None:
        with _alembic(store) as (cfg, conn):
            known = {r.revision for r in ScriptDirectory.from_config(cfg).walk_revisions()}
            rev = _revision(store.pg, lambda sql: conn.execute(text(sql)).first())
            if rev is not None and rev not in known:
                raise StoreError(
                    f"database schema {rev} is newer than this bootlog knows (newest {HEAD_REVISION}); upgrade bootlog"
                )
            (command.downgrade if down else command.upgrade)(cfg, revision)

    try:
        retry(
            run, errors=(SQLAlchemyError,), fail=lambda err: f"cannot migrate database {store.where}: {one_line(err)}"
        )
    except StoreError:
        raise
    except Exception as err:  # alembic's CommandError
        raise StoreError(f"cannot migrate database {store.where}: {one_line(err)}") from err


__all__ = [
    "Store",
    "connect",
    "open_store",
    "retry",
    "migrate",
    "one_line",
    "HEAD_REVISION",
    "sqlite_path",
    "hide_password",
    "default_path",
    "resolve_url",
    "current_revision",
]
