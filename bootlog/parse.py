"""Records -> Boots: the parse pipeline (vline shape, year resolution, boot splitting).

`parse` reads only *candidate* lines: lines holding a literal of boots.LITERALS or
patterns.LITERALS, plus the TB_CONTEXT lines after each "Traceback (most recent call last)".
It applies that filter itself, so the full record stream and scan.py's pre-filtered stream
give identical boots.

Periodic stats lines ("Avg prompt throughput ...") are most of a big log's candidate lines.
In their usual shapes (a vLLM prefix with at most an API server's tag, then a known stats
wording: patterns.STATS_FAST_BODIES) one regex reads the prefix and every figure, and
BootSplitter.feed_sample() adds the Sample to the right boot, skipping the vline parse, the
catalogue match and the generic routing.  Whenever the splitter's state could make the line
matter for more than its Sample (no boot yet, pending start lines, an open traceback, an unknown
tag), the line goes the generic way instead.  parse(fast_stats=False) turns the fast path off:
tests/test_speed_paths.py checks both give identical boots.
"""
from __future__ import annotations

import re
from datetime import datetime, timezone

TYPE_CHECKING = False
if TYPE_CHECKING:  # (typing for the annotations only: importing it costs ~5 ms of every start)
    from typing import Callable, Iterable, Iterator

from bootlog.boots import TB_CONTEXT, BootSplitter
from bootlog.boots import LITERALS as BOOT_LITERALS
from bootlog.envelope import parse_ts, podman_stamp, stamp_clock
from bootlog.jsontext import dumps
from bootlog.records import Boot, LineBatch, Record, Sample
from bootlog.vline import json_exc_lines, parse_line

_TB = "Traceback (most recent call last)"

# vline's prefix (one optional process tag, level, MM-DD HH:MM:SS, [file:line]) in the narrow shape
# the fast path takes: the same sub-patterns as vline._TAG/_VLLM, so the same groups
_FAST_PREFIX = (r"(?:\((?P<name>[A-Za-z_][\w\-]*) pid=(?P<pid>\d+)\) )?(?:DEBUG|INFO|WARNING) "
                r"(?P<mo>\d\d)-(?P<d>\d\d) (?P<h>\d\d):(?P<mi>\d\d):(?P<s>\d\d) \[?[^\s\]]+?:\d+\] ")
_FAST: list | None = None


def _fast_entry(body: str, names: tuple[str, ...]) -> tuple:
    return (_compiled_on_use(_FAST_PREFIX + body), names,
            _compiled_on_use(_FAST_PREFIX + _canonical(body, names), names), _json_template(body, names))


def _compiled_on_use(pattern: str, names: tuple[str, ...] | None = None) -> Callable:
    """fullmatch of `pattern`, compiled the first time it is called: a stats line whose figures
    are all in their canonical spelling never needs the general regex, and one that the native
    reader takes (_native_stats) not even the canonical one (a re-ingest's start saves compiling
    them: ~0.7 ms).  names: the canonical regex's figures, checked when it is compiled."""
    got: list[Callable] = []

    def fullmatch(text: str):
        if not got:
            compiled = re.compile(pattern)
            if names is not None:
                # parse() reads m.groups() by position: the prefix's 7, then the figures in
                # order (the general regex has the same groups: _canonical narrows them, it
                # does not move them)
                assert list(compiled.groupindex) == ["name", "pid", "mo", "d", "h", "mi", "s", *names]
                assert compiled.groups == 7 + len(names)
            got.append(compiled.fullmatch)
        return got[0](text)
    return fullmatch


def _fast_stats() -> list:
    """(fullmatch, names, canonical fullmatch, JSON template) per stats wording, in the order
    tried.  Only the first (the everyday shape) is made at once, its two regexes compiled when a
    line first needs them (_compiled_on_use: not at all while the native reader takes its lines);
    a later one is made, and replaces its stand-in in this list, the first time a line gets that
    far (a short read, a re-ingest's few hundred lines, may never need them; compiling them all
    is most of a re-ingest's parse)."""
    global _FAST
    if _FAST is None:
        from bootlog import patterns

        bodies = patterns.STATS_FAST_BODIES
        fast: list = [_fast_entry(*bodies[0])]
        for i in range(1, len(bodies)):
            fast.append(_stand_in(fast, i, *bodies[i]))
        _FAST = fast
    return _FAST


