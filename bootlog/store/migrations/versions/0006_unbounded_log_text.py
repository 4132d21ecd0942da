"""text the log (or a plan) writes is unbounded: a config key, the vLLM version, a figure's or an
event's name, the pattern that read it.  On PostgreSQL a varchar(128) config key of 200 characters
failed the whole ingest ("value too long for type character varying(128)"); SQLite never
enforced the lengths.

Revision ID: 0006_unbounded_log_text
Revises: 0005_boot_end
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0006_unbounded_log_text"
down_revision = "0005_boot_end"
branch_labels = None
depends_on = None

# (table, column, the length it had)
COLUMNS = (
    ("config", "key", 128),
    ("boots", "vllm_version", 64),
    ("metrics", "name", 64),
    ("metrics", "pattern", 128),
    ("events", "kind", 64),
)


def upgrade() -> None:
    for table, column, length in COLUMNS:
        with op.batch_alter_table(table) as batch:
            batch.alter_column(column, type_=sa.Text(), existing_type=sa.String(length=length))


def downgrade() -> None:
    for table, column, length in COLUMNS:
        with op.batch_alter_table(table) as batch:
            batch.alter_column(column, type_=sa.String(length=length), existing_type=sa.Text())
