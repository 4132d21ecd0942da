"""One line for a burst of gdn_hip faults, where the operator looks first (the ingest line, the
hook's summary, the top of `show`): "32 faults, slot 42, heads 3 and 8, report cap reached".
The fault lines themselves stay in the events."""

from __future__ import annotations

from typing import Any, Iterable


def _get(e: Any, key: str) -> Any:
    return e.get(key) if isinstance(e, dict) else getattr(e, key, None)


def _and(values: list) -> str:
    text = [str(v) for v in values]
    return text[0] if len(text) == 1 else ", ".join(text[:-1]) + " and " + text[-1]


def gdn_summary(events: Iterable[Any]) -> str | None:
    """The burst line of a boot's events (records.Event or show --json dicts); None without faults."""
    faults, cap = [], None
    for e in events:
        kind = _get(e, "kind")
        if kind == "gdn_hip_fault":
            faults.append(_get(e, "detail") or {})
        elif kind == "gdn_hip_fault_cap":
            cap = (_get(e, "detail") or {}).get("limit", cap or True)
    if not faults:
        return None
    n = sum(int(d.get("faults") or 1) for d in faults)  # "fault #1-23" is 23
    parts = [f"{n} fault{'s' if n != 1 else ''}"]
    for key, one, many in (("slot", "slot", "slots"), ("head", "head", "heads")):
        vals = sorted({d[key] for d in faults if isinstance(d.get(key), int)})
        if vals:
            parts.append(f"{one if len(vals) == 1 else many} {_and(vals[:6])}" + (" …" if len(vals) > 6 else ""))
    if cap is not None:
        parts.append("report cap reached" + (f" ({cap})" if cap is not True else ""))
    return ", ".join(parts)
