"""Figures say what they are: kv_margin_tokens leads with the full-length requests its KV cache
holds; kv_bytes_per_token says which bytes it divides (the asked kv_cache_memory_bytes)."""

from __future__ import annotations

import ast
import json
import re

from click.testing import CliRunner

from bootlog.cli import cli
from paths import FIXTURES

SEED = FIXTURES / "seed"
SHAPE_D, SHAPE_F, SHAPE_G = (
    SEED / "01-shape-d-fp8-200704x3.log",
    SEED / "03-shape-f-mnbt2048-graph-pinned.log",
    SEED / "04-shape-g-kv-400700-no-prefix-cache.log",
)
ENGINE = FIXTURES / "engine" / "e01-v0.32.0-cpu-cold-requests-sigterm.log"  # a real vLLM 0.32 on CPU


def run(db, *args):
    return CliRunner().invoke(cli, ["--db", str(db), *args], catch_exceptions=False)


def by_hand(log) -> dict:
    """What the log says, read without bootlog: the run line's args and the KV size line."""
    text = log.read_text(encoding="utf-8", errors="replace")
    args = ast.literal_eval(re.search(r"non-default args: (\{.*\})", text)[1])
    kv = int(re.search(r"KV cache size: ([\d,]+) tokens", text)[1].replace(",", ""))
    reserved = re.search(r"reserved ([\d.]+) GiB memory for KV Cache", text)
    return {**args, "kv": kv, "reserved_gib": float(reserved[1]) if reserved else None}


def test_kv_margin_leads_with_the_full_length_requests_resident(tmp_path):
    db = tmp_path / "b.db"
    assert run(db, "ingest", str(SHAPE_F), str(SHAPE_G)).exit_code == 0
    g, f = by_hand(SHAPE_G), by_hand(SHAPE_F)
    # the notes: "KV 401,408 tokens / 2.00x", 200,704 x 3 slots; shape F held 398,658
    assert (g["kv"], g["max_model_len"], g["max_num_seqs"], f["kv"]) == (401408, 200704, 3, 398658)
    margin = g["kv"] - g["max_num_seqs"] * g["max_model_len"]
    held, held_before = f"{g['kv'] / g['max_model_len']:.2f}", f"{f['kv'] / f['max_model_len']:.2f}"
    assert (margin, held, held_before) == (-200704, "2.00", "1.99")

    show = run(db, "show", "2").stdout.splitlines()
    line = next(ln for ln in show if ln.startswith("  kv_margin_tokens "))
    assert line.split(None, 1)[1] == (
        f"full-length requests resident: {held} of 3 slots  ({margin:,} tokens: "
        "KV tokens − max_num_seqs × max_model_len)"
    )
    # the JSON figure stays the contract's number; the diff's why, its Markdown and its text lead with
    # what it means
    fig = {m["name"]: m["value"] for m in json.loads(run(db, "show", "2", "--json").stdout)["metrics"]}
    assert fig["kv_margin_tokens"] == margin
    res = run(db, "diff", "2", "1", "--json")
    (row,) = [r for r in json.loads(res.stdout)["findings"] if r["key"] == "kv_margin_tokens"]
    assert row["why"].startswith(f"full-length requests resident: {held_before} → {held} of 3 slots; explained by ")
    text = next(ln for ln in run(db, "diff", "2", "1").stdout.splitlines() if "kv_margin_tokens" in ln)
    assert re.fullmatch(
        rf"  ~ kv_margin_tokens +full-length requests resident: {held_before} → {held} of 3 slots"
        rf"  \(-203,454 → {margin:,} tokens, \+2,750, \+1\.35%\)  explained by a change of .*",
        text,
    )
    md = next(ln for ln in run(db, "diff", "2", "1", "--markdown").stdout.splitlines() if "kv_margin_tokens" in ln)
    assert f"| full-length requests resident: {held_before} → {held} of 3 slots; explained by" in md


def test_kv_bytes_per_token_says_it_divides_the_asked_bytes(tmp_path):
    db = tmp_path / "b.db"
    assert run(db, "ingest", str(SHAPE_D)).exit_code == 0
    d = by_hand(SHAPE_D)
    asked = d["kv_cache_memory_bytes"]
    assert (asked, d["kv"], d["reserved_gib"]) == (3150000000, 398658, 2.93)
    # vLLM's "reserved 2.93 GiB" prints the ask itself (format_gib(kv_cache_memory_bytes)), so the
    # 3,146,129,408 B the seeds divide (7,892 B/token) is in no line: the figure divides the ask
    assert round(asked / 2**30, 2) == d["reserved_gib"]
    fig = {m["name"]: m["value"] for m in json.loads(run(db, "show", "1", "--json").stdout)["metrics"]}
    assert fig["kv_bytes_per_token"] == asked / d["kv"]
    assert round(fig["kv_bytes_per_token"], 1) == 7901.5
    line = next(ln for ln in run(db, "show", "1").stdout.splitlines() if ln.startswith("  kv_bytes_per_token "))
    assert line.split(None, 1)[1] == (
        "7,902 B/token  (asked bytes: kv_cache_memory_bytes 3,150,000,000 ÷ 398,658 KV "
        'tokens; the log\'s "reserved 2.93 GiB" is this ask, rounded; the block-aligned '
        "bytes the engine allocated are not printed)"
    )


def test_the_real_engines_bytes_per_token_is_its_models_kv_geometry(tmp_path):
    db = tmp_path / "b.db"
    assert run(db, "ingest", str(ENGINE)).exit_code == 0
    e = by_hand(ENGINE)
    # the engine tier's tiny Llama: 2 layers, 2 KV heads of 32, bf16: K and V are
    # 2 x 2 x 2 x 32 x 2 = 512 bytes a token, and the 64 MiB asked hold 131,072 of them
    assert (e["kv_cache_memory_bytes"], e["kv"]) == (64 << 20, 131072)
    assert e["kv_cache_memory_bytes"] / e["kv"] == 2 * 2 * 2 * 32 * 2
    line = next(ln for ln in run(db, "show", "1").stdout.splitlines() if ln.startswith("  kv_bytes_per_token "))
    # (the CPU backend prints no "reserved" line: nothing to say about one)
    assert line.split(None, 1)[1] == (
        "512 B/token  (asked bytes: kv_cache_memory_bytes 67,108,864 ÷ 131,072 KV "
        "tokens; the block-aligned bytes the engine allocated are not printed)"
    )
