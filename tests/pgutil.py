"""Test helpers for the store: a throwaway PostgreSQL schema per test run, seed boots, and the
bodies of the child processes that the concurrency and crash tests run."""

from __future__ import annotations

import os
import secrets
from contextlib import contextmanager
from typing import Iterator

PG_ENV = "BOOTLOG_TEST_PG_URL"


def pg_base_url() -> str | None:
    """The PostgreSQL URL to test against, when the environment gives one."""
    return os.environ.get(PG_ENV) or None


def with_search_path(url: str, schema: str) -> str:
    """`url` with libpq's options=-csearch_path=<schema>, so every connection lands in it."""
    sep = "&" if "?" in url else "?"
    return f"{url}{sep}options=-csearch_path%3D{schema}"


@contextmanager
def pg_schema(base_url: str) -> Iterator[str]:
    """Create schema bootlog_test_<random>, yield a URL whose connections use it, drop it after.

    The yielded URL is a plain string, so child processes (concurrency/crash tests) can open it.
    """
    import psycopg

    schema = f"bootlog_test_{secrets.token_hex(6)}"
    conninfo = "postgresql://" + base_url.split("://", 1)[1]
    with psycopg.connect(conninfo, autocommit=True) as admin:
        admin.execute(f'CREATE SCHEMA "{schema}"')
    try:
        yield with_search_path(base_url, schema)
    finally:
        with psycopg.connect(conninfo, autocommit=True) as admin:
            admin.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


def seed_boot(n: int = 0, *, tag: str = "", ranks: int = 2, padding: int = 0, status: str = "ready"):
    """A Boot shaped like the operator's frank-primary deploy of 2026-10-02 (shape E).

    Figures are the seed notes' own (KV 398,658 tokens / 1.99x at 200,704-token requests, graph
    capture 0.31/0.17 GiB per rank, the cold compile timings); `n` shifts the lines and times so
    every boot is distinct, `padding` adds that many extra per-rank timing figures so a save has
    real work to do (crash tests), `tag` goes into the fingerprint.
    """
    import hashlib
    from datetime import datetime, timedelta, timezone

    from bootlog.records import Boot, Event, Metric, Samples

    tz = timezone(timedelta(hours=-7))
    t0 = datetime(2026, 10, 2, 9, 53, 1, tzinfo=tz) + timedelta(hours=n)
    first = 1 + n * 1000
    line = iter(range(first + 10, first + 100_000))

    def m(name, value, unit, rank=None, dt=0):
        return Metric(
            name, value, unit, rank=rank, line=next(line), ts=t0 + timedelta(seconds=dt), pattern=f"{name}.v1"
        )

    metrics = []
    for r in range(ranks):
        metrics.append(m("weights_load_s", 95.5 + r, "s", r, 100))
        metrics.append(m("model_load_gib", 86.4, "GiB", r, 250))
        metrics.append(m("model_load_s", 250.1 + r, "s", r, 250))
    metrics += [
        m("dynamo_transform_s", 4.6, "s", None, 260),
        m("compile_graph_s", 179.24, "s", None, 440),
        m("torch_compile_s", 188.26, "s", None, 450),
        m("kv_cache_available_gib", 2.93, "GiB", None, 460),
        m("kv_cache_tokens", 398658, "tokens", None, 461),
        m("max_concurrency_request_tokens", 200704, "tokens", None, 461),
        m("max_concurrency", 1.99, "x", None, 461),
    ]
    for r, gib in zip(range(ranks), (0.31, 0.17, 0.2, 0.2)):
        metrics.append(m("graph_capture_s", 5, "s", r, 470))
        metrics.append(m("graph_capture_gib", gib, "GiB", r, 470))
    for i in range(padding):
        metrics.append(m("compile_cache_load_s", 2.143 + i / 1000, "s", i % ranks, 480))
    metrics.append(m("init_engine_s", 41.13, "s", None, 500))
    metrics.append(m("init_engine_compile_s", 3.98, "s", None, 500))
    config = {
        "model": "/models/Qwen3.8-Flash-Next-Uncensored-FP8",
        "max_model_len": "200704",
        "max_num_seqs": "3",
        "max_num_batched_tokens": "2048",
        "kv_cache_dtype": "fp8",
        "gpu_memory_utilization": "0.982",
        "enable_prefix_caching": "False",
        "tensor_parallel_size": "2",
        "kv_cache_memory_bytes": "3166500000",
        "served_model_name": "['frank-primary']",
        "quantization": "None",
    }
    events = [
        Event(
            "warning",
            line=next(line),
            rank=None,
            ts=t0 + timedelta(seconds=5),
            message="Default sampling parameters have been overridden by the model's Hugging Face generation config",
            detail={"message": "generation config"},
        )
    ]
    samples = Samples()
    keys = (
        "prompt_throughput_tps",
        "generation_throughput_tps",
        "running_reqs",
        "waiting_reqs",
        "kv_cache_usage_pct",
        "prefix_cache_hit_rate_pct",
    )
    for i in range(3):
        samples.add(
            next(line),
            (t0 + timedelta(seconds=600 + 10 * i)).isoformat(),
            keys,
            [812.4 if i == 1 else 0.0, 31.2, 1.0, 0.0, 41.2 - i, 57.1],
        )
    last = next(line)
    fp = hashlib.sha256(f"seed-boot|{tag}|{n}".encode()).hexdigest()
    return Boot(
        first_line=first,
        last_line=last,
        status=status,
        vllm_version="0.11.1",
        engine="v1",
        model=config["model"],
        started_at=t0,
        ready_at=t0 + timedelta(seconds=520),
        metrics=metrics,
        config=config,
        events=events,
        samples=samples,
        fingerprint=fp,
    )


