"""how a boot's process ended (clean_stop / died / failed / log_ends) and how its KV pool was sized
(explicit / measured): the verdicts read both

Revision ID: 0005_boot_end
Revises: 0004_start_order
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0005_boot_end"
down_revision = "0004_start_order"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # (boots stored before this say nothing of either: NULL, read as "not known")
    with op.batch_alter_table("boots") as batch:
        batch.add_column(sa.Column("ended", sa.String(length=16), nullable=True))
        batch.add_column(sa.Column("kv_cache_sized_by", sa.String(length=16), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("boots") as batch:
        batch.drop_column("kv_cache_sized_by")
        batch.drop_column("ended")
