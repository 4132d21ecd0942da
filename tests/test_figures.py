"""The one list of figures (bootlog/figures.py) against what reads and shows them: the catalogue's
samples, the timeline's phases, the engine captures' stored figures."""

from __future__ import annotations

from bootlog.figures import BY_NAME, FIGURES, KINDS, names
from bootlog.judge.timeline import PHASES
from bootlog.parse.patterns import CATALOGUE, match


def test_one_entry_per_figure_and_a_known_kind():
    assert len(BY_NAME) == len(FIGURES)
    assert {f.kind for f in FIGURES} <= set(KINDS)
    assert sum(len(names(k)) for k in KINDS) == len(FIGURES)


def test_every_figure_a_wording_prints_is_listed_and_every_listed_one_is_printed_by_a_sample():
    # (what the catalogue's own sample lines give, read by the matcher: not the list itself)
    given = {h.name for p in CATALOGUE for line, _ in p.samples for h in match(line) if h.kind == "metric"}
    assert given - set(BY_NAME) == set()
    assert {f.name for f in FIGURES if f.read} - given == set()
    assert {f.name for f in FIGURES if not f.read} & given == set()


def test_what_an_entry_points_at_exists():
    for f in FIGURES:
        assert f.budget is None or f.budget in BY_NAME, f.name
        assert f.phase is None or f.phase[0] in PHASES, f.name
        assert f.unit, f.name
        assert f.sized_by is None or f.kind in ("capacity", "other"), f.name
    # the four of ingest's line are among the deploy summary's key figures, shown in list order
    assert [f.name for f in FIGURES if f.brief] == [f.name for f in FIGURES if f.key and f.brief]