def _stand_in(fast: list, i: int, body: str, names: tuple[str, ...]) -> tuple:
    def real() -> tuple:
        entry = fast[i]
        if entry[0] is fullmatch:  # still the stand-in: compile now
            entry = fast[i] = _fast_entry(body, names)
        return entry

    def fullmatch(text: str):
        return real()[0](text)

    def strict(text: str):
        return real()[2](text)

    # (the template is made without compiling anything)
    return (fullmatch, names, strict, _json_template(body, names))


# A figure printed in repr()'s own spelling of its float: json.dumps writes float(x) as x itself
# (a decimal point) or as x + ".0" (digits only).  Both forms keep to 15 significant digits and to
# repr's fixed notation (1e-4 <= |v| < 1e16), so float(x) reads back to x's digits exactly.
_F_CANON = r"-?(?:0|[1-9][0-9]{0,11})\.(?:0|[0-9]{0,2}[1-9])"
_I_CANON = r"(?:0|[1-9][0-9]{0,11})"


def _kinds(body: str, names: tuple[str, ...]) -> list[str]:
    """"I" for a digits-only figure (reqs counts print no decimal point), else "F"."""
    out = []
    for name in names:
        at = body.find(f"(?P<{name}>")
        out.append("I" if at >= 0 and body.startswith(r"\d+)", at + len(name) + 5) else "F")
    return out


def _canonical(body: str, names: tuple[str, ...]) -> str:
    """body with every figure narrowed to its canonical spelling (_F_CANON, _I_CANON): a line
    it matches has figures that `template % figs` writes exactly as json.dumps would."""
    from bootlog.patterns import _FNUM

    for name, kind in zip(names, _kinds(body, names)):
        old = f"(?P<{name}>" + (r"\d+)" if kind == "I" else _FNUM + ")")
        assert body.count(old) == 1, (name, body)
        body = body.replace(old, f"(?P<{name}>" + (_I_CANON if kind == "I" else _F_CANON) + ")")
    return body


def _json_template(body: str, names: tuple[str, ...]) -> str:
    """`template % figs` is json.dumps(dict(zip(names, map(float, figs)))), byte for byte, for
    figures in their canonical spelling (_canonical)."""
    return "{" + ", ".join(dumps(n).replace("%", "%%") + (": %s.0" if k == "I" else ": %s")
                           for n, k in zip(names, _kinds(body, names))) + "}"


def _api_tag(name: str) -> bool:
    """The tag names whose line vline calls role "api" and boots.api_pid() reads."""
    return name.lower().startswith("apiserver") or name == "MainProcess"


def all_literals() -> tuple[str, ...]:
    from bootlog import patterns

    return tuple(dict.fromkeys((*BOOT_LITERALS, *patterns.LITERALS)))


_TEST: Callable[[str], bool] | None = None


def _stats_lines(texts: list[str], i: int, strict: Callable, template: str, own_time: bool) -> tuple:
    """(j, name, pid, times, rows): texts[i:j] are everyday stats lines in their canonical
    spelling (`strict`) with the tag (name, pid) of the first (None, None: no tag); times their
    "MM-DDTHH:MM:SS", rows their values JSON (`template`).  own_time: their own time is the
    run's clock (then a line must be ASCII, its hour below 24).  _native_stats() gives the
    same, faster, for the lines it takes (it ends a run sooner on others)."""
    n = len(texts) if i >= 0 else i  # (no line taken from a negative i)
    j = i
    name = pid = None
    times: list[str] = []
    rows: list[str] = []
    while j < n:
        text = texts[j]
        m = strict(text)
        if m is None or "\x1b" in text:
            break
        g = m.groups()  # name, pid, mo, d, h, mi, s, then the figures
        if own_time and (g[4] >= "24" or not text.isascii()):
            break
        if j == i:
            name, pid = g[0], g[1]
        elif g[0] != name or g[1] != pid:
            break
        times.append(f"{g[2]}-{g[3]}T{g[4]}:{g[5]}:{g[6]}")
        rows.append(template % g[7:])
        j += 1
    return j, name, pid, times, rows


_NATIVE: list = []  # [stats_lines or None], worked out once


