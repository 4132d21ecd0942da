"""Reports on a database built from real logs: history, export (csv/json/parquet), plot, HTML.

Every expectation comes from the corpus ground truth (<log>.expected.json) or from the stored
`show --json` documents, never from numbers written into this file.
"""

from __future__ import annotations

import base64
import csv
import json
import re
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from bootlog.cli import cli
from paths import FIXTURES, ROOT

CORPUS = Path(__file__).resolve().parent.parent / "fixtures" / "logs"  # the corpus, copied
# Ingest order matters: 014 goes last so `last`/`prev` (same source) exist for the report's diff.
LOGS = (
    "057-rocm-rdna4-gfx12-tp2-v0.22.69-fork-boot",  # the operator's ROCm fork, TP2
    "010-v0.10.0-v1-tp8-judge",  # TP8, per-rank figures that differ
    "022-v0.13.0-oom-engine-failed",  # failed: oom
    "050-v0.26.1rc1-autoscientists",  # 88 stats lines
    "014-v0.10.2-nohup-multiboot",  # two boots: value_error, then ready
)
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def log_path(name: str) -> Path:
    for base in (FIXTURES, CORPUS):
        p = base / f"{name}.log"
        if p.exists():
            return p
    pytest.skip(f"fixture log {name}.log is in neither {FIXTURES} nor {CORPUS}")


def expected_boots() -> list[dict]:
    out = []
    for name in LOGS:
        p = log_path(name).with_suffix(".expected.json")
        out.extend(json.loads(p.read_text()))
    return out


def exp_status(e: dict) -> str:
    return "ready" if e.get("ready") else "failed" if e.get("failed") else "incomplete"


def run(db, *args):
    return CliRunner().invoke(cli, ["--db", str(db), *args], catch_exceptions=False)


