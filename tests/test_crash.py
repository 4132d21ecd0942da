"""kill -9 in the middle of a save: the database never holds a partial boot, and the next save
of the same boots completes them (one transaction per save, read position included)."""

from __future__ import annotations

import multiprocessing as mp
import os
import random
import signal
import time

import pytest

from bootlog.store.db import open_store
from bootlog.store.write import SourceInfo, save_boots
from pgutil import crash_worker, pg_base_url, pg_schema, seed_boot

BACKENDS = ["sqlite"] + (["postgresql"] if pg_base_url() else [])
# fork: a child is ready in milliseconds; the parent holds no open connection while forking
CTX = mp.get_context("fork")
ROUNDS = 20
PADDING = 300
# boots per save, so one save takes ~0.1-0.3 s on each backend (kills land on both sides of commit)
BOOTS = {"sqlite": 40, "postgresql": 12}


@pytest.fixture(params=BACKENDS)
def url(request, tmp_path):
    if request.param == "sqlite":
        yield "sqlite", str(tmp_path / "crash.db")
    else:
        with pg_schema(pg_base_url()) as u:
            yield "postgresql", u


def _counts(engine) -> dict[int, tuple[int, int, int, int]]:
    """boot id -> (metrics, config, events, samples) rows stored for it."""
    ids = [r[0] for r in engine.rows("SELECT id FROM boots")]
    per = [
        dict(engine.rows(f"SELECT boot_id, {n} FROM {t} GROUP BY boot_id"))
        for t, n in (
            ("metrics", "count(*)"),
            ("config", "count(*)"),
            ("events", "count(*)"),
            ("sample_chunks", "sum(n)"),
        )
    ]
    return {bid: tuple(int(p.get(bid, 0)) for p in per) for bid in ids}


def _settle(backend: str, url: str) -> None:
    """kill -9 ends the client, not its PostgreSQL server process: a COMMIT the client had sent
    still completes after the kill (a round then found an earlier round's boots arriving late).
    Wait until the server has ended every other client session on this database."""
    if backend != "postgresql":
        return
    engine = open_store(url)
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            others = engine.one(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                "AND pid <> pg_backend_pid() AND backend_type = 'client backend'"
            )[0]
            if not others:
                return
            time.sleep(0.02)
        raise AssertionError("the killed client's server session never ended")
    finally:
        engine.close()


def test_kill_9_never_leaves_a_partial_boot(url):
    backend, url = url
    n_boots = BOOTS[backend]
    rng = random.Random(20261002)
    open_store(url).close()  # schema in place: every kill lands in save_boots, not in migration
    full = seed_boot(0, padding=PADDING)
    expected = (len(full.metrics), len(full.config), len(full.events), len(full.samples))
    outcomes = {"nothing": 0, "all": 0}
    stored = 0
    done: list[int] = []
    cut_off: list[int] = []
    for rnd in range(ROUNDS):
        numbers = [rnd * 1000 + i for i in range(n_boots)]
        started = CTX.Event()
        p = CTX.Process(target=crash_worker, args=(url, numbers, PADDING, started))
        p.start()
        assert started.wait(timeout=60)
        time.sleep(rng.uniform(0.0, 0.25))
        if p.is_alive():
            os.kill(p.pid, signal.SIGKILL)
        p.join(timeout=30)
        _settle(backend, url)

        engine = open_store(url)
        counts = _counts(engine)
        engine.close()
        partial = {bid: c for bid, c in counts.items() if c != expected}
        assert not partial, f"round {rnd}: partial boots {partial}"
        added = len(counts) - stored
        assert added in (0, n_boots), f"round {rnd}: {added} of {n_boots} boots stored by one save"
        outcomes["all" if added else "nothing"] += 1
        (done if added else cut_off).append(rnd)
        stored = len(counts)

    print(f"kill -9 outcomes over {ROUNDS} rounds: {outcomes}")
    # the kills landed on both sides of the commit, so the test exercised what it claims
    assert outcomes["nothing"] > 0, outcomes

    # re-running the cut-off saves completes them; re-running a finished one adds nothing
    engine = open_store(url)
    src = SourceInfo("podman:crash", "container", container="crash")
    for rnd in cut_off + done[:1]:
        save_boots(engine, src, [seed_boot(rnd * 1000 + i, tag="crash", padding=PADDING) for i in range(n_boots)])
    counts = _counts(engine)
    engine.close()
    assert len(counts) == (len(cut_off) + len(done)) * n_boots == ROUNDS * n_boots
    assert set(counts.values()) == {expected}
