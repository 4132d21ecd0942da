"""Module-level regexes compiled on first use.

Compiling the ~30 regexes of the line-parsing modules took a tenth of a re-ingest's run (a
resumed read of a few hundred lines touches only a few of them).  lazy(pattern, flags) stands in
for re.compile(pattern, flags): the first call of any method compiles it and keeps the compiled
pattern's methods as its own attributes, so every later call costs what a call on the compiled
pattern costs (another attribute is looked up on a compiled pattern each time: re's cache
keeps that cheap).  `.pattern` and `.flags` (the flags given) are there without compiling.  Not
for re.sub(p, ...) and the like: those take a real Pattern (call p.sub(...) instead).
patterns.py makes its `regex` module patterns the same way (that module's import is put off too).
"""
from __future__ import annotations

import re

TYPE_CHECKING = False
if TYPE_CHECKING:  # (typing for the annotations only: importing it costs ~5 ms of every start)
    from typing import Any, Callable

_METHODS = ("match", "fullmatch", "search", "finditer", "findall", "sub", "subn", "split",
            "groups", "groupindex")


class Lazy:
    """compile(pattern, flags) on first use (re.compile, or e.g. the `regex` module's)."""

    def __init__(self, pattern: str, flags: int = 0, compile: Callable[[str, int], Any] | None = None) -> None:
        self.pattern, self.flags, self._compile = pattern, flags, compile

    def __getattr__(self, name: str) -> Any:  # (only for attributes not set yet)
        if name.startswith("_"):
            raise AttributeError(name)  # (copy, pickle and friends probing: not a regex method)
        compiled = (self._compile or re.compile)(self.pattern, self.flags)
        for attr in _METHODS:
            setattr(self, attr, getattr(compiled, attr))
        return getattr(compiled, name)

    def __repr__(self) -> str:
        return f"lazy({self.pattern!r})"


def lazy(pattern: str, flags: int = 0) -> Lazy:
    return Lazy(pattern, flags)
