"""lazyre.lazy: a module-level regex compiled on first use, then called as the compiled one."""
from __future__ import annotations

import copy
import re

from bootlog.lazyre import Lazy, lazy


def test_compiled_once_on_first_use_with_its_flags():
    made = []

    def compile(pattern, flags):
        made.append((pattern, flags))
        return re.compile(pattern, flags)

    rx = Lazy(r"a(b+)", re.I, compile)
    assert (rx.pattern, rx.flags) == (r"a(b+)", re.I) and made == []  # not compiled yet
    assert rx.search("xABB").group(1) == "BB"
    assert rx.fullmatch("abb") and not rx.match("ba") and rx.sub("-", "abab") == "--"
    assert [m.group(1) for m in rx.finditer("ab abbb")] == ["b", "bbb"] and rx.groups == 1
    assert made == [(r"a(b+)", re.I)]  # once, whatever was called after


def test_the_same_answers_as_re_compile():
    for pattern, text in [(r"\d+", "a12b345"), (r"^x$", "x\ny"), (r"(?P<k>\w+)=(?P<v>\w*)", "a=1 b=")]:
        ours, theirs = lazy(pattern, re.M), re.compile(pattern, re.M)
        assert ours.findall(text) == theirs.findall(text)
        assert ours.split(text) == theirs.split(text)
        assert ours.groupindex == theirs.groupindex


def test_copy_and_probing_do_not_compile_or_recurse():
    rx = lazy(r"[")  # would not compile
    assert copy.copy(rx).pattern == "["
    assert not hasattr(rx, "__wrapped__") and not hasattr(rx, "_private")
