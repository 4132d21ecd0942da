"""Open the database: resolve where it is, set SQLite up for several writers, migrate on first use.

Alembic is imported only when the schema is not at HEAD_REVISION, so the everyday path (an
up-to-date database) costs one SELECT, not an alembic import.
"""
from __future__ import annotations

import os

from sqlalchemy import Engine, create_engine, event, text
from sqlalchemy.engine import Connection, make_url
from sqlalchemy.exc import ArgumentError, SQLAlchemyError

from bootlog.errors import StoreError
from bootlog.store.where import (  # noqa: F401  (re-exported)
    HEAD_REVISION, PAGE_SIZE, create_private_file as _create_private_file, default_path, resolve_url)

# Execution option that makes a SQLite transaction start with BEGIN IMMEDIATE: a writer takes the
# write lock up front and waits on busy_timeout, instead of upgrading a read lock mid-transaction
# (which SQLite refuses at once with "database is locked", busy_timeout or not).
WRITE = "bootlog_write"

BUSY_TIMEOUT_MS = 30_000


def sqlite_path(url: str) -> str | None:
    """The file behind a SQLite URL, None for in-memory or other databases."""
    u = make_url(url)
    if u.get_backend_name() != "sqlite" or not u.database or u.database == ":memory:":
        return None
    return u.database


def _sqlite_connect(dbapi_conn, _record) -> None:
    # Hand transaction control to SQLAlchemy's "begin" event below (pysqlite's own implicit
    # BEGIN is deferred and would not cover reads or DDL).
    dbapi_conn.isolation_level = None
    cur = dbapi_conn.cursor()
    cur.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
    cur.execute(f"PRAGMA page_size={PAGE_SIZE}")  # (a new file's only: see where.PAGE_SIZE)
    cur.execute("PRAGMA journal_mode=WAL")
    cur.execute("PRAGMA synchronous=NORMAL")
    cur.execute("PRAGMA foreign_keys=ON")
    cur.close()


def _sqlite_begin(conn: Connection) -> None:
    conn.exec_driver_sql("BEGIN IMMEDIATE" if conn.get_execution_options().get(WRITE) else "BEGIN")


def make_engine(url: str) -> Engine:
    """An Engine with bootlog's connection setup, without touching the schema."""
    try:
        u = make_url(url)
    except (ArgumentError, ValueError) as err:  # ValueError: a port that is not a number
        raise StoreError(f"not a database URL or path: {url}") from err
    backend = u.get_backend_name()
    try:
        if backend == "sqlite":
            path = sqlite_path(url)
            if path:
                _create_private_file(path)
            engine = create_engine(u, connect_args={"timeout": BUSY_TIMEOUT_MS / 1000})
            event.listen(engine, "connect", _sqlite_connect)
            event.listen(engine, "begin", _sqlite_begin)
        else:
            engine = create_engine(u, pool_pre_ping=True)
    except ImportError as err:
        raise StoreError(f"no database driver for {u.drivername}: {err}") from err
    except SQLAlchemyError as err:
        raise StoreError(f"cannot open database: {one_line(err)}") from err
    return engine


def writer(engine: Engine) -> Engine:
    """The same engine (same pool), with SQLite transactions taking the write lock at BEGIN."""
    return engine.execution_options(**{WRITE: True})


def one_line(err: BaseException) -> str:
    """A DB error as one readable line (drops SQLAlchemy's [SQL: ...] and background links)."""
    orig = getattr(err, "orig", None)
    msg = str(orig if orig is not None else err)
    msg = msg.split("\n")[0].strip()
    return msg or type(err).__name__


def _version_in(conn: Connection) -> str | None:
    if conn.dialect.name == "sqlite":
        found = conn.exec_driver_sql(
            "SELECT 1 FROM sqlite_master WHERE type='table' AND name='alembic_version'"
        ).first()
    elif conn.dialect.name == "postgresql":
        found = conn.execute(text("SELECT to_regclass('alembic_version')")).scalar()
    else:
        from sqlalchemy import inspect

        found = inspect(conn).has_table("alembic_version")
    if not found:
        return None
    return conn.execute(text("SELECT version_num FROM alembic_version")).scalar()


def current_revision(engine: Engine) -> str | None:
    """The alembic_version of the database, None when it was never migrated."""
    with engine.connect() as conn:
        return _version_in(conn)


def script_location() -> str:
    """The Alembic scripts: installed as the bootlog.migrations package, or, when bootlog is
    imported straight from a checkout (`python -m pytest` puts the checkout first on sys.path),
    the checkout's top-level migrations/ folder."""
    try:
        import bootlog.migrations as migrations  # the packaged migrations/ directory
    except ModuleNotFoundError:
        import bootlog

        here = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(bootlog.__file__))), "migrations")
        if os.path.isfile(os.path.join(here, "env.py")):
            return here
        raise
    return os.path.dirname(os.path.abspath(migrations.__file__))


def alembic_config(engine: Engine | None = None, conn: Connection | None = None):
    from alembic.config import Config

    cfg = Config()
    cfg.set_main_option("script_location", script_location())
    if engine is not None:
        cfg.set_main_option("sqlalchemy.url", engine.url.render_as_string(hide_password=False).replace("%", "%%"))
    cfg.attributes["connection"] = conn
    return cfg


