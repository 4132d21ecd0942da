"""Alembic environment for bootlog.

bootlog runs its migrations itself (bootlog.store.db.migrate) over its own connection, passed in
config.attributes["connection"]; the `alembic` command line works too, given sqlalchemy.url.
The migrations are the one definition of the schema: there are no models to compare against.
"""

from __future__ import annotations

from alembic import context
from sqlalchemy import create_engine

config = context.config


def _configure(connection) -> None:
    # render_as_batch: SQLite cannot ALTER most things; batch mode copies the table
    context.configure(connection=connection, target_metadata=None, render_as_batch=True)


def run_offline() -> None:
    context.configure(
        url=config.get_main_option("sqlalchemy.url"), target_metadata=None, literal_binds=True, render_as_batch=True
    )
    with context.begin_transaction():
        context.run_migrations()


def run_online() -> None:
    connection = config.attributes.get("connection")
    if connection is not None:
        _configure(connection)
        with context.begin_transaction():  # (the caller's transaction: nothing new is begun)
            context.run_migrations()
        return
    engine = create_engine(config.get_main_option("sqlalchemy.url"))
    with engine.connect() as conn:
        _configure(conn)
        with context.begin_transaction():
            context.run_migrations()
    engine.dispose()


if context.is_offline_mode():
    run_offline()
else:
    run_online()
