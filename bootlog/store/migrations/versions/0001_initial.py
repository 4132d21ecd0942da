"""initial schema: sources, boots (+ metrics, config, events, samples), read positions

Revision ID: 0001_initial
Revises:
Create Date: 2026-11-29 15:42:46.033700
"""

from __future__ import annotations

from typing import Sequence, Union

import sqlalchemy as sa
from alembic import op


revision: str = "0001_initial"
down_revision: Union[str, Sequence[str], None] = None
branch_labels: Union[str, Sequence[str], None] = None
depends_on: Union[str, Sequence[str], None] = None


def upgrade() -> None:
    op.create_table(
        "positions",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("source_key", sa.Text(), nullable=False),
        sa.Column("byte_offset", sa.BigInteger(), nullable=False),
        sa.Column("head_fingerprint", sa.String(length=128), nullable=False),
        sa.Column("updated", sa.String(length=40), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_positions")),
        sa.UniqueConstraint("source_key", name=op.f("uq_positions_source_key")),
    )
    op.create_table(
        "sources",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("key", sa.Text(), nullable=False),
        sa.Column("name", sa.Text(), nullable=False),
        sa.Column("kind", sa.String(length=32), nullable=False),
        sa.Column("container", sa.Text(), nullable=True),
        sa.Column("host", sa.Text(), nullable=True),
        sa.Column("created", sa.String(length=40), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_sources")),
        sa.UniqueConstraint("key", name=op.f("uq_sources_key")),
    )
    op.create_table(
        "boots",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("source_id", sa.Integer(), nullable=False),
        sa.Column("container", sa.Text(), nullable=True),
        sa.Column("host", sa.Text(), nullable=True),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("failure", sa.String(length=32), nullable=True),
        sa.Column("failure_message", sa.Text(), nullable=True),
        sa.Column("vllm_version", sa.String(length=64), nullable=True),
        sa.Column("engine", sa.String(length=8), nullable=True),
        sa.Column("model", sa.Text(), nullable=True),
        sa.Column("started_at", sa.String(length=40), nullable=True),
        sa.Column("ready_at", sa.String(length=40), nullable=True),
        sa.Column("ended_at", sa.String(length=40), nullable=True),
        sa.Column("first_line", sa.Integer(), nullable=False),
        sa.Column("last_line", sa.Integer(), nullable=False),
        sa.Column("fingerprint", sa.String(length=128), nullable=False),
        sa.Column("config_hash", sa.String(length=64), nullable=False),
        sa.Column("ingested_at", sa.String(length=40), nullable=False),
        sa.ForeignKeyConstraint(
            ["source_id"], ["sources.id"], name=op.f("fk_boots_source_id_sources"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_boots")),
        sa.UniqueConstraint("fingerprint", name=op.f("uq_boots_fingerprint")),
    )
    with op.batch_alter_table("boots", schema=None) as batch_op:
        batch_op.create_index("ix_boots_config_hash_id", ["config_hash", "id"], unique=False)
        batch_op.create_index("ix_boots_container_id", ["container", "id"], unique=False)
        batch_op.create_index("ix_boots_host_id", ["host", "id"], unique=False)
        batch_op.create_index("ix_boots_source_id_id", ["source_id", "id"], unique=False)

    op.create_table(
        "config",
        sa.Column("boot_id", sa.Integer(), nullable=False),
        sa.Column("key", sa.String(length=128), nullable=False),
        sa.Column("value", sa.Text(), nullable=False),
        sa.ForeignKeyConstraint(["boot_id"], ["boots.id"], name=op.f("fk_config_boot_id_boots"), ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("boot_id", "key", name=op.f("pk_config")),
    )
    op.create_table(
        "events",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("boot_id", sa.Integer(), nullable=False),
        sa.Column("seq", sa.Integer(), nullable=False),
        sa.Column("kind", sa.String(length=64), nullable=False),
        sa.Column("rank", sa.Integer(), nullable=True),
        sa.Column("line", sa.Integer(), nullable=False),
        sa.Column("ts", sa.String(length=40), nullable=True),
        sa.Column("message", sa.Text(), nullable=False),
        sa.Column("detail", sa.JSON(), nullable=False),
        sa.ForeignKeyConstraint(["boot_id"], ["boots.id"], name=op.f("fk_events_boot_id_boots"), ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_events")),
    )
    with op.batch_alter_table("events", schema=None) as batch_op:
        batch_op.create_index("ix_events_boot_id_seq", ["boot_id", "seq"], unique=False)

    op.create_table(
        "metrics",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("boot_id", sa.Integer(), nullable=False),
        sa.Column("seq", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(length=64), nullable=False),
        sa.Column("value", sa.Float(), nullable=False),
        sa.Column("unit", sa.String(length=16), nullable=False),
        sa.Column("rank", sa.Integer(), nullable=True),
        sa.Column("line", sa.Integer(), nullable=True),
        sa.Column("ts", sa.String(length=40), nullable=True),
        sa.Column("pattern", sa.String(length=128), nullable=True),
        sa.ForeignKeyConstraint(["boot_id"], ["boots.id"], name=op.f("fk_metrics_boot_id_boots"), ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_metrics")),
    )
    with op.batch_alter_table("metrics", schema=None) as batch_op:
        batch_op.create_index("ix_metrics_boot_id_seq", ["boot_id", "seq"], unique=False)
        batch_op.create_index("ix_metrics_name", ["name"], unique=False)

    op.create_table(
        "samples",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("boot_id", sa.Integer(), nullable=False),
        sa.Column("line", sa.Integer(), nullable=False),
        sa.Column("ts", sa.String(length=40), nullable=True),
        sa.Column("values", sa.JSON(), nullable=False),
        sa.ForeignKeyConstraint(["boot_id"], ["boots.id"], name=op.f("fk_samples_boot_id_boots"), ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_samples")),
    )
    with op.batch_alter_table("samples", schema=None) as batch_op:
        batch_op.create_index("ix_samples_boot_id_line", ["boot_id", "line"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("samples", schema=None) as batch_op:
        batch_op.drop_index("ix_samples_boot_id_line")

    op.drop_table("samples")
    with op.batch_alter_table("metrics", schema=None) as batch_op:
        batch_op.drop_index("ix_metrics_name")
        batch_op.drop_index("ix_metrics_boot_id_seq")

    op.drop_table("metrics")
    with op.batch_alter_table("events", schema=None) as batch_op:
        batch_op.drop_index("ix_events_boot_id_seq")

    op.drop_table("events")
    op.drop_table("config")
    with op.batch_alter_table("boots", schema=None) as batch_op:
        batch_op.drop_index("ix_boots_source_id_id")
        batch_op.drop_index("ix_boots_host_id")
        batch_op.drop_index("ix_boots_container_id")
        batch_op.drop_index("ix_boots_config_hash_id")

    op.drop_table("boots")
    op.drop_table("sources")
    op.drop_table("positions")
