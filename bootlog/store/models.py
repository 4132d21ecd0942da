"""The database schema as SQLAlchemy 2 typed ORM models.

Timestamps are stored as ISO-8601 text exactly as the parser resolved them (with the envelope's
offset when it had one, naive when only vLLM's own clock was known): a timezone-aware DateTime
column would silently convert naive values on PostgreSQL and drop offsets on SQLite, and `show`
must print what the log said.  Figures are stored long (one row per value) so a new figure name
never needs a migration.
"""
from __future__ import annotations

from typing import Any

from sqlalchemy import JSON, BigInteger, Float, ForeignKey, Index, Integer, MetaData, String, Text
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

# Deterministic constraint names: Alembic batch mode on SQLite needs them to drop or alter
# constraints, and PostgreSQL and SQLite then agree on every name.
NAMING_CONVENTION = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}

TS = String(40)  # "2026-10-02T09:53:01.123456-07:00" is 32 characters


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING_CONVENTION)


class Source(Base):
    """Where boots came from: a file, stdin, a container's log."""

    __tablename__ = "sources"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    # kind|name|container|host; one column so the uniqueness also holds when container/host are
    # NULL (NULLs never collide in a multi-column unique constraint)
    key: Mapped[str] = mapped_column(Text, unique=True)
    name: Mapped[str] = mapped_column(Text)
    kind: Mapped[str] = mapped_column(String(32))
    container: Mapped[str | None] = mapped_column(Text)
    host: Mapped[str | None] = mapped_column(Text)
    created: Mapped[str] = mapped_column(TS)


class BootRow(Base):
    __tablename__ = "boots"
    __table_args__ = (
        # refs ("last", "prev" of a container/host) and boots_like walk these newest-first
        Index("ix_boots_container_id", "container", "id"),
        Index("ix_boots_host_id", "host", "id"),
        Index("ix_boots_source_id_id", "source_id", "id"),
        Index("ix_boots_config_hash_id", "config_hash", "id"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    source_id: Mapped[int] = mapped_column(ForeignKey("sources.id", ondelete="CASCADE"))
    container: Mapped[str | None] = mapped_column(Text)
    host: Mapped[str | None] = mapped_column(Text)
    status: Mapped[str] = mapped_column(String(16))
    failure: Mapped[str | None] = mapped_column(String(32))
    failure_message: Mapped[str | None] = mapped_column(Text)
    vllm_version: Mapped[str | None] = mapped_column(String(64))
    engine: Mapped[str | None] = mapped_column(String(8))
    model: Mapped[str | None] = mapped_column(Text)
    started_at: Mapped[str | None] = mapped_column(TS)
    ready_at: Mapped[str | None] = mapped_column(TS)
    ended_at: Mapped[str | None] = mapped_column(TS)
    first_line: Mapped[int] = mapped_column(Integer)
    last_line: Mapped[int] = mapped_column(Integer)
    fingerprint: Mapped[str] = mapped_column(String(128), unique=True)
    # sha256 of the sorted config: "same config" for timing history is one indexed equality
    config_hash: Mapped[str] = mapped_column(String(64))
    ingested_at: Mapped[str] = mapped_column(TS)


class MetricRow(Base):
    __tablename__ = "metrics"
    __table_args__ = (Index("ix_metrics_boot_id_seq", "boot_id", "seq"), Index("ix_metrics_name", "name"))

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    boot_id: Mapped[int] = mapped_column(ForeignKey("boots.id", ondelete="CASCADE"))
    seq: Mapped[int] = mapped_column(Integer)  # position in the boot's metric list = log order
    name: Mapped[str] = mapped_column(String(64))
    value: Mapped[float] = mapped_column(Float)
    unit: Mapped[str] = mapped_column(String(16))
    rank: Mapped[int | None] = mapped_column(Integer)
    line: Mapped[int | None] = mapped_column(Integer)
    ts: Mapped[str | None] = mapped_column(TS)
    pattern: Mapped[str | None] = mapped_column(String(128))


class ConfigRow(Base):
    __tablename__ = "config"

    boot_id: Mapped[int] = mapped_column(ForeignKey("boots.id", ondelete="CASCADE"), primary_key=True)
    key: Mapped[str] = mapped_column(String(128), primary_key=True)
    value: Mapped[str] = mapped_column(Text)  # as printed (Python spelling); typed on output


class EventRow(Base):
    __tablename__ = "events"
    __table_args__ = (Index("ix_events_boot_id_seq", "boot_id", "seq"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    boot_id: Mapped[int] = mapped_column(ForeignKey("boots.id", ondelete="CASCADE"))
    seq: Mapped[int] = mapped_column(Integer)
    kind: Mapped[str] = mapped_column(String(64))
    rank: Mapped[int | None] = mapped_column(Integer)
    line: Mapped[int] = mapped_column(Integer)
    ts: Mapped[str | None] = mapped_column(TS)
    message: Mapped[str] = mapped_column(Text)
    detail: Mapped[dict[str, Any]] = mapped_column(JSON)


class SampleRow(Base):
    __tablename__ = "samples"
    __table_args__ = (Index("ix_samples_boot_id_line", "boot_id", "line"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    boot_id: Mapped[int] = mapped_column(ForeignKey("boots.id", ondelete="CASCADE"))
    line: Mapped[int] = mapped_column(Integer)
    ts: Mapped[str | None] = mapped_column(TS)
    values: Mapped[dict[str, float]] = mapped_column(JSON)


class Position(Base):
    """How far a source was read, for incremental ingest."""

    __tablename__ = "positions"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    source_key: Mapped[str] = mapped_column(Text, unique=True)
    byte_offset: Mapped[int] = mapped_column(BigInteger)  # logs pass 2 GiB
    head_fingerprint: Mapped[str] = mapped_column(String(128))
    updated: Mapped[str] = mapped_column(TS)
