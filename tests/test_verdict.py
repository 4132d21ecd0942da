"""One verdict rule (bootlog/judge/verdict.py) for the hook, check, diff, the report and the export: what
a boot says of itself is a failure (or drift) whatever the plan says, on the seeds' real boots."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from bootlog.cli import cli
from bootlog.judge.verdict import judge
from paths import FIXTURES

SEED = FIXTURES / "seed"


def run(db, *args):
    return CliRunner().invoke(cli, ["--db", str(db), *args], catch_exceptions=False)


@pytest.fixture(scope="module")
def docs(tmp_path_factory):
    from bootlog.run.ingest import ingest
    from bootlog.store.db import open_store
    from bootlog.store.reads import show_boot

    store = open_store(str(tmp_path_factory.mktemp("v") / "v.db"))
    out = {}
    for log in [*sorted(SEED.glob("*.log")), FIXTURES / "042-v0.22.0-llm.log"]:
        out[log.stem[:3].rstrip("-")] = [show_boot(store, b.id) for b in ingest(store, str(log))]
    return out


def test_each_seed_boot_gets_the_verdict_the_notes_give_it(docs):
    words = {k: [judge(d).word for d in v] for k, v in docs.items()}
    assert words == {
        "01": ["OK"],
        "02": ["OK"],
        "03": ["OK"],
        "04": ["OK"],
        "05": ["FAILED", "FAILED"],  # util 1.00: both starts die in worker init
        "06": ["FAILED"],  # SEQS=2: ConstraintViolationError
        "07": ["FAILED"],  # ready, then the engine died serving (OOM): exit 0 and down
        "08": ["FAILED"],  # ready, then the gdn_hip burst: serving from corrupted state
        "09": ["FAILED", "FAILED", "OK", "OK"],
        "10": ["OK", "OK"],
        "042": ["DRIFT"],  # a request died of an OOM, the server went on (corpus 042)
    }
    (v,) = [judge(d) for d in docs["08"]]
    assert v.code == 4 and v.reasons == [
        "32 gdn_hip state fault(s) (report limit reached: later faults are silent): the engine serves from corrupted state"
    ]


def test_check_diff_report_and_export_say_it_without_the_plan_naming_the_faults(tmp_path):
    db = tmp_path / "v.db"
    for name in ("04-shape-g-kv-400700-no-prefix-cache.log", "08-gdn-hip-burst-prefix-caching.log"):
        assert run(db, "ingest", "--container", "frank-primary-qwen", str(SEED / name)).exit_code == 0
    plan = tmp_path / "p.toml"  # a plan that says nothing of gdn_hip faults
    plan.write_text('[boot]\nstatus = "ready"\n')
    check = run(db, "check", "2", "--plan", str(plan))
    assert check.exit_code == 4, check.output
    assert "  ✗ status: ready missed  32 gdn_hip state fault(s)" in check.output
    assert run(db, "diff", "2", "1").exit_code == 4  # (the seeds' G redeploy is "1", the burst "2")
    # (08 started 10-04, before 04's 10-05 redeploy: the report's latest boot is G, OK; the
    # burst boot's own page is the verdict of `last` once only it is there)
    one = tmp_path / "one.db"
    assert (
        run(
            one, "ingest", "--container", "frank-primary-qwen", str(SEED / "08-gdn-hip-burst-prefix-caching.log")
        ).exit_code
        == 0
    )
    page = run(one, "report").output
    assert '<span class="verdict">FAILED</span>' in page and "serves from corrupted state" in page
    prom = run(one, "export", "--format", "openmetrics").output
    assert 'bootlog_verdict{host="' in prom and '",container="frank-primary-qwen"} 3' in prom
    assert "_died_serving{" in prom and [ln for ln in prom.splitlines() if ln.startswith("bootlog_boot_died_serving{")][
        0
    ].endswith(" 0")
