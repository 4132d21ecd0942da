"""the deploy around a boot: what the container engine said of its run, the plan's env file

Revision ID: 0003_deploys
Revises: 0002_sample_chunks
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003_deploys"
down_revision = "0002_sample_chunks"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "deploys",
        sa.Column("boot_id", sa.Integer(), nullable=False),
        sa.Column("data", sa.JSON(), nullable=False),
        sa.ForeignKeyConstraint(["boot_id"], ["boots.id"], name=op.f("fk_deploys_boot_id_boots"), ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("boot_id", name=op.f("pk_deploys")),
    )


def downgrade() -> None:
    op.drop_table("deploys")