def _native_stats() -> Callable | None:
    """bootlog._linecut.stats_run as _stats_lines for the everyday stats body (the first of
    patterns.STATS_FAST_BODIES), or None: not built, BOOTLOG_NO_NATIVE set, _FAST_PREFIX no
    longer the prefix it reads, or a body it cannot read (literal text and figures in turn,
    after an optional "Engine ddd: ")."""
    if _NATIVE:
        return _NATIVE[0]
    got = None
    try:
        from bootlog._linecut import STATS_PREFIX, stats_run
    except ImportError:
        STATS_PREFIX = stats_run = None
    import os

    if stats_run is not None and STATS_PREFIX == _FAST_PREFIX and not os.environ.get("BOOTLOG_NO_NATIVE"):
        from bootlog import patterns

        got = _native_skeleton(stats_run, *patterns.STATS_FAST_BODIES[0])
    _NATIVE.append(got)
    return got


_LEAD = r"(?:Engine \d{3}: )?"


def _native_skeleton(stats_run: Callable, body: str, names: tuple[str, ...]) -> Callable | None:
    """stats_run set up for `body`: its literal texts between the figures, the figures' kinds
    and the JSON template's pieces; None if the body is not of that shape."""
    from bootlog.patterns import _FNUM

    lead = body.startswith(_LEAD)
    rest = body[len(_LEAD):] if lead else body
    kinds = _kinds(body, names)
    lits: list[str] = []
    for name, kind in zip(names, kinds):
        group = f"(?P<{name}>" + (r"\d+)" if kind == "I" else _FNUM + ")")  # (as _canonical finds it)
        at = rest.find(group)
        if at < 0:
            return None
        lits.append(rest[:at])
        rest = rest[at + len(group):]
    lits.append(rest)
    # plain text only, and after a figure never a digit (the figure's digits end where they stop)
    if any(any(c in ".^$*+?{}[]\\|()" for c in lit) or not lit.isascii() for lit in lits) or \
            any(not lit or lit[0].isdigit() for lit in lits[1:]):
        return None
    template = _json_template(body, names)
    pieces = template.split("%s")
    if len(pieces) != len(names) + 1 or not template.isascii():
        return None
    pieces = [x.replace("%%", "%") for x in pieces]
    args = (tuple(lits), "".join(kinds), tuple(pieces), lead)

    def stats_lines(texts: list[str], i: int, strict: Callable, template: str, own_time: bool) -> tuple:
        if texts.__class__ is not list:
            return _stats_lines(texts, i, strict, template, own_time)
        return stats_run(texts, i, *args, own_time)
    return stats_lines


def _stats_run(splitter: BootSplitter, nums, texts: list[str], i: int, cur_year: int, last_month: int,
               entry: tuple, stamps: list[str] | None = None) -> tuple[int, int]:
    """Lines texts[i:] added to their boot at once for as long as they are everyday stats lines
    (`entry`: the first of _fast_stats()) in their canonical spelling, with one tag, a time
    and a boot that takes them all (BootSplitter.run_target, run_takes).  The time: the
    envelope's (`stamps`: podman's, one per line, a Record's ts), else vLLM's own in this year
    (no New Year inside).  Returns (j, last_month): lines i..j-1 were added, j == i if none.
    Each gets exactly the Sample the per-line path below makes of it, and the boot the same
    state."""
    target = splitter.run_target(nums[i])
    if target is None or (stamps is None and not 1 <= cur_year <= 9999):
        return i, last_month
    _, _, strict, template = entry
    lines = _native_stats() or _stats_lines
    end, name, pid, times, rows = lines(texts, i, strict, template, stamps is None)
    if end == i or (name is not None and not (_api_tag(name) and splitter.run_takes(target, (name, int(pid))))):
        return i, last_month
    ypre = f"{cur_year:04d}-"
    fromiso = datetime.fromisoformat
    stamp = podman_stamp
    out: list[Sample] = []
    add = out.append
    j = i
    month = last_month
    for when, row in zip(times, rows):
        if stamps is None:
            iso = ypre + when
            try:
                ts = fromiso(iso)
            except ValueError:
                break
            mo = ts.month
            if month and mo < month and month - mo >= 6:
                break  # New Year: the per-line path moves the year on
        else:
            got = stamp(stamps[j])
            if got is not None:
                ts, iso = got
            else:
                ts = parse_ts(stamps[j])
                # (parse_ts gives a fixed offset, whose isoformat() the per-line path writes too;
                # any other time goes that way, as it would there)
                if ts is None or ts.tzinfo.__class__ is not timezone:
                    break
                iso = ts.isoformat()
            mo = month  # (an envelope time leaves vLLM's year rule alone)
        month = mo
        add(Sample(nums[j], ts, None, (iso, row)))
        j += 1
    if out:
        target.add_samples(out, out[0].ts, out[-1].ts)
    return j, month