@pytest.fixture(scope="module")
def db(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("report") / "bootlog.db"
    for name in LOGS:
        res = run(path, "ingest", str(log_path(name)))
        assert res.exit_code == 0, res.output
    return path


@pytest.fixture(scope="module")
def exp(db) -> list[dict]:
    """The ground truth in the order the database lists the boots: the order they started."""
    truth = {name: json.loads(log_path(name).with_suffix(".expected.json").read_text()) for name in LOGS}
    listed = json.loads(run(db, "list", "--json").stdout)
    lines = {name: sorted(b["first_line"] for b in listed if Path(b["source"]).stem == name) for name in LOGS}
    # (the n-th boot of a log in log order is its n-th ground-truth boot)
    return [truth[name][lines[name].index(b["first_line"])] for b in listed for name in [Path(b["source"]).stem]]


def as_list(v) -> list[float]:
    return sorted(v) if isinstance(v, list) else [v]


def test_database_holds_the_ground_truth_boots(db, exp):
    boots = json.loads(run(db, "list", "--json").stdout)
    assert len(boots) == len(expected_boots())
    assert [b["status"] for b in boots] == [exp_status(e) for e in exp]
    assert [b["started_at"] for b in boots] == sorted(b["started_at"] for b in boots)


# ---------------------------------------------------------------------------------- history


def test_history_json_rows_match_ground_truth(db, exp):
    res = run(db, "history", "--json", "--metric", "status,kv_cache_tokens,max_concurrency,max_model_len,faults")
    assert res.exit_code == 0, res.output
    rows = json.loads(res.stdout)
    assert len(rows) == len(exp)
    for row, e in zip(rows, exp):
        assert row["status"] == exp_status(e)
        assert row["max_model_len"] == e["max_model_len"]
        for key in ("kv_cache_tokens", "max_concurrency"):
            if key not in e:
                assert row[key] is None
            elif isinstance(e[key], list) and len(set(e[key])) > 1:
                # ranks disagree: every printing, as a list
                assert sorted(row[key]) == sorted(e[key])
            else:
                assert row[key] == as_list(e[key])[0]
        # an OOM boot has at least one oom event; the ready boots here had no runtime faults
        assert (row["faults"] > 0) == (e.get("failure") == "oom")


def test_history_default_columns_and_change_marks(db, exp):
    res = run(db, "history")
    assert res.exit_code == 0, res.output
    lines = res.stdout.splitlines()
    header = lines[0].split()
    assert header == [
        "id",
        "status",
        "vllm_version",
        "max_model_len",
        "max_num_seqs",
        "kv_cache_tokens",
        "max_concurrency",
        "graph_capture_gib",
        "torch_compile_s",
        "boot_to_ready_s",
        "faults",
    ]
    body = [l for l in lines[1:] if re.match(r"^\s*\d+\s", l)]
    assert len(body) == len(exp)
    for i, (line, e) in enumerate(zip(body, exp)):
        status_cell = line.split()[1]
        moved = i > 0 and exp_status(e) != exp_status(exp[i - 1])
        assert status_cell == exp_status(e) + ("*" if moved else ""), line
        mml_cell = line.split()[3]
        moved = i > 0 and e["max_model_len"] != exp[i - 1]["max_model_len"]
        assert mml_cell.endswith("*") == moved, line
    assert "(* = differs from the boot before)" in res.stdout


def test_history_shows_per_rank_values_joined_when_ranks_disagree(db, exp):
    rows = json.loads(run(db, "history", "--json", "--metric", "torch_compile_s,graph_capture_gib").stdout)
    text = run(db, "history", "--metric", "torch_compile_s,graph_capture_gib").stdout.splitlines()[1:]
    tp8 = next(i for i, e in enumerate(exp) if isinstance(e.get("torch_compile_s"), list))
    e = exp[tp8]
    assert sorted(rows[tp8]["torch_compile_s"]) == sorted(e["torch_compile_s"])
    cell = text[tp8].split()[1].rstrip("*")
    assert len(cell.split("/")) == len(e["torch_compile_s"])
    # every rank captured the same 2.6 GiB: one value, not eight
    assert rows[tp8]["graph_capture_gib"] == e["graph_capture_gib"][0]


def test_history_last_n_keeps_the_change_against_the_boot_before(db, exp):
    full = json.loads(run(db, "history", "--json").stdout)
    last2 = json.loads(run(db, "history", "--json", "--last", "2").stdout)
    assert [r["id"] for r in last2] == [r["id"] for r in full[-2:]]
    assert last2 == full[-2:]
    csv_rows = list(csv.DictReader(run(db, "history", "--csv", "--last", "2").stdout.splitlines()))
    assert [int(r["id"]) for r in csv_rows] == [r["id"] for r in full[-2:]]
    assert [r["changed"].split(";") if r["changed"] else [] for r in csv_rows] == [r["changed"] for r in full[-2:]]


def test_history_rejects_an_unknown_figure_in_one_line(db):
    res = run(db, "history", "--metric", "kv_cache_tokenz")
    assert res.exit_code == 1
    assert res.stderr.strip().count("\n") == 0 and "kv_cache_tokenz" in res.stderr


def test_history_on_an_empty_database(tmp_path):
    assert run(tmp_path / "empty.db", "db", "upgrade").exit_code == 0
    res = run(tmp_path / "empty.db", "history")
    assert res.exit_code == 0 and "no boots stored yet" in res.stdout
    res = run(tmp_path / "typo.db", "history")  # no database there: said, not made
    assert res.exit_code == 1 and "no database at" in res.stderr and not (tmp_path / "typo.db").exists()


# ----------------------------------------------------------------------------------- export


def metric_cells(row: dict, name: str) -> list[float]:
    """All values of a metric in a wide row: its per-rank cells NAME@rankN / NAME@engine(.k)
    when it has them, else its one column NAME."""
    ranked = [float(v) for k, v in row.items() if k.startswith(name + "@") and v not in ("", None)]
    return sorted(ranked) if ranked else [float(row[name])] if row.get(name) not in ("", None) else []


def test_export_csv_boots_events_samples(db, exp, tmp_path):
    out = tmp_path / "boots.csv"
    res = run(db, "export", "--format", "csv", str(out))
    assert res.exit_code == 0, res.output
    boots = list(csv.DictReader(out.open()))
    assert len(boots) == len(exp)
    cols = boots[0].keys()
    assert {"id", "status", "vllm_version", "config.max_model_len"} <= set(cols)
    # a metric always has its own column (its first printing), whatever else is stored, and
    # per-rank columns beside it where ranks disagree
    for name in ("torch_compile_s", "kv_cache_tokens", "graph_capture_gib"):
        assert name in cols
    assert any(c.startswith("torch_compile_s@rank") for c in cols)  # TP8 ranks disagree
    tp8 = next(r for r in boots if r["torch_compile_s@rank1"] not in ("", None))
    shown = json.loads(run(db, "show", tp8["id"], "--json").stdout)
    first = next(m["value"] for m in shown["metrics"] if m["name"] == "torch_compile_s")
    assert float(tp8["torch_compile_s"]) == first  # its first printing in the log
    for row, e in zip(boots, exp):
        assert row["status"] == exp_status(e)
        assert row["vllm_version"] == e["vllm_version"]
        assert int(row["config.max_model_len"]) == e["max_model_len"]
        for name in ("kv_cache_tokens", "max_concurrency", "torch_compile_s", "model_load_gib"):
            if name in e:
                got = metric_cells(row, name)
                want = as_list(e[name])
                if isinstance(e[name], list) and len(got) < len(want):
                    want = sorted(set(want))  # ranks agreed, stored once per rank that printed
                assert sorted(set(got)) == sorted(set(want)), (name, row["id"])
            else:
                assert metric_cells(row, name) == [], (name, row["id"])

    events = list(csv.DictReader((tmp_path / "boots-events.csv").open()))
    ids = {r["id"] for r in boots}
    assert events and {r["boot_id"] for r in events} <= ids
    oom_ids = {boots[i]["id"] for i, e in enumerate(exp) if e.get("failure") == "oom"}
    assert oom_ids <= {r["boot_id"] for r in events if r["kind"] == "oom"}
    for r in events:
        json.loads(r["detail"])  # detail is a JSON object in one cell

    samples = list(csv.DictReader((tmp_path / "boots-samples.csv").open()))
    for row in boots:
        shown = json.loads(run(db, "show", row["id"], "--json").stdout)
        lines = {s["line"] for s in samples if s["boot_id"] == row["id"]}
        assert len(lines) == shown["runtime"]["stats_lines"]
        last = (
            [s for s in samples if s["boot_id"] == row["id"] and int(s["line"]) == max(map(int, lines))]
            if lines
            else []
        )
        assert {s["name"]: float(s["value"]) for s in last} == {
            k: float(v) for k, v in shown["runtime"]["last"].items()
        }


def test_export_json_has_three_arrays_consistent_with_csv(db, exp, tmp_path):
    res = run(db, "export", str(tmp_path / "all.json"))  # format from the suffix
    assert res.exit_code == 0, res.output
    data = json.loads((tmp_path / "all.json").read_text())
    assert set(data) == {"boots", "events", "samples"}
    assert [b["status"] for b in data["boots"]] == [exp_status(e) for e in exp]
    run(db, "export", str(tmp_path / "b.csv"))
    assert len(data["events"]) == len(list(csv.DictReader((tmp_path / "b-events.csv").open())))
    assert len(data["samples"]) == len(list(csv.DictReader((tmp_path / "b-samples.csv").open())))
    for b, e in zip(data["boots"], exp):
        if "kv_cache_tokens" in e:
            assert sorted(set(metric_cells(b, "kv_cache_tokens"))) == sorted(set(as_list(e["kv_cache_tokens"])))
        assert isinstance(b["config.max_model_len"], int)


def test_export_parquet_or_a_clear_error(db, exp, tmp_path):
    out = tmp_path / "boots.parquet"
    res = run(db, "export", "--format", "parquet", str(out))
    try:
        import pyarrow  # noqa: F401
    except ImportError:
        assert res.exit_code == 1
        assert res.stderr.startswith("bootlog: ") and "pyarrow" in res.stderr
        assert res.stderr.strip().count("\n") == 0
        return
    import pandas as pd

    assert res.exit_code == 0, res.output
    frame = pd.read_parquet(out)
    assert list(frame["status"]) == [exp_status(e) for e in exp]
    assert (tmp_path / "boots-events.parquet").exists() and (tmp_path / "boots-samples.parquet").exists()


def test_export_into_a_missing_directory_is_one_line_error(db, tmp_path):
    res = run(db, "export", str(tmp_path / "nope" / "x.csv"))
    assert res.exit_code == 1 and res.stderr.startswith("bootlog: ")


# ------------------------------------------------------------------------------ plot, report


def need_matplotlib():
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        print("\n*** matplotlib missing: plot tests SKIPPED (pip install 'bootlog[plot]') ***", file=sys.stderr)
        pytest.skip("matplotlib not installed (pip install 'bootlog[plot]')")


def test_plot_writes_a_png(db, tmp_path):
    need_matplotlib()
    out = tmp_path / "kv.png"
    res = run(db, "plot", "kv_cache_tokens", "-o", str(out))
    assert res.exit_code == 0, res.output
    data = out.read_bytes()
    assert data[:8] == PNG_MAGIC and len(data) > 10_000


def test_plot_of_a_runtime_column_history_shows(db, tmp_path):
    # plot takes any numeric history column, runtime.max.X included
    need_matplotlib()
    out = tmp_path / "kvu.svg"
    res = run(db, "plot", "runtime.max.kv_cache_usage_pct", "-o", str(out))
    assert res.exit_code == 0, res.output
    assert out.read_bytes().lstrip().startswith((b"<?xml", b"<svg"))


def test_plot_of_a_figure_no_boot_has_is_one_line_error(db, tmp_path):
    need_matplotlib()
    res = run(db, "plot", "no_such_figure", "-o", str(tmp_path / "x.png"))
    assert res.exit_code == 1 and "no_such_figure" in res.stderr
    assert not (tmp_path / "x.png").exists()


def test_plot_annotates_the_config_changes_of_the_ground_truth(db, exp):
    from bootlog.render.plot import config_changes, series
    from bootlog.render.report import load_docs
    from bootlog.store.db import open_store

    docs = load_docs(open_store(str(db)))
    changes = dict(config_changes(docs))
    for i in range(1, len(exp)):
        moved = exp[i]["max_model_len"] != exp[i - 1]["max_model_len"]
        assert any(t.startswith("max_model_len ") for t in changes.get(i, [])) == moved, i
    # TP8 ranks disagree on torch.compile time: that boot becomes one point per rank, the
    # other boots stay on the single main series
    lines = series(docs, "torch_compile_s")
    split = [
        i
        for i, e in enumerate(exp)
        if isinstance(e.get("torch_compile_s"), list) and len(set(e["torch_compile_s"])) > 1
    ]
    assert len(lines) == 1 + sum(len(exp[i]["torch_compile_s"]) for i in split)
    main = lines["torch_compile_s"]
    for i, e in enumerate(exp):
        want = None if i in split or "torch_compile_s" not in e else as_list(e["torch_compile_s"])[0]
        assert main[i] == want, i
    assert list(series(docs, "init_engine_s")) == ["init_engine_s"]


def test_report_is_one_self_contained_html_page(db, exp, tmp_path):
    need_matplotlib()
    out = tmp_path / "report.html"
    res = run(db, "report", "-o", str(out))
    assert res.exit_code == 0, res.output
    page = out.read_text()
    table = page[page.index('<table class="history">') :]
    table = table[: table.index("</table>")]
    assert table.count("<tr") == len(exp) + 1  # header + one row per boot
    rows = re.findall(r"<tr[^>]*>(.*?)</tr>", table)[1:]
    for row, e in zip(rows, exp):
        cells = re.findall(r"<td[^>]*>(.*?)</td>", row)
        assert cells[1].rstrip("*") == exp_status(e)
    imgs = re.findall(r'src="data:image/png;base64,([A-Za-z0-9+/=]+)"', page)
    assert imgs and all(base64.b64decode(i)[:8] == PNG_MAGIC for i in imgs)
    assert not re.search(r'(src|href)="(https?:)?//', page)  # nothing fetched from the network
    # the newest boot is 014's ready restart: its statistics lines are the runtime section
    assert f"{exp[-1]['metrics_lines']} statistics lines" in page
    # last and prev are 014's two boots: the diff section is there
    assert "Latest boot against the one before" in page


# ------------------------------------------------------------------------------------ bench


def test_genlog_is_deterministic_and_parses_into_its_boots(tmp_path):
    sys.path.insert(0, str(ROOT / "bench"))
    import genlog

    a, b = tmp_path / "a.log", tmp_path / "b.log"
    n = genlog.generate(2, str(a), boots=8, seed=3)
    genlog.generate(2, str(b), boots=8, seed=3)
    assert a.read_bytes() == b.read_bytes()
    assert abs(n - 2 * 2**20) < 0.1 * 2**20
    variants = genlog._variants(__import__("random").Random(3), 8)
    assert run(tmp_path / "g.db", "db", "upgrade").exit_code == 0
    res = run(tmp_path / "g.db", "history", "--json")  # empty first
    assert json.loads(res.stdout) == []
    assert run(tmp_path / "g.db", "ingest", str(a)).exit_code == 0
    rows = json.loads(
        run(tmp_path / "g.db", "history", "--json", "--metric", "status,kv_cache_tokens,max_model_len,faults").stdout
    )
    assert [r["status"] for r in rows] == ["failed" if v["fail"] else "ready" for v in variants]
    for r, v in zip(rows, variants):
        assert r["max_model_len"] == v["max_model_len"]
        if not v["fail"]:
            assert r["kv_cache_tokens"] == v["kv_tokens"]
    # the gdn_hip burst (32 reported faults) lands in the boots that carry it
    assert sum(r["faults"] for r in rows) >= 32
    # the podman --timestamps envelope carries the same boots
    genlog.generate(2, str(tmp_path / "p.log"), boots=8, seed=3, podman=True)
    assert run(tmp_path / "p.db", "ingest", str(tmp_path / "p.log")).exit_code == 0
    wrapped = json.loads(run(tmp_path / "p.db", "history", "--json", "--metric", "status,kv_cache_tokens").stdout)
    assert [(r["status"], r["kv_cache_tokens"]) for r in wrapped] == [(r["status"], r["kv_cache_tokens"]) for r in rows]


# ------------------------------------------------------------------- optional extras missing


def test_missing_matplotlib_is_a_one_line_error_and_the_report_still_renders(db, tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # `import matplotlib` now raises ImportError
    res = run(db, "plot", "kv_cache_tokens", "-o", str(tmp_path / "kv.png"))
    assert res.exit_code == 1
    assert res.stderr.strip() == "bootlog: plots need matplotlib: pip install 'bootlog[plot]'"
    res = run(db, "report", "-o", str(tmp_path / "r.html"))
    assert res.exit_code == 0, res.output
    page = (tmp_path / "r.html").read_text()
    assert '<table class="history">' in page and "data:image/png" not in page
    assert "Plots left out: plots need matplotlib" in page


def test_missing_pyarrow_is_a_one_line_error(db, tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "pyarrow", None)
    res = run(db, "export", "--format", "parquet", str(tmp_path / "b.parquet"))
    assert res.exit_code == 1
    assert res.stderr.strip() == "bootlog: parquet export needs pyarrow: pip install 'bootlog[parquet]'"
    assert not (tmp_path / "b.parquet").exists()


def test_container_filter_keeps_one_containers_boots(tmp_path, exp):
    # two containers' boots in one database, saved through the store as `ingest --container` does
    from bootlog.run.ingest import parse_source
    from bootlog.read.sources import open_source
    from bootlog.store.db import open_store
    from bootlog.store.write import SourceInfo, save_boots

    db = tmp_path / "two.db"
    engine = open_store(str(db))
    for name, container in ((LOGS[-1], "frank-primary-qwen"), (LOGS[0], "other")):
        boots = parse_source(open_source(str(log_path(name))))
        save_boots(engine, SourceInfo(name=name, kind="container", container=container, host="h"), boots)
    want = [exp_status(e) for e in json.loads(log_path(LOGS[-1]).with_suffix(".expected.json").read_text())]
    rows = json.loads(run(db, "history", "--json", "--container", "frank-primary-qwen").stdout)
    assert [r["status"] for r in rows] == want
    data_path = tmp_path / "c.json"
    assert run(db, "export", str(data_path), "--container", "other").exit_code == 0
    boots = json.loads(data_path.read_text())["boots"]
    assert [b["container"] for b in boots] == ["other"] * len(boots) and len(boots) >= 1


def test_history_csv_carries_every_digit_and_died_boots_read_as_such(tmp_path):
    # seed 07 died serving (ready, failure oom); seed 01 prints boot_to_ready 554.689601 s
    db = tmp_path / "s.db"
    for name in ("01-shape-d-fp8-200704x3", "07-5x262144-runtime-oom"):
        assert run(db, "ingest", str(FIXTURES / "seed" / f"{name}.log")).exit_code == 0
    rows = list(csv.DictReader(run(db, "history", "--csv").stdout.splitlines()))
    shown = json.loads(run(db, "show", "1", "--json").stdout)
    ready_s = next(m["value"] for m in shown["metrics"] if m["name"] == "boot_to_ready_s")
    # in start order: seed 07 started 09-30, seed 01 on 10-02
    assert [r["id"] for r in rows] == ["2", "1"]
    assert float(rows[1]["boot_to_ready_s"]) == ready_s and len(str(ready_s)) > 7
    assert [r["status"] for r in rows] == ["ready (oom)", "ready"]
    assert [r["faults"] for r in rows] == ["1", "0"]  # one OOM, one fault (not its wrapper too)
    text = run(db, "history").stdout
    assert " ready (oom)" in text
    # filters that match nothing say so, not "no boots stored yet"
    assert run(db, "history", "--container", "nope").stdout.strip() == "no boots stored for container nope"
    res = run(db, "plot", "kv_cache_tokens", "--host", "nowhere", "-o", str(tmp_path / "x.png"))
    assert res.exit_code == 1 and "no boots stored for host nowhere" in res.stderr


def test_plot_writes_the_format_its_name_asks_for(db, tmp_path):
    pytest.importorskip("matplotlib")
    svg, pdf = tmp_path / "kv.svg", tmp_path / "kv.pdf"
    for path in (svg, pdf):
        assert run(db, "plot", "kv_cache_tokens", "-o", str(path)).exit_code == 0
    assert b"<svg" in svg.read_bytes()[:500] and pdf.read_bytes().startswith(b"%PDF")
    res = run(db, "plot", "kv_cache_tokens", "-o", str(tmp_path / "kv.jpg"))
    assert res.exit_code == 1 and ".png, .svg or .pdf" in res.stderr
    # any numeric history column plots too: faults per boot, a config key
    for name in ("faults", "max_model_len"):
        png = tmp_path / f"{name}.png"
        assert run(db, "plot", name, "-o", str(png)).exit_code == 0
        assert png.read_bytes().startswith(PNG_MAGIC)
    from bootlog.render.plot import series
    from bootlog.render.report import load_docs
    from bootlog.store.db import open_store

    docs = load_docs(open_store(str(db)), runtime=False)
    faults = [float(sum(e["kind"] in ("oom", "gdn_hip_fault") for e in d["events"])) for d in docs]
    assert series(docs, "faults")["faults"] == faults and any(faults)  # (022 has its OOM)


def test_history_marks_a_change_against_the_same_series_only(tmp_path):
    # seed 01 and 02 on host alpha, the crash loop (05) on host beta: beta's boots started after
    # alpha's (10-03 vs 10-02), and beta's first is compared with nothing, not with alpha's last
    db = tmp_path / "fleet.db"
    for name, host in (
        ("05-util-1.00-crash-loop", "beta"),
        ("01-shape-d-fp8-200704x3", "alpha"),
        ("02-shape-e-precise-memory", "alpha"),
    ):
        assert run(db, "ingest", "--host", host, str(FIXTURES / "seed" / f"{name}.log")).exit_code == 0
    rows = json.loads(run(db, "history", "--json").stdout)
    assert [r["status"] for r in rows] == ["ready", "ready", "failed", "failed (crash loop: 2 starts)"]
    alpha2 = rows[1]
    assert "status" not in alpha2["changed"] and "kv_cache_tokens" not in alpha2["changed"]
    assert "torch_compile_s" in alpha2["changed"]  # cold 181.2 s, then a cache hit
    assert rows[2]["changed"] == []  # beta's first boot has no boot before it


def test_history_faults_count_a_run_of_faults_as_diff_does(tmp_path):
    # the fork prints a run of faults on one line ("fault #1-23"): 23, in history as in diff
    log = tmp_path / "f23.log"
    log.write_bytes(
        (FIXTURES / "016-v0.11.0-energy.log").read_bytes()
        + b"[gdn_hip] ERROR gdn_decode_r: state out of ssm-cache range: max|S|=0 with non-finite "
        b"values (slot=42 head=3 limit=3.40282e+38) fault #1-23\n"
    )
    db = str(tmp_path / "f.db")
    run = lambda *a: CliRunner().invoke(cli, ["--db", db, *a], catch_exceptions=False)  # noqa: E731
    assert run("ingest", str(log)).exit_code == 0
    got = json.loads(run("history", "--metric", "faults", "--json").stdout)
    assert [r["faults"] for r in got] == [23]
    d = json.loads(run("show", "last", "--json").stdout)
    assert sum(int(e["detail"].get("faults") or 1) for e in d["events"] if e["kind"] == "gdn_hip_fault") == 23


def test_history_json_keeps_a_huge_figure_a_float_not_invented_digits():
    from bootlog.render.report import json_cell

    assert json_cell(398658.0) == 398658 and isinstance(json_cell(398658.0), int)
    big = 123456789012345678901.0  # printed by a log as 123,456,789,012,345,678,901
    assert json_cell(big) == big and isinstance(json_cell(big), float)  # not 123456789012345683968


# ------------------------------------------------------------------- many boots (issue 31)


@pytest.fixture(scope="module")
def crowd(tmp_path_factory):
    """3,000 boots of one container, two in three failed starts (the crash loops between)."""
    from pgutil import many_boots

    return many_boots(tmp_path_factory.mktemp("crowd") / "crowd.db", 3000)


def test_a_plot_of_thousands_of_boots_measures_a_few_labels_and_keeps_a_few_fields(crowd, tmp_path, monkeypatch):
    """100,000 boots: plot took 224 s and 2.5 GB (every tick label measured twice with the
    renderer, every boot's whole document held): now 16 labels are measured, and each boot keeps
    the fields, figures and events a plot reads (the config shared by the boots that ran it)."""
    from bootlog.render import plot as plot_mod
    from bootlog.render.report import load_docs
    from bootlog.store.db import open_store

    measured: list[str] = []
    real = plot_mod.text_px
    monkeypatch.setattr(plot_mod, "text_px", lambda r, text, *a: measured.append(text) or real(r, text, *a))
    res = run(crowd, "plot", "kv_cache_tokens", "-o", str(tmp_path / "k.png"))
    assert res.exit_code == 0 and res.stderr == "", res.output
    assert (tmp_path / "k.png").read_bytes()[:4] == b"\x89PNG"
    assert len(measured) < 100, len(measured)  # (6,000 before: two passes over 3,000 tick labels)
    store = open_store(str(crowd))
    docs = load_docs(store, runtime=False, trim=plot_mod.keep_for("kv_cache_tokens"))
    store.close()
    assert len(docs) == 3000 and len({id(d["config"]) for d in docs}) == 1  # one config, held once
    assert all(len(json.dumps(d)) < 1000 for d in docs)  # (a seed boot's whole document: ~6 KB)


@pytest.mark.filterwarnings("error")  # (a warning is what a user's stderr would show)
def test_the_report_of_boots_without_line_times_prints_nothing_on_stderr(crowd, tmp_path):
    # matplotlib's "UserWarning: No artists with labels found to put in legend" reached stderr
    # when none of the boots shown had a line time (the timeline's legend names the phases)
    res = run(crowd, "report", "-o", str(tmp_path / "r.html"))
    assert res.exit_code == 0 and res.stderr == "", res.stderr
