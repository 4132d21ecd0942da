"""A stored boot's timeline: timeline.phases() fed from the store.

`show --json` leaves out the time of the line that printed each figure; the phases need it (a
figure's line time is when its phase ended), so the figures are read again with their times
(store.reads.stored_figures) instead of widening the contract's metric rows.
"""

from __future__ import annotations

from typing import Iterable


def timeline(store, doc: dict) -> list[dict]:
    """The phases of the boot in `doc` (a show --json document): [{"phase", "start", "end",
    "s"}, ...], adding up to boot_to_ready_s (to the last line for a boot that never got ready);
    [] when the log gave no times."""
    from bootlog.store.reads import stored_figures
    from bootlog.judge.timeline import BootTimes, phases

    boot = doc["boot"]
    return phases(BootTimes.from_dict(boot, stored_figures(store, boot["id"])))


def timelines(store, docs: Iterable[dict]) -> dict[int, list[dict]]:
    """Boot id -> its timeline, for several documents (one query per boot)."""
    return {d["boot"]["id"]: timeline(store, d) for d in docs}
