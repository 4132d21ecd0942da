"""runtime samples in chunks: one row per up to 4096 stats lines instead of one row each

A boot that served for a month prints ~300,000 stats lines; a row each (values as a JSON dict)
was most of an ingest's time and of the database.  A chunk row holds them columnar:
data = {"keys": [name, ...], "rows": [[line, ts, value, ...], ...]} (None: no value).

Revision ID: 0002_sample_chunks
Revises: 0001_initial
"""

from __future__ import annotations

import json

import sqlalchemy as sa
from alembic import context, op

revision = "0002_sample_chunks"
down_revision = "0001_initial"
branch_labels = None
depends_on = None

CHUNK_ROWS = 4096


def _loads(v):
    return json.loads(v) if isinstance(v, (str, bytes)) else v


def _chunk(rows: list) -> dict:
    """{keys, rows} of (line, ts, values dict) tuples."""
    keys: list[str] = []
    for _, _, values in rows:
        for k in values:
            if k not in keys:
                keys.append(k)
    return {"keys": keys, "rows": [[line, ts, *[values.get(k) for k in keys]] for line, ts, values in rows]}


def upgrade() -> None:
    op.create_table(
        "sample_chunks",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("boot_id", sa.Integer(), nullable=False),
        sa.Column("first_line", sa.Integer(), nullable=False),
        sa.Column("last_line", sa.Integer(), nullable=False),
        sa.Column("n", sa.Integer(), nullable=False),
        sa.Column("data", sa.JSON(), nullable=False),
        sa.ForeignKeyConstraint(
            ["boot_id"], ["boots.id"], name=op.f("fk_sample_chunks_boot_id_boots"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_sample_chunks")),
    )
    with op.batch_alter_table("sample_chunks") as batch_op:
        batch_op.create_index("ix_sample_chunks_boot_id_first_line", ["boot_id", "first_line"], unique=False)
    if not context.is_offline_mode():  # (offline SQL: no rows to move)
        _chunk_rows()
    with op.batch_alter_table("samples") as batch_op:
        batch_op.drop_index("ix_samples_boot_id_line")
    op.drop_table("samples")


def _chunk_rows() -> None:
    conn = op.get_bind()
    chunks = sa.table(
        "sample_chunks",
        sa.column("boot_id"),
        sa.column("first_line"),
        sa.column("last_line"),
        sa.column("n"),
        sa.column("data", sa.JSON()),
    )
    boot = None
    rows: list[tuple] = []  # (line, ts, values) of one boot, up to CHUNK_ROWS

    def flush() -> None:
        if rows:
            conn.execute(
                chunks.insert().values(
                    boot_id=boot, first_line=rows[0][0], last_line=rows[-1][0], n=len(rows), data=_chunk(rows)
                )
            )
            rows.clear()

    for bid, line, ts, values in conn.execute(
        sa.text('SELECT boot_id, line, ts, "values" FROM samples ORDER BY boot_id, line, id')
    ).fetchall():
        if bid != boot or len(rows) >= CHUNK_ROWS:
            flush()
            boot = bid
        rows.append((line, ts, _loads(values) or {}))
    flush()


def downgrade() -> None:
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
    with op.batch_alter_table("samples") as batch_op:
        batch_op.create_index("ix_samples_boot_id_line", ["boot_id", "line"], unique=False)
    if not context.is_offline_mode():
        _sample_rows()
    with op.batch_alter_table("sample_chunks") as batch_op:
        batch_op.drop_index("ix_sample_chunks_boot_id_first_line")
    op.drop_table("sample_chunks")


def _sample_rows() -> None:
    conn = op.get_bind()
    samples = sa.table(
        "samples", sa.column("boot_id"), sa.column("line"), sa.column("ts"), sa.column("values", sa.JSON())
    )
    for bid, data in conn.execute(
        sa.text("SELECT boot_id, data FROM sample_chunks ORDER BY boot_id, first_line, id")
    ).fetchall():
        d = _loads(data)
        out = [
            {
                "boot_id": bid,
                "line": r[0],
                "ts": r[1],
                "values": {k: v for k, v in zip(d["keys"], r[2:]) if v is not None},
            }
            for r in d["rows"]
        ]
        if out:
            conn.execute(samples.insert(), out)