def has_literal(text: str) -> bool:
    """True when the line holds any literal the parser or the catalogue reads."""
    global _TEST
    if _TEST is None:
        from bootlog.scan import literal_test

        _TEST = literal_test(all_literals())
    return _TEST(text)


def parse(records: Iterable[Record], *, year: int | None = None,
          total_lines: int | Callable[[], int | None] | None = None,
          continuing: str | None = None, fast_stats: bool = True,
          splitter: BootSplitter | None = None,
          tick: tuple[int, Callable[[], None]] | None = None) -> list[Boot]:
    """Split a record stream into boots with their figures, config, events and samples.

    year: the year of vLLM's own MM-DD timestamps (records without an envelope time); None means
    the current year.  A log running over New Year bumps the year when the month goes backwards.
    total_lines: physical line count of the source, so the last boot ends at the file's end (a
    call: asked once the records are read; a scanner knows the count only then); None: the last
    record's line.
    splitter: a BootSplitter(continuing) made by the caller (continuing is then the splitter's).
    continuing: status of the stored boot that a resumed read continues; the lines before the
    first start marker then form one Boot with continued=True (merged into it by the store).
    fast_stats: read the usual periodic stats lines the fast way (module doc); same boots.
    tick: (n, fn): fn() is called every n records (ingest spills finished samples meanwhile); a
    run of stats lines taken at once (_stats_run) counts as its lines, with one call at its end.
    """
    cur_year = year if year is not None else datetime.now().year
    last_month = 0
    remaining = 0  # records still owed as traceback context (the same rule as scan.select)
    # a caller may hand in the splitter to watch its boots while they grow (ingest spills their
    # finished samples to disk); by default parse owns it
    splitter = splitter if splitter is not None else BootSplitter(continuing)
    last_lineno = 0
    fast = _fast_stats() if fast_stats else ()
    native = _native_stats() if fast else None
    stats_lit = "Avg prompt throughput: "
    feed_sample = splitter.feed_sample
    api_names: dict[str, bool] = {}
    api_of: dict[str, tuple[str, int]] = {}
    every, on_tick = tick if tick is not None else (0, None)
    left = every if every > 0 else -1  # (counts down past 0 when there is no tick)
    fromiso = datetime.fromisoformat
    ypre_year, ypre = None, None  # "YYYY-" of cur_year for fromisoformat, None: datetime() instead

    def flat() -> Iterator[Record]:
        """The records, with the runs of everyday stats lines in a reader's LineBatch added here
        at once (_stats_run); the rest of a batch as Records, to the loop below."""
        nonlocal last_month, remaining, left, last_lineno
        clock = stamp_clock()
        for item in records:
            if item.__class__ is not LineBatch:
                yield item
                continue
            nums, texts, stamps = item.nums, item.texts, item.stamps  # type: ignore[attr-defined]
            i, n = 0, len(texts)
            while i < n:
                if fast and stats_lit in texts[i]:
                    j, last_month = _stats_run(splitter, nums, texts, i, cur_year, last_month, fast[0], stamps)
                    if j > i:
                        last_lineno = nums[j - 1]
                        remaining = remaining - (j - i) if remaining > j - i else 0
                        if every > 0:
                            left -= j - i
                            if left <= 0:
                                left = every
                                on_tick()
                        i = j
                        if i == n:
                            break
                yield Record(nums[i], texts[i]) if stamps is None else Record(nums[i], texts[i], clock(stamps[i]))
                i += 1

    for rec in flat():
        left -= 1
        if not left:
            left = every
            on_tick()
        last_lineno = rec.lineno
        text = rec.text
        if fast and stats_lit in text and "\x1b" not in text:
            done = False
            # the everyday wording through the native reader first, as in a batch: a line it
            # takes is one the canonical regex takes with the same groups, and its row is the
            # template's; any other line the regexes read
            one = native([text], 0, None, None, rec.ts is None) if native is not None else None
            if one is not None and one[0] != 1:
                one = None
            for fullmatch, names, strict, template in fast:
                row = None
                if one is not None:  # (the first entry: the everyday wording)
                    when = one[3][0]  # "MM-DDTHH:MM:SS"
                    g = (one[1], one[2], when[0:2], when[3:5], when[6:8], when[9:11], when[12:14])
                    exact, row, one = True, one[4][0], None
                else:
                    m = strict(text)  # figures in canonical spelling: the row's JSON is made from them
                    exact = m is not None
                    if not exact:
                        m = fullmatch(text)
                        if m is None:
                            continue
                    g = m.groups()  # name, pid, mo, d, h, mi, s, then the figures in `names` order
                name = g[0]
                api = None
                if name is not None:
                    ok = api_names.get(name)
                    if ok is None:
                        ok = api_names[name] = _api_tag(name)
                    if not ok:
                        break
                    api = api_of.get(g[1])  # (name, pid), made once per process
                    if api is None or api[0] != name:
                        api = api_of[g[1]] = (name, int(g[1]))
                ts = rec.ts
                iso = None  # the ts column's text, when known here
                year2, month2 = cur_year, last_month
                if ts is None:  # vline's MM-DD time and the year rule below, on the same figures
                    if cur_year != ypre_year:
                        ypre_year = cur_year
                        ypre = f"{cur_year:04d}-" if 1 <= cur_year <= 9999 else None
                    # fromisoformat of ASCII "YYYY-MM-DD HH:MM:SS" is datetime(YYYY, MM, ...), the
                    # same ValueErrors included, at a third of the cost; not for hour 24 (newer
                    # Pythons read it as the next day) nor for non-ASCII digits (\d takes them)
                    if ypre is not None and g[4] < "24" and text.isascii():
                        iso = f"{ypre}{g[2]}-{g[3]}T{g[4]}:{g[5]}:{g[6]}"  # = ts.isoformat()
                        try:
                            ts = fromiso(iso)
                        except ValueError:
                            ts = iso = None
                    else:
                        try:
                            ts = datetime(cur_year, *map(int, g[2:7]))
                        except ValueError:
                            ts = None
                    if ts is not None:
                        if month2 and ts.month < month2 and month2 - ts.month >= 6:
                            year2 += 1
                            iso = None
                            try:
                                ts = ts.replace(year=year2)
                            except ValueError:
                                ts = None
                        if ts is not None:
                            month2 = ts.month
                elif ts.tzinfo is None or ts.tzinfo.__class__ is timezone:
                    iso = ts.isoformat()  # (fromisoformat gives this very ts back)
                if row is not None and not (iso is not None or ts is None):
                    g = strict(text).groups()  # (a time whose zone is not a fixed offset: its figures)
                    row = None
                figs = g[7:]
                if exact and (iso is not None or ts is None) and None not in figs:
                    done = feed_sample(last_lineno, text, ts, None, api,
                                       (iso, row if row is not None else template % figs))
                elif None in figs:
                    done = feed_sample(last_lineno, text, ts,
                                       {k: float(x) for k, x in zip(names, figs) if x is not None}, api)
                else:
                    done = feed_sample(last_lineno, text, ts, dict(zip(names, map(float, figs))), api)
                break
            if done:
                cur_year, last_month = year2, month2
                if remaining > 0:
                    remaining -= 1  # (it holds a literal, and no traceback start)
                continue
        literal = has_literal(text)
        keep = literal or remaining > 0
        if remaining > 0:
            remaining -= 1
        if _TB in text and TB_CONTEXT > remaining:
            remaining = TB_CONTEXT
        if not keep:
            continue
        v = parse_line(rec, cur_year)
        if rec.ts is None and v.ts is not None:
            if last_month and v.ts.month < last_month and last_month - v.ts.month >= 6:
                cur_year += 1
                try:
                    v.ts = v.ts.replace(year=cur_year)
                except ValueError:
                    v.ts = None
            if v.ts is not None:
                last_month = v.ts.month
        splitter.feed(v, literal)
        if text[:1] == "{":  # a JSON record's traceback is a field of the same line
            for x in json_exc_lines(v):
                splitter.feed(x, has_literal(x.text))
    total = total_lines() if callable(total_lines) else total_lines
    return splitter.finish(total if total is not None else last_lineno)