def upgrade(engine: Engine, revision: str = "head") -> None:
    """Run Alembic migrations up to `revision` in one locked transaction.

    Several processes may open a fresh database at once: SQLite's BEGIN IMMEDIATE and a
    PostgreSQL advisory lock serialise them, and Alembic re-reads the version inside the lock,
    so the losers find the schema done and do nothing.
    """
    from alembic import command
    from alembic.script import ScriptDirectory

    cfg = alembic_config(engine)
    known = {r.revision for r in ScriptDirectory.from_config(cfg).walk_revisions()}
    with writer(engine).begin() as conn:
        if engine.dialect.name == "postgresql":
            conn.execute(text("SELECT pg_advisory_xact_lock(7162534)"))
        rev = _version_in(conn)
        if rev is not None and rev not in known:
            # written by a newer bootlog: migrating would fail obscurely, and downgrading is theirs
            raise StoreError(
                f"database schema {rev} is newer than this bootlog knows (newest {HEAD_REVISION}); "
                "upgrade bootlog"
            )
        cfg.attributes["connection"] = conn
        command.upgrade(cfg, revision)


def downgrade(engine: Engine, revision: str) -> None:
    from alembic import command

    with writer(engine).begin() as conn:
        if engine.dialect.name == "postgresql":
            conn.execute(text("SELECT pg_advisory_xact_lock(7162534)"))
        command.downgrade(alembic_config(engine, conn), revision)


def _create_fresh(engine: Engine) -> bool:
    """A brand-new SQLite file: create the newest schema straight from the models and stamp it
    (what running every migration would build; tests/test_migrations.py holds the two equal),
    without importing Alembic.  False when someone else got there first or tables exist."""
    from sqlalchemy import inspect as sa_inspect

    from bootlog.store.models import Base

    with writer(engine).begin() as conn:  # BEGIN IMMEDIATE: one creator among racing processes
        if _version_in(conn) is not None or sa_inspect(conn).get_table_names():
            return False
        Base.metadata.create_all(conn)
        conn.execute(text("CREATE TABLE alembic_version (version_num VARCHAR(32) NOT NULL, "
                          "CONSTRAINT alembic_version_pkc PRIMARY KEY (version_num))"))
        conn.execute(text("INSERT INTO alembic_version (version_num) VALUES (:v)"), {"v": HEAD_REVISION})
    return True


def refuse_foreign(path: str | None) -> None:
    """A SQLite file that holds other tables and no bootlog schema is someone else's database:
    never add bootlog's tables to it, nor switch it to WAL (a --db typo pointing at an
    application's file).  Read with the standard library, read-only, before any engine connects."""
    if not path or not os.path.isfile(path) or os.path.getsize(path) == 0:
        return
    import sqlite3
    from urllib.parse import quote

    try:
        con = sqlite3.connect(f"file:{quote(path)}?mode=ro", uri=True)
        try:
            tables = [r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        finally:
            con.close()
    except sqlite3.Error:
        return  # (not SQLite at all, locked, damaged: the engine says what is wrong)
    # bootlog writes its tables and alembic_version in one transaction: a file with tables but
    # no alembic_version holds some other program's (which may well call one "sources")
    if tables and "alembic_version" not in tables:
        shown = ", ".join(sorted(tables)[:5]) + (", ..." if len(tables) > 5 else "")
        raise StoreError(f"{path} is not a bootlog database (it holds other tables: {shown}); "
                         "give a new file or an existing bootlog database")


def open_db(db: str | None) -> Engine:
    """An Engine on the user's database, its schema created or upgraded to the newest revision."""
    url = resolve_url(db)
    engine = make_engine(url)  # (no connection yet: the foreign-file check reads first)
    refuse_foreign(sqlite_path(url))
    where = sqlite_path(url) or make_url(url).render_as_string(hide_password=True)
    try:
        rev = retry(lambda: current_revision(engine))
        if rev is None and engine.dialect.name == "sqlite" and retry(lambda: _create_fresh(engine)):
            rev = HEAD_REVISION
        if rev != HEAD_REVISION:
            retry(lambda: upgrade(engine))
    except StoreError as err:
        engine.dispose()
        if isinstance(err.__cause__, SQLAlchemyError):  # a driver error: say which database
            raise StoreError(f"cannot open database {where}: {one_line(err.__cause__)}") from err.__cause__
        raise
    except Exception as err:  # alembic raises its own CommandError
        engine.dispose()
        raise StoreError(f"cannot open database {where}: {one_line(err)}") from err
    return engine


def is_transient(err: BaseException) -> bool:
    """Errors worth retrying the whole transaction for: lock contention, serialisation, races."""
    from sqlalchemy.exc import DBAPIError, IntegrityError, OperationalError

    if isinstance(err, IntegrityError):
        # a concurrent writer inserted the same fingerprint/source/position first; retrying
        # finds its row.  NOT NULL or foreign-key violations are bugs: never retried.
        code = getattr(err.orig, "sqlstate", None) or getattr(err.orig, "pgcode", None)
        return code == "23505" or "UNIQUE constraint failed" in str(err.orig)
    if isinstance(err, OperationalError):
        msg = str(err.orig).lower()
        if "locked" in msg or "busy" in msg:
            return True
    if isinstance(err, DBAPIError):
        code = getattr(err.orig, "sqlstate", None) or getattr(err.orig, "pgcode", None)
        if code in ("40001", "40P01", "55P03"):
            return True
    return False


def retry(fn, attempts: int = 8, base_delay: float = 0.05):
    """Call fn(); on a transient database error wait (exponential, jittered) and call it again."""
    import random
    import time

    for attempt in range(attempts):
        try:
            return fn()
        except SQLAlchemyError as err:
            if attempt == attempts - 1 or not is_transient(err):
                raise StoreError(f"database error: {one_line(err)}") from err
            time.sleep(base_delay * (2**attempt) * (0.5 + random.random()))
    raise AssertionError("unreachable")
