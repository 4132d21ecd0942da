"""boots ordered by when they started: `last` is the latest started, not the latest stored

Revision ID: 0004_start_order
Revises: 0003_deploys
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0004_start_order"
down_revision = "0003_deploys"
branch_labels = None
depends_on = None


def upgrade() -> None:
    from bootlog.store.write import start_key

    with op.batch_alter_table("boots") as batch:
        batch.add_column(sa.Column("start_key", sa.String(length=32), nullable=True))
    if op.get_context().as_sql:  # an offline script cannot read rows: text order of the stamps
        op.execute("UPDATE boots SET start_key = coalesce(started_at, ingested_at)")
        op.create_index("ix_boots_start_key", "boots", ["start_key", "id"])
        return
    conn = op.get_bind()
    rows = conn.execute(sa.text("SELECT id, started_at, ingested_at FROM boots ORDER BY id")).fetchall()
    for bid, started, ingested in rows:
        conn.execute(
            sa.text("UPDATE boots SET start_key = :k WHERE id = :i"),
            {"k": start_key(started) or start_key(ingested), "i": bid},
        )
    op.create_index("ix_boots_start_key", "boots", ["start_key", "id"])


def downgrade() -> None:
    op.drop_index("ix_boots_start_key", table_name="boots")
    with op.batch_alter_table("boots") as batch:
        batch.drop_column("start_key")
