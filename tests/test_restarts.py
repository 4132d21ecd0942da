"""Every start of the process is its own boot, whatever its output looks like (issue 30): runs
concatenated into one nohup.out, a restart printing the same lines again, a run appended after
a later one (the envelope clock going back)."""

from __future__ import annotations

from bootlog.run.ingest import parse_source
from bootlog.read.sources import open_source
from paths import FIXTURES

SEED = FIXTURES / "seed"
PARTS = [
    SEED / "01-shape-d-fp8-200704x3.log",
    FIXTURES / "012-v0.10.2-v1-small.log",
    SEED / "04-shape-g-kv-400700-no-prefix-cache.log",
]


def boots_of(path):
    return parse_source(open_source(str(path)))


def facts(b):
    """What a boot says, independent of where in a file it sits."""
    return (
        b.status,
        b.failure,
        b.vllm_version,
        b.model,
        sorted(b.config.items()),
        sorted((m.name, m.rank, m.value) for m in b.metrics if m.name != "boot_to_ready_s"),
        sorted((e.kind, e.rank, e.message) for e in b.events),
        len(b.samples),
    )


def test_three_runs_in_one_file_are_three_boots_with_their_own_figures(tmp_path):
    # `cat seed/01-*.log 012-v0.10.2-v1-small.log seed/04-*.log > n.log` (podman-stamped, plain,
    # podman-stamped): the third boot's figures landed in the second, the first ran to the end
    n = tmp_path / "n.log"
    n.write_bytes(b"".join(p.read_bytes() for p in PARTS))
    got = boots_of(n)
    alone = [boots_of(p) for p in PARTS]
    assert [len(a) for a in alone] == [1, 1, 1]
    assert len(got) == 3, [(b.first_line, b.last_line, b.vllm_version) for b in got]
    assert [facts(b) for b in got] == [facts(a[0]) for a in alone]
    offset = 0
    for b, p, (a,) in zip(got, PARTS, alone):
        assert b.first_line == a.first_line + offset  # (each boot where its part of the file is)
        offset += p.read_bytes().count(b"\n")
    assert got[0].last_line < got[1].first_line and got[1].last_line < got[2].first_line


def test_a_run_appended_after_a_later_one_is_its_own_boot(tmp_path):
    # seed 04 (10-05) then seed 01 (10-02) in one file: the clock going back is a new run
    n = tmp_path / "back.log"
    n.write_bytes(PARTS[2].read_bytes() + PARTS[0].read_bytes())
    got = boots_of(n)
    assert [facts(b) for b in got] == [facts(boots_of(PARTS[2])[0]), facts(boots_of(PARTS[0])[0])]
