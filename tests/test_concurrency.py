"""Several processes writing one database at once (a fleet of hooks, a watcher and a manual ingest):
everything is stored, nothing twice, and no "database is locked" reaches anyone."""

from __future__ import annotations

import multiprocessing as mp

import pytest

from bootlog.store.db import open_store
from bootlog.store.reads import count_rows
from pgutil import pg_base_url, pg_schema, save_worker, seed_boot

BACKENDS = ["sqlite"] + (["postgresql"] if pg_base_url() else [])
CTX = mp.get_context("spawn")  # children start clean: no engine or connection inherited


@pytest.fixture(params=BACKENDS)
def url(request, tmp_path):
    if request.param == "sqlite":
        yield str(tmp_path / "fleet.db")  # not created yet: the children race to create it
    else:
        with pg_schema(pg_base_url()) as u:
            yield u


def _run(url: str, jobs: list[tuple[str, list[int], int]]) -> dict[str, list[tuple[int, bool]]]:
    start = CTX.Barrier(len(jobs))
    results = CTX.Queue()
    procs = [CTX.Process(target=save_worker, args=(url, tag, nums, batch, start, results)) for tag, nums, batch in jobs]
    for p in procs:
        p.start()
    got = [results.get(timeout=120) for _ in procs]
    for p in procs:
        p.join(timeout=30)
    errors = [r for r in got if r[0] == "error"]
    assert not errors, errors
    assert all(p.exitcode == 0 for p in procs)
    return {tag: out for _, tag, out in got}


def test_eight_writers_store_everything(url):
    per = 12
    jobs = [(f"frank-{w}", list(range(per)), 1 + w % 3) for w in range(8)]  # batches of 1-3 boots
    out = _run(url, jobs)
    assert all(len(v) == per and all(created for _, created in v) for v in out.values())
    ids = [bid for v in out.values() for bid, _ in v]
    assert len(set(ids)) == 8 * per
    eng = open_store(url)
    rows = count_rows(eng)
    assert rows["boots"] == 8 * per and rows["sources"] == 8
    assert rows["metrics"] == 8 * per * len(seed_boot(0).metrics)
    eng.close()


def test_same_boots_twice_at_once_stored_once(url):
    nums = list(range(20))
    # "#a"/"#b": two processes, one container, the same boots (same fingerprints)
    out = _run(url, [("frank-primary#a", nums, 4), ("frank-primary#b", nums, 4)])
    a, b = out["frank-primary#a"], out["frank-primary#b"]
    assert [bid for bid, _ in a] == [bid for bid, _ in b]  # both got the same ids back
    created = [ca or cb for (_, ca), (_, cb) in zip(a, b)]
    assert all(created) and not any(ca and cb for (_, ca), (_, cb) in zip(a, b))
    eng = open_store(url)
    assert eng.one("SELECT count(*) FROM boots")[0] == len(nums)
    per_boot = eng.rows("SELECT boot_id, count(*) FROM metrics GROUP BY boot_id")
    assert len(per_boot) == len(nums) and {n for _, n in per_boot} == {len(seed_boot(0).metrics)}
    eng.close()


def _resume_worker(url: str, path: str, start, results) -> None:
    from bootlog.run.ingest import ingest

    try:
        eng = open_store(url)
        start.wait(timeout=60)
        out = ingest(eng, path)
        results.put(("ok", out.resumed_at_line))
        eng.close()
    except BaseException as err:  # noqa: BLE001 - reported to the parent
        results.put(("error", repr(err)))


def test_two_ingests_resuming_a_grown_file_at_once_add_its_lines_once(url, tmp_path):
    # corpus 020 (279 stats lines): 60 % ingested, the rest appended, then two ingests at once
    from bootlog.run.ingest import ingest
    from paths import FIXTURES

    data = (FIXTURES / "020-v0.11.2-metrics-heavy.log").read_bytes()
    cut = data.index(b"\n", len(data) * 6 // 10) + 1
    path = tmp_path / "grown.log"
    path.write_bytes(data[:cut])
    eng = open_store(url)
    ingest(eng, str(path))
    path.write_bytes(data)
    start, results = CTX.Barrier(2), CTX.Queue()
    procs = [CTX.Process(target=_resume_worker, args=(url, str(path), start, results)) for _ in range(2)]
    for p in procs:
        p.start()
    got = [results.get(timeout=120) for _ in procs]
    for p in procs:
        p.join(timeout=30)
    assert all(r[0] == "ok" for r in got), got
    from bootlog.store.reads import samples

    lines = [s.line for _, s in samples(eng, [r[0] for r in eng.rows("SELECT id FROM boots")])]
    assert len(lines) == len(set(lines)) == data.count(b"Avg prompt throughput")
    eng.close()
