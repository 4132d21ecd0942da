"""The figure-across-boots chart (plot.figure) on real logs, issue 32: a boot that died serving
(the real vLLM CPU runs in fixtures/logs/engine) is drawn once; the points a plan's bound fails
are ringed and the legend says so; every boot is labelled on the x axis; the config-change track
names one setting once (max_model_len, not also the max_seq_len the engine line prints for it)
and stays inside the picture.  Expectations come from the hand-labelled .expected.json files and
the log lines themselves, not from bootlog."""

from __future__ import annotations

import json
import math
import re
from collections import Counter
from pathlib import Path

import pytest
from click.testing import CliRunner

from bootlog.cli import cli
from paths import FIXTURES

mpl = pytest.importorskip("matplotlib", reason="matplotlib not installed (pip install 'bootlog[plot]')")

from test_report_page import overlaps, texts  # noqa: E402  (the page tests' text boxes)

SEED = FIXTURES / "seed"
ENGINE = FIXTURES / "engine"
PLAN = FIXTURES.parent / "plans" / "frank-primary.toml"


def ingest(db: Path, *logs: Path, plan: Path | None = None) -> None:
    args = ["--db", str(db), "ingest", "--container", "c", *(["--plan", str(plan)] if plan else []), *map(str, logs)]
    res = CliRunner().invoke(cli, args, catch_exceptions=False)
    assert res.exit_code == 0, res.output


def load(db: Path) -> list[dict]:
    from bootlog.render.report import load_docs
    from bootlog.store.db import open_store

    store = open_store(str(db))
    try:
        return load_docs(store, runtime=False)
    finally:
        store.close()


def labelled(docs: list[dict]) -> list[dict]:
    """The hand label of each document's boot (the .expected.json entry of its file, in order)."""
    out = []
    for d in docs:
        src = Path(d["boot"]["source"])
        same = sorted(
            (x for x in docs if x["boot"]["source"] == d["boot"]["source"]), key=lambda x: x["boot"]["first_line"]
        )
        out.append(json.loads(src.with_suffix(".expected.json").read_text())[same.index(d)])
    return out


def marks(ax) -> Counter:
    """How many markers are drawn at each x: the series' dots (their markevery) and every
    scatter point (failure markers, rings)."""
    per: Counter = Counter()
    for line in ax.get_lines():
        if line.get_marker() in (None, "None", "", " ") or line.get_label().startswith(("plan:", "cudagraph")):
            continue
        xs, ys = line.get_xdata(), line.get_ydata()
        every = line.get_markevery()
        for k in range(len(xs)) if every is None else every:
            if not math.isnan(ys[k]):
                per[int(xs[k])] += 1
    for coll in ax.collections:
        for x, _ in coll.get_offsets():
            per[int(round(x))] += 1
    return per


@pytest.fixture(scope="module")
def engine_docs(tmp_path_factory) -> list[dict]:
    db = tmp_path_factory.mktemp("engine") / "e.db"
    ingest(db, *sorted(ENGINE.glob("*.log")))
    return load(db)


@pytest.fixture(scope="module")
def seed_docs(tmp_path_factory) -> list[dict]:
    db = tmp_path_factory.mktemp("seed") / "s.db"
    ingest(db, *sorted(SEED.glob("*.log")), plan=PLAN)
    return load(db)


@pytest.fixture(scope="module")
def plan():
    from bootlog.judge.plan import load_plan

    return load_plan(PLAN)


def test_a_boot_that_died_serving_is_drawn_once_at_its_value(engine_docs):
    from bootlog.render.plot import figure

    exp = labelled(engine_docs)
    died = [i for i, e in enumerate(exp) if e.get("ended") == "died"]
    assert len(died) >= 4  # e02, e03, e04, e11, e13's second boot: vllm serve exited 0 each time
    fig = figure(engine_docs, "kv_cache_tokens")
    try:
        ax = fig.axes[0]
        per = marks(ax)
        # every boot here printed the figure or failed: one marker each, its dot or its failure's
        assert all("kv_cache_tokens" in e or e.get("failure") for e in exp)
        assert per == Counter(range(len(exp))), per
        (serving,) = [c for c in ax.collections if c.get_label() == "died serving: engine_died"]
        at = {int(round(x)): y for x, y in serving.get_offsets()}
        assert at == {i: exp[i]["kv_cache_tokens"] for i in died}  # on the line, where it printed it
    finally:
        mpl.pyplot.close(fig)


def test_the_points_a_plan_bound_fails_are_ringed_and_named(seed_docs, plan):
    from bootlog.render.plot import figure

    exp = labelled(seed_docs)
    below = {i: e["kv_cache_tokens"] for i, e in enumerate(exp) if e.get("kv_cache_tokens", 400700) < 400700}
    assert sorted(below.values()) == [398658] * 5  # shapes D, E, F (the seeds' 398,658)
    fig = figure(seed_docs, "kv_cache_tokens", plan=plan)
    try:
        ax = fig.axes[0]
        (rings,) = [c for c in ax.collections if c.get_label().startswith("misses the plan")]
        assert {int(round(x)): y for x, y in rings.get_offsets()} == below
        legend = [t.get_text() for t in ax.get_legend().get_texts()]
        assert "plan: ≥ 400,700" in legend and "misses the plan (5 boots)" in legend
        # a ring is not a dot: shape G's 401,408 and the night ladder's are not ringed
        assert all(
            e["kv_cache_tokens"] >= 400700 for i, e in enumerate(exp) if "kv_cache_tokens" in e and i not in below
        )
    finally:
        mpl.pyplot.close(fig)
    fig = figure(seed_docs, "kv_cache_tokens")  # no plan: no bound, nothing ringed
    try:
        assert not [c for c in fig.axes[0].collections if c.get_label().startswith("misses")]
    finally:
        mpl.pyplot.close(fig)


