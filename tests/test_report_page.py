"""The redone report (issue 25) on the seed deploy history: the log's own clock, the plots'
labels (none overlaps another, one number format per axis, budgets drawn in), the timeline and
runtime charts, and the page's answers (verdict, plan expectations, diff, history).  The page
in a real browser: test_report_browser.py."""

from __future__ import annotations

import json
import math
import re
from datetime import timedelta, timezone
from pathlib import Path

import pytest
from click.testing import CliRunner

from bootlog.cli import cli
from paths import FIXTURES

SEED = FIXTURES / "seed"
PLAN = FIXTURES.parent / "plans" / "frank-primary.toml"
CONTAINER = "frank-primary-qwen"
PDT = timezone(timedelta(hours=-7))

mpl = pytest.importorskip("matplotlib", reason="matplotlib not installed (pip install 'bootlog[plot]')")


def run(db, *args):
    return CliRunner().invoke(cli, ["--db", str(db), *args], catch_exceptions=False)


@pytest.fixture(scope="module")
def db(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("page") / "seed.db"
    res = run(path, "ingest", "--container", CONTAINER, "--plan", str(PLAN), *map(str, sorted(SEED.glob("*.log"))))
    assert res.exit_code == 0, res.output
    return path


@pytest.fixture(scope="module")
def store(db):
    from bootlog.store.db import open_store

    st = open_store(str(db))
    yield st
    st.close()


@pytest.fixture(scope="module")
def docs(store) -> list[dict]:
    from bootlog.render.report import load_docs

    return load_docs(store, runtime=False)


@pytest.fixture(scope="module")
def plan():
    from bootlog.judge.plan import load_plan

    return load_plan(PLAN)


def by_stem(docs: list[dict], stem: str) -> list[dict]:
    return sorted((d for d in docs if Path(d["boot"]["source"]).stem == stem), key=lambda d: d["boot"]["first_line"])


# ---- the clock -----------------------------------------------------------------------------


def test_the_seed_logs_clock_is_pdt_found_from_vllms_own_stamps(store, docs):
    from bootlog.run.reread import log_clock

    clock = log_clock(store, docs[-1])
    assert clock.zone.utcoffset(None) == timedelta(hours=-7)
    assert clock.says == "times in -07:00, the log's offset (vLLM's own clock against the envelope's UTC stamps)"
    # the notes' "09:53" is the crash loop's first failed start, 16:53Z in the envelope
    loop = by_stem(docs, "05-util-1.00-crash-loop")[1]
    assert loop["boot"]["started_at"].startswith("2026-10-03T16:53")
    assert clock.text(loop["boot"]["started_at"], "%H:%M") == "09:53"


def test_an_envelope_offset_a_plain_log_and_an_unreadable_source(tmp_path, store, docs):
    from bootlog.run.reread import head_offset, log_clock

    # podman on a PDT host prints the offset in the envelope itself
    lines = (SEED / "01-shape-d-fp8-200704x3.log").read_text(encoding="utf-8").splitlines(True)[:40]
    local = tmp_path / "pdt.log"
    local.write_text("".join(re.sub(r"^(2026-10-02)T15:(\d\d:\d\d\.\d+)Z", r"\1T08:\2-07:00", ln) for ln in lines))
    zone, how = head_offset(str(local))
    assert zone.utcoffset(None) == timedelta(hours=-7) and how == "the envelope's stamps"
    # a plain log: no zone anywhere, times as printed
    plain = tmp_path / "plain.db"
    assert run(plain, "ingest", str(FIXTURES / "051-v0.27.1-tp2-compilation-split.log")).exit_code == 0
    from bootlog.store.db import open_store
    from bootlog.store.reads import show_boot

    st = open_store(str(plain))
    try:
        clock = log_clock(st, show_boot(st, 1))
    finally:
        st.close()
    assert clock.zone is None and clock.says == "times as the log printed them (its lines carry no zone)"
    # a boot stored from another host: its file is not ours to read; the envelope's own offset
    # was stored with its times, so that much is known without reading it
    clocks = []
    for i, log in enumerate((local, SEED / "01-shape-d-fp8-200704x3.log")):
        other = tmp_path / f"other{i}.db"
        assert run(other, "ingest", "--host", "elsewhere", str(log)).exit_code == 0
        st = open_store(str(other))
        try:
            clocks.append(log_clock(st, show_boot(st, 1)))
        finally:
            st.close()
    clock, in_utc = clocks
    assert clock.zone.utcoffset(None) == timedelta(hours=-7) and clock.says.endswith("(the envelope's stamps)")
    assert in_utc.zone == timezone.utc and in_utc.says.endswith("it was read on host elsewhere)")


# ---- the plots -----------------------------------------------------------------------------


def texts(fig) -> list:
    """Every visible, non-empty text of a drawn figure, with its box on the canvas."""
    from matplotlib.text import Text

    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    out = []
    for t in fig.findobj(Text):
        if t.get_visible() and t.get_text().strip() and t.get_window_extent(renderer).width > 0:
            out.append((t.get_text(), t.get_window_extent(renderer)))
    return out


def overlaps(boxes: list) -> list[tuple[str, str]]:
    bad = []
    for i, (a, ba) in enumerate(boxes):
        for b, bb in boxes[i + 1 :]:
            if ba.x0 < bb.x1 - 1 and bb.x0 < ba.x1 - 1 and ba.y0 < bb.y1 - 1 and bb.y0 < ba.y1 - 1:
                bad.append((a, b))
    return bad


@pytest.mark.parametrize(
    "metric", ["kv_cache_tokens", "graph_capture_gib", "max_concurrency", "torch_compile_s", "boot_to_ready_s"]
)
def test_no_label_overlaps_another_and_each_axis_has_one_number_format(metric, store, docs, plan):
    from bootlog.run.reread import log_clock
    from bootlog.render.plot import figure

    fig = figure(docs, metric, clock=log_clock(store, docs[-1]), plan=plan)
    try:
        boxes = texts(fig)
        assert overlaps(boxes) == []
        words = [t for t, _ in boxes]
        assert not any(re.search(r"\(\+\d+\)|e[+-]\d\d", w) for w in words), words  # no "(+1)", no 1.2e+06
        ax = fig.axes[0]
        ylabels = [t.get_text() for t in ax.get_yticklabels() if t.get_text()]
        decimals = {len(s.split(".")[1]) if "." in s else 0 for s in ylabels}
        assert len(ylabels) >= 3 and len(decimals) == 1, ylabels
        # the failed boots are named in the legend, never written on the axes
        legend = [t.get_text() for t in ax.get_legend().get_texts()]
        assert {"failed: oom", "failed: value_error", "failed: engine_init_failed", "died serving: oom"} <= set(legend)
        assert not any("value_errorvalue_error" in w or w.startswith("died servingengine") for w in words)
    finally:
        mpl.pyplot.close(fig)


def test_the_track_names_the_keys_of_each_config_change(store, docs):
    from bootlog.render.plot import config_changes, figure

    fig = figure(docs, "kv_cache_tokens")
    try:
        track = [t for t, _ in texts(fig)]
        changes = dict(config_changes(docs))
        # shape G's redeploy after the gdn burst: only prefix caching was switched off
        i = next(k for k, d in enumerate(docs) if Path(d["boot"]["source"]).stem.startswith("04-"))
        assert [m.split(" ")[0] for m in changes[i]] == ["enable_prefix_caching"]
        assert " enable_prefix_caching" in track
        # shape E's only change (the README's diff): expert_precise_memory
        assert " expert_precise_memory" in track
        # a change of more than three keys says how many more, in words
        assert any(re.search(r" \+\d+ more keys?$", t) for t in track)
    finally:
        mpl.pyplot.close(fig)


def test_graph_capture_is_drawn_against_its_estimate_and_kv_against_the_plans_min(docs, plan):
    from bootlog.render.plot import figure

    fig = figure(docs, "graph_capture_gib")
    try:
        (est,) = [ln for ln in fig.axes[0].get_lines() if ln.get_label().startswith("cudagraph_estimate_gib")]
        got = [y for y in est.get_ydata() if not math.isnan(y)]
        shape_g = by_stem(docs, "04-shape-g-kv-400700-no-prefix-cache")[0]
        i = docs.index(shape_g)
        assert est.get_ydata()[i] == next(
            m["value"] for m in shape_g["metrics"] if m["name"] == "cudagraph_estimate_gib"
        )
        assert len(got) == sum(any(m["name"] == "cudagraph_estimate_gib" for m in d["metrics"]) for d in docs)
    finally:
        mpl.pyplot.close(fig)
    fig = figure(docs, "kv_cache_tokens", plan=plan)
    try:
        (floor,) = [ln for ln in fig.axes[0].get_lines() if ln.get_label().startswith("plan: ≥")]
        assert floor.get_label() == "plan: ≥ 400,700" and set(floor.get_ydata()) == {400700}
    finally:
        mpl.pyplot.close(fig)


def test_log_text_in_a_plot_is_inert(docs):
    from bootlog.render.plot import figure, plain, save

    assert plain("a$b\x1b[2Jc") == r"a\$b\x1b[2Jc"
    hostile = [json.loads(json.dumps(d)) for d in docs[:4]]
    hostile[2]["config"]["$\\frac{"] = "x"  # a bad math text would raise when drawn
    hostile[1]["boot"]["failure"] = "oom$\x07"
    assert save(figure(hostile, "kv_cache_tokens"))[:4] == b"\x89PNG"


def test_the_timeline_chart_stacks_each_boots_phases(store, docs):
    from bootlog.judge.boot_timeline import timelines
    from bootlog.render.plot_timeline import PHASE_COLORS, timeline_figure

    tls = timelines(store, docs)
    fig = timeline_figure(docs, tls)
    try:
        ax = fig.axes[0]
        assert overlaps(texts(fig)) == []
        widths: dict[int, float] = {}
        for bar in ax.patches:
            y = round(bar.get_y() + bar.get_height() / 2)
            widths[y] = widths.get(y, 0.0) + bar.get_width()
        for y, d in enumerate(docs):  # (oldest on top, as the history)
            assert math.isclose(widths[y], sum(p["s"] for p in tls[d["boot"]["id"]]), rel_tol=1e-9)
        cold = by_stem(docs, "10-cold-vs-warm-compile")[0]
        y = docs.index(cold)
        compile_bars = [
            b
            for b in ax.patches
            if round(b.get_y() + b.get_height() / 2) == y
            and mpl.colors.to_hex(b.get_facecolor()) == PHASE_COLORS["compile"]
        ]
        assert compile_bars and max(b.get_width() for b in compile_bars) > 170
    finally:
        mpl.pyplot.close(fig)


def test_runtime_chart_of_the_gdn_boot(store, docs):
    from bootlog.run.reread import log_clock
    from bootlog.render.plot_runtime import runtime_figure
    from bootlog.store.reads import samples, show_boot

    gdn = by_stem(docs, "08-gdn-hip-burst-prefix-caching")[0]
    doc = show_boot(store, gdn["boot"]["id"])
    rows = [s for _, s in samples(store, [gdn["boot"]["id"]])]
    fig = runtime_figure(doc, rows, clock=log_clock(store, doc))
    try:
        titles = [ax.get_ylabel().split("\n")[0] for ax in fig.axes]
        assert titles == ["KV cache usage", "requests", "prefix cache hit rate", "gdn_hip faults (cumulative)"]
        kv = fig.axes[0].get_lines()[0]
        assert max(kv.get_ydata()) == doc["runtime"]["max"]["kv_cache_usage_pct"]
        hit = fig.axes[2].get_lines()[0]
        assert hit.get_ydata()[-1] == doc["runtime"]["last"]["prefix_cache_hit_rate_pct"]
        faults = fig.axes[3].get_lines()[0]
        assert faults.get_ydata()[-1] == 32  # the report cap: 32 reported, 16 more counted silently
        assert fig.axes[-1].get_xlabel() == "time (-07:00)"
    finally:
        mpl.pyplot.close(fig)


# ---- the page ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def page(db, tmp_path_factory) -> str:
    out = tmp_path_factory.mktemp("html") / "report.html"
    res = run(db, "report", "-o", str(out), "--plan", str(PLAN))
    assert res.exit_code == 0, res.output
    return out.read_text(encoding="utf-8")


def section(page: str, start: str, end: str) -> str:
    return page[page.index(start) : page.index(end, page.index(start))]


def test_the_latest_deploy_is_answered_first(page, db):
    last = json.loads(run(db, "show", "last", "--json").stdout)
    assert Path(last["boot"]["source"]).stem == "04-shape-g-kv-400700-no-prefix-cache"
    top = section(page, '<section class="latest', "</section>")
    # README: check 04 --plan passes; the page says OK and that every expectation it judged met
    assert f'Latest boot #{last["boot"]["id"]}: <span class="verdict">OK</span>' in top
    assert re.search(r"Plan frank-primary\.toml: (\d+) of \1 expectations met</h3>", top)
    assert "kv_cache_tokens <b>401,408</b> <span class=bound>≥ 400,700</span>" in top
    # its diff against the gdn boot before it: prefix caching switched off, the faults gone
    assert "Latest boot against the one before: #" in top
    diff = section(top, '<table class="diff">', "</table>")
    assert "enable_prefix_caching" in diff and "gdn_hip_fault" in diff
    # its timeline, adding up to its boot-to-ready time
    total = next(m["value"] for m in last["metrics"] if m["name"] == "boot_to_ready_s")
    assert f"<b>total {round(total, 2):,} s</b>" in top
    assert top.count('<div class="tbar">') == 1
    # on the log's clock: started 16:14:22Z is 09:14:22 PDT
    assert "<dt>started</dt><dd>2026-10-05 09:14:22</dd>" in top
    assert "times in -07:00, the log&#x27;s offset" in page


def test_the_history_holds_every_boots_plan_verdict_and_faults(page, db):
    listed = json.loads(run(db, "list", "--json").stdout)
    table = section(page, '<table class="history">', "</table>")
    rows = re.findall(r"<tr[^>]*>(.*?)</tr>", table)
    head = re.findall(r"<th>(.*?)</th>", rows[0])
    assert [h.replace("<wbr>", "") for h in head[:5]] == ["id", "status", "plan", "faults", "started"]
    cells = {
        int(re.sub("<[^>]+>", "", r[0])): [re.sub("<[^>]+>", "", c) for c in r]
        for r in (re.findall(r"<td[^>]*>(.*?)</td>", row) for row in rows[1:])
    }
    assert list(cells) == [b["id"] for b in listed]  # oldest first, every boot
    gdn = next(b for b in listed if Path(b["source"]).stem.startswith("08-"))
    assert cells[gdn["id"]][3] == "32*" and "missed" in cells[gdn["id"]][2]
    assert re.search(
        r'title="missed: [^"]*gdn_hip_fault[^"]*">✗ \d+ missed', rows[[b["id"] for b in listed].index(gdn["id"]) + 1]
    )
    last = listed[-1]
    assert cells[last["id"]][2] == "✓ met" and cells[last["id"]][4] == "10-05 09:14"


def test_charts_are_inline_and_nothing_is_fetched(page):
    imgs = re.findall(r'<img(?: class="(\w+)")? alt="([^"]*)" src="data:image/png;base64,', page)
    alts = [a for _, a in imgs]
    assert "boot timelines" in alts and "kv_cache_tokens" in alts and "graph_capture_gib" in alts
    runtime = [a for c, a in imgs if c == "runtime"]
    assert 1 <= len(runtime) <= 3  # the newest boots that served long enough to draw
    assert "<script" not in page and not re.search(r'(src|href)="(https?:)?//', page)
    assert "@media print" in page and "overflow-x:auto" in page


def test_report_to_stdout_and_without_a_plan(db):
    res = run(db, "report")
    assert res.exit_code == 0 and res.stdout.startswith("<!DOCTYPE html>")
    assert "<h3>Plan " not in res.stdout and ">plan<" not in res.stdout
    assert '<span class="verdict">OK</span>' in res.stdout  # (no drift against the boot before)


def test_a_failed_latest_boot_is_failed_whatever_it_was_compared_with(tmp_path):
    db = tmp_path / "loop.db"
    assert run(db, "ingest", "--container", CONTAINER, str(SEED / "05-util-1.00-crash-loop.log")).exit_code == 0
    out = run(db, "report").stdout
    top = section(out, '<section class="latest', "</section>")
    assert '<section class="latest v-failed">' in top and '<span class="verdict">FAILED</span>' in top
    assert "<dt>root cause</dt><dd>ValueError: Free memory on device cuda:" in top
    assert "<b>total " in top and "failed " in top  # (its timeline runs to its last line)


def key_figures(top: str) -> dict[str, str]:
    """The latest card's key-figure tiles: name -> value as shown (tags dropped)."""
    tiles = re.findall(r"<div[^>]*><dt>(.*?)</dt><dd>(.*?)</dd></div>", section(top, '<dl class="keyfigs">', "</dl>"))
    return {re.sub("<[^>]+>", "", k): re.sub("<[^>]+>", "", v) for k, v in tiles}


def test_the_latest_card_shows_its_key_figures_without_a_plan(db):
    res = run(db, "report")
    top = section(res.stdout, '<section class="latest', "</section>")
    exp = json.loads((SEED / "04-shape-g-kv-400700-no-prefix-cache.expected.json").read_text())[0]
    # the hand label of shape G: 200,704 x 3, KV 401,408 tokens / 2.00x, capture -0.05 / -0.07 GiB
    figs = key_figures(top)
    assert figs == {
        "max_model_len": f"{exp['max_model_len']:,}",
        "max_num_seqs": str(exp["max_num_seqs"]),
        "kv_cache_tokens": f"{exp['kv_cache_tokens']:,} tokens",
        "max_concurrency": "2x",
        "graph_capture_gib": "/".join(f"{v:.2f}" for v in exp["graph_capture_gib"]) + " GiB",
        "torch_compile_s": f"{exp['torch_compile_s']} s",
        "boot_to_ready_s": figs["boot_to_ready_s"],
        "faults": "0",
    }
    # boot to ready: from its first line (16:14:22.868Z) to ready (…) as the timeline adds it up
    total = re.search(r"<b>total ([\d,.]+) s</b>", top).group(1)
    assert figs["boot_to_ready_s"] == f"{total} s"


def test_a_died_serving_latest_boot_shows_what_it_held_and_its_failure(tmp_path):
    db = tmp_path / "e02.db"
    log = FIXTURES / "engine" / "e02-v0.32.0-cpu-warm-engine-core-killed.log"
    assert run(db, "ingest", str(log)).exit_code == 0
    exp = json.loads(log.with_suffix(".expected.json").read_text())[0]
    top = section(run(db, "report").stdout, '<section class="latest', "</section>")
    assert '<span class="verdict">FAILED</span>' in top and "ready (engine_died)" in top
    figs = key_figures(top)
    assert figs["kv_cache_tokens"] == f"{exp['kv_cache_tokens']:,} tokens"
    assert figs["max_model_len"] == f"{exp['max_model_len']:,}" and figs["max_concurrency"] == "64x"


def test_a_chart_says_under_it_which_boots_miss_the_plan(page, db):
    listed = json.loads(run(db, "list", "--json").stdout)
    # shapes D, E, F printed "GPU KV cache size: 398,658 tokens" (the seeds' own words), under 400,700
    low = [f"#{b['id']}" for b in listed if Path(b["source"]).stem[:3] in ("01-", "02-", "03-", "10-")]
    cap = re.search(r'alt="kv_cache_tokens" src="[^"]+"><p class="cap">(.*?)</p>', page).group(1)
    assert cap == f"{len(low)} boots miss the plan's kv_cache_tokens ≥ 400,700 (ringed): {', '.join(low)}"
    assert re.search(r'alt="graph_capture_gib" src="[^"]+">(?!<p class="cap">)', page)  # (none misses)


def test_a_key_figure_the_plan_misses_is_marked_on_the_card(tmp_path):
    db = tmp_path / "d.db"
    log = SEED / "01-shape-d-fp8-200704x3.log"
    assert run(db, "ingest", "--container", CONTAINER, "--plan", str(PLAN), str(log)).exit_code == 0
    top = section(run(db, "report", "--plan", str(PLAN)).stdout, '<section class="latest', "</section>")
    # shape D: "GPU KV cache size: 398,658 tokens", "Maximum concurrency ...: 1.99x" (its log, lines 189-190)
    assert "GPU KV cache size: 398,658 tokens" in log.read_text() and "1.99x" in log.read_text()
    missed = re.findall(r'<div class="miss" title="misses the plan: ([^"]*)"><dt>(.*?) ✗</dt>', top)
    assert [k.replace("<wbr>", "") for _, k in missed] == ["kv_cache_tokens", "max_concurrency"]
    assert "plan expects ≥ 400,700" in missed[0][0]
    assert key_figures(top)["kv_cache_tokens ✗"] == "398,658 tokens"
    plain = section(run(db, "report").stdout, '<section class="latest', "</section>")
    assert 'class="miss"' not in plain  # (no plan, nothing to miss)


def test_key_figures_from_log_text_are_escaped():
    from bootlog.render.report_page import key_figures_html

    doc = {
        "boot": {"id": 1, "status": "ready"},
        "events": [],
        "config": {"max_model_len": "<img src=x onerror=alert(1)>\x1b[2J"},
        "metrics": [{"name": "kv_cache_tokens", "value": 5000, "unit": "<b>tok</b>", "rank": None}],
    }
    got = key_figures_html(doc)
    assert "<img" not in got and "<b>tok" not in got and "\x1b" not in got
    assert "&lt;img src=x" in got and "5,000 <small>&lt;b&gt;tok&lt;/b&gt;</small>" in got