def save_worker(url: str, tag: str, numbers: list[int], batch: int, start, results) -> None:
    """Child process body for concurrency tests: open the db, wait for the others, save.

    Puts ("ok", tag, [(id, created), ...]) or ("error", tag, message) on `results`.
    """
    from bootlog.store.db import open_store
    from bootlog.store.write import SourceInfo, save_boots

    try:
        start.wait(timeout=60)
        engine = open_store(url)  # every child opens a possibly fresh file: migration races too
        src = SourceInfo(f"podman:{tag}", "container", container=tag)
        out = []
        for i in range(0, len(numbers), batch):
            boots = [seed_boot(n, tag=tag.split("#")[0]) for n in numbers[i : i + batch]]
            out += save_boots(engine, src, boots)
        engine.close()
        results.put(("ok", tag, out))
    except BaseException as err:  # noqa: BLE001 - report everything: the test asserts none escaped
        results.put(("error", tag, f"{type(err).__name__}: {err}"))


def crash_worker(url: str, numbers: list[int], padding: int, started) -> None:
    """Child body for crash tests: save many large boots in one call; the parent kills it."""
    from bootlog.store.db import open_store
    from bootlog.store.write import SourceInfo, save_boots

    engine = open_store(url)
    boots = [seed_boot(n, tag="crash", padding=padding) for n in numbers]
    started.set()
    save_boots(engine, SourceInfo("podman:crash", "container", container="crash"), boots)
    engine.close()


def many_boots(path, n: int, failed_every: int = 3):
    """A SQLite database of n seed boots of one container, started a minute apart, all but
    every `failed_every`-th a failed start (a long crash loop's worth between the ready ones),
    saved as ingest saves them: what a fleet's years of deploys, or a crash loop, leave."""
    from datetime import timedelta

    from bootlog.store.db import open_store
    from bootlog.store.write import SourceInfo, save_boots

    store = open_store(str(path))
    src = SourceInfo("podman:frank", "container", container="frank")
    t0 = seed_boot(0).started_at
    for i in range(0, n, 500):
        boots = []
        for k in range(i, min(n, i + 500)):
            b = seed_boot(k, status="failed" if k % failed_every else "ready")
            b.started_at, b.ready_at = t0 + timedelta(minutes=k), None
            boots.append(b)
        save_boots(store, src, boots)
    store.close()
    return path