def test_every_boot_is_labelled_with_its_id_and_start(seed_docs):
    from bootlog.render.logclock import Clock
    from bootlog.render.plot import figure
    from datetime import timedelta, timezone

    fig = figure(seed_docs, "kv_cache_tokens", clock=Clock(timezone(timedelta(hours=-7)), "x"))
    try:
        ax = fig.axes[0]
        got = [t.get_text() for t in ax.get_xticklabels()]
        assert [g.split("\n")[0] for g in got] == [f"#{d['boot']['id']}" for d in seed_docs]
        g = next(d for d in seed_docs if Path(d["boot"]["source"]).stem.startswith("04-"))
        # its first line: "2026-10-05T16:14:22…Z (APIServer pid=1) INFO 10-05 09:14:22"
        assert got[seed_docs.index(g)] == f"#{g['boot']['id']}\n10-05\n09:14"
        assert overlaps(texts(fig)) == []
    finally:
        mpl.pyplot.close(fig)


def test_too_many_boots_to_label_keep_a_readable_subset_and_a_tick_each(seed_docs):
    from bootlog.render.plot import figure

    many = [json.loads(json.dumps(d)) for _ in range(5) for d in seed_docs]  # 75 boots
    for k, d in enumerate(many):
        d["boot"]["id"] = 1000 + k
    fig = figure(many, "kv_cache_tokens")
    try:
        ax = fig.axes[0]
        major = {int(x): t.get_text() for x, t in zip(ax.get_xticks(), ax.get_xticklabels())}
        minor = {int(x) for x in ax.get_xticks(minor=True)}
        assert set(major) | minor == set(range(len(many))) and not set(major) & minor
        assert all(major[i].split("\n")[0] == f"#{many[i]['boot']['id']}" for i in major)
        assert len(major) >= len(many) // 4
        assert overlaps(texts(fig)) == []
    finally:
        mpl.pyplot.close(fig)


def test_the_track_names_max_model_len_once_not_its_engine_alias(seed_docs):
    from bootlog.render.plot import config_changes, figure

    # the engine config line prints both names: "... max_seq_len=262144, ..." (09, line 16)
    assert "max_seq_len=262144" in (SEED / "09-night-ladder-4-boots.log").read_text().splitlines()[15]
    assert any("max_seq_len" in (d["config"] or {}) for d in seed_docs)
    changes = config_changes(seed_docs)
    moved = [m.split(" ")[0] for _, ms in changes for m in ms]
    assert moved.count("max_model_len") >= 4 and "max_seq_len" not in moved  # the night ladder's rungs
    fig = figure(seed_docs, "kv_cache_tokens")
    try:
        assert not any("max_seq_len" in t for t, _ in texts(fig))
    finally:
        mpl.pyplot.close(fig)


def test_the_track_stays_inside_the_picture(engine_docs):
    from bootlog.render.plot import figure

    fig = figure(engine_docs, "kv_cache_tokens")
    try:
        width = fig.get_size_inches()[0] * fig.dpi
        boxes = texts(fig)
        assert all(0 <= b.x0 and b.x1 <= width for _, b in boxes), [(t, b.x0, b.x1) for t, b in boxes if b.x1 > width]
        assert overlaps(boxes) == []
        assert any(re.search(r"\+\d+ more keys$", t) for t, _ in boxes)  # (the long labels are there)
    finally:
        mpl.pyplot.close(fig)


def test_a_bound_on_ranks_that_disagree_rings_the_rank_that_misses(seed_docs, tmp_path):
    from bootlog.judge.plan import load_plan
    from bootlog.render.plot import figure

    (tmp_path / "p.toml").write_text('name = "tight"\n[metrics.graph_capture_gib]\nmax = 0.2\n')
    exp = labelled(seed_docs)
    # shapes D/E and the ladder captured 0.31-0.34 GiB on rank 0 and 0.17-0.19 on rank 1 (their
    # "Graph capturing finished ... took X GiB" lines): rank 0 misses <= 0.2, rank 1 meets it
    want = sorted(
        (i, max(e["graph_capture_gib"]))
        for i, e in enumerate(exp)
        if isinstance(e.get("graph_capture_gib"), list) and max(e["graph_capture_gib"]) > 0.2
    )
    assert want and all(min(exp[i]["graph_capture_gib"]) <= 0.2 for i, _ in want)
    fig = figure(seed_docs, "graph_capture_gib", plan=load_plan(tmp_path / "p.toml"))
    try:
        (rings,) = [c for c in fig.axes[0].collections if c.get_label().startswith("misses the plan")]
        assert sorted((int(round(x)), round(y, 2)) for x, y in rings.get_offsets()) == want
    finally:
        mpl.pyplot.close(fig)
