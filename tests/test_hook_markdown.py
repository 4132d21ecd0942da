"""The hook's Markdown, written for a deploy commit message, as a Markdown renderer shows it
(issue 32): the figures read as the log printed them, with no escape showing ("CUDA graphs
\\-0.05 GiB", "torch.compile 4\\.21 s" was what `git log` showed), and nothing of the log's text
turns into markup."""

from __future__ import annotations

import re

import pytest
from click.testing import CliRunner

import markdown_util
from bootlog.judge import compare, verdict
from bootlog.cli import cli
from bootlog.run.hook import HookResult, render_markdown
from paths import FIXTURES

SEED = FIXTURES / "seed"
SHAPE_G = SEED / "04-shape-g-kv-400700-no-prefix-cache.log"  # ready, graphs -0.05/-0.07 GiB, warm compile
GDN = SEED / "08-gdn-hip-burst-prefix-caching.log"  # the boot before it, with the gdn_hip burst


@pytest.fixture(scope="module")
def hook_md(tmp_path_factory) -> str:
    from bootlog.store.db import open_store
    from bootlog.store.reads import show_boot

    db = tmp_path_factory.mktemp("md") / "b.db"
    for log in (GDN, SHAPE_G):
        assert CliRunner().invoke(cli, ["--db", str(db), "ingest", str(log)]).exit_code == 0
    store = open_store(str(db), create=False)
    try:
        old, new = show_boot(store, 1), show_boot(store, 2)
    finally:
        store.close()
    d = compare.diff(new, old)
    note = "1. do not list me; [x](http://evil) <b>bold</b> *em* kv_cache_tokens"
    return render_markdown(
        HookResult("frank-primary-qwen", "ready", 2, new, 1, None, d, 1.0, verdict.exit_code(d), [note])
    )


def _log(pattern: str) -> list[str]:
    return re.findall(pattern, SHAPE_G.read_text())


def test_the_figures_read_as_the_log_printed_them(hook_md):
    seen = markdown_util.inert(hook_md)
    measured = next(t for t in seen if t.startswith("MEASURED on the live deploy"))
    # the log's own prints, read here without bootlog: graphs per rank, the compile
    graphs = _log(r"Graph capturing finished in \d+ secs, took (-?[\d.]+) GiB")
    assert graphs == ["-0.05", "-0.07"]
    assert f"CUDA graphs {graphs[0]} GiB / {graphs[1]} GiB" in measured
    compile_s = _log(r"torch\.compile took ([\d.]+) s in total")[0]
    assert f"torch.compile {compile_s} s" in measured
    assert re.search(r"boot to ready \d+(\.\d+)? s", measured)
    kv = _log(r"GPU KV cache size: ([\d,]+) tokens")[0]
    assert f"KV cache {kv} tokens" in measured


def test_the_source_shows_no_escape_where_markdown_acts_on_nothing(hook_md):
    line = next(ln for ln in hook_md.splitlines() if ln.startswith("MEASURED"))
    assert "\\" not in line, line  # (git log shows the source)


def test_log_text_in_a_note_stays_text(hook_md):
    seen = markdown_util.inert(hook_md)  # no link, list, HTML or emphasis of the note's
    assert "1. do not list me; [x](http://evil) <b>bold</b> *em* kv_cache_tokens" in seen
    assert "kv_cache_tokens" in hook_md  # (an identifier's underscores act on nothing)
