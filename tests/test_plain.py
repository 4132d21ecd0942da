"""plain.record makes what @dataclass makes (the classes bootlog's stages share), without
importing dataclasses, and a plain re-ingest imports neither dataclasses nor inspect."""
from __future__ import annotations

import dataclasses
import pickle
import subprocess
import sys

import pytest

from bootlog.plain import record, replace, spec


def _pair(**opts):
    """The same class body made by @dataclass and by plain.record (module globals: picklable)."""
    tag = "".join(sorted(opts))

    def body(name):
        class Thing:
            a: int
            b: str = "x"
            c: list = None  # replaced below
            d: object = None
        Thing.__name__ = Thing.__qualname__ = name + tag
        return Thing

    ours = body("Ours")
    ours.c = spec(factory=list)
    ours.d = spec(None, compare=False, repr=False)
    ours = record(**opts)(ours)
    theirs = body("Theirs")
    theirs.c = dataclasses.field(default_factory=list)
    theirs.d = dataclasses.field(default=None, compare=False, repr=False)
    theirs = dataclasses.dataclass(**opts)(theirs)
    for cls in (ours, theirs):
        globals()[cls.__qualname__] = cls
    return ours, theirs


@pytest.mark.parametrize("opts", [{}, {"slots": True}, {"frozen": True}, {"frozen": True, "slots": True}])
def test_record_behaves_as_dataclass(opts):
    ours, theirs = _pair(**opts)
    for cls in (ours, theirs):
        x = cls(1)
        assert (x.a, x.b, x.c, x.d) == (1, "x", [], None)
        assert cls(1).c is not cls(1).c  # a list per instance
        assert cls(1, "y", [2], d=5) == cls(1, "y", [2], d=6)  # d takes no part in ==
        assert cls(1) != cls(2) and cls(1) != (1, "x", [], None)
        assert pickle.loads(pickle.dumps(cls(3, "z", [1], 4))) == cls(3, "z", [1], 4)
        assert hasattr(cls(1), "__dict__") != bool(opts.get("slots"))
        if opts.get("frozen"):
            assert hash(cls(1, "y", ())) == hash(cls(1, "y", ()))
            with pytest.raises(AttributeError):
                cls(1).a = 2
            with pytest.raises(AttributeError):
                del cls(1).a
        else:
            with pytest.raises(TypeError):
                hash(cls(1))
            y = cls(1)
            y.a = 2
            assert y.a == 2
        with pytest.raises(TypeError):
            cls()
    assert repr(ours(1, "q", [2], 3)) == repr(theirs(1, "q", [2], 3)).replace(theirs.__qualname__, ours.__qualname__)
    assert ours._fields == tuple(f.name for f in dataclasses.fields(theirs))
    x = ours(1, "y", [2])
    assert replace(x, b="z") == ours(1, "z", [2]) and x.b == "y"
    with pytest.raises(TypeError):
        replace(x, bb="z")  # (a misspelt field, as dataclasses.replace)
    with pytest.raises(TypeError):
        dataclasses.replace(theirs(1), bb="z")


def test_a_field_without_default_after_one_with_is_refused():
    class Bad:
        a: int = 1
        b: int
    with pytest.raises(TypeError):
        record(Bad)


def test_a_plain_ingest_imports_no_dataclasses():
    code = ("import sys, bootlog.entry, bootlog.cli_ingest, bootlog.ingest, bootlog.parse, bootlog.boots, "
            "bootlog.scan, bootlog.store.lite, bootlog.sources, bootlog.patterns, bootlog.reader; "
            "print(sorted({'dataclasses', 'inspect', 'click', 'ast'} & set(sys.modules)))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


_START = """
import sys, site
sys.path[:0] = [{root!r}]
sys.path += site.getsitepackages()  # (not their .pth files: some import typing at every start)
import atexit
atexit.register(lambda: print(sorted({{'typing', 'dataclasses', 'inspect', 'click', 'sqlalchemy',
                                      'hyperscan', 'numpy'}} & set(sys.modules)),
                              'hyperscan._hs_ext' in sys.modules))
sys.argv = ['bootlog', '--db', {db!r}, 'ingest', {log!r}]
from bootlog.entry import main
main()
"""


def test_an_ingest_and_a_re_ingest_import_no_typing(tmp_path):
    # typing (~5 ms), and hyperscan's package, which imports it: its compiled module is loaded
    # alone (scan._load_hyperscan). Run without site's .pth files, which may import it themselves.
    from pathlib import Path

    from bootlog import scan

    data = (Path(__file__).parent.parent / "fixtures/logs/seed/07-5x262144-runtime-oom.log").read_bytes()
    cut = data.index(b"\n", data.index(b"Application startup complete")) + 1
    log, db = tmp_path / "g.log", tmp_path / "g.db"
    log.write_bytes(data[:cut])
    code = _START.format(root=str(Path(__file__).parent.parent), db=str(db), log=str(log))

    def run() -> list[str]:
        out = subprocess.run([sys.executable, "-S", "-c", code], capture_output=True, text=True, check=True).stdout
        return out.rstrip().splitlines()

    hs = scan._hs is not None  # (hyperscan is installed here: the child loads it the same way)
    first = run()
    assert "[new]" in first[0] and first[-1] == f"[] {hs}"
    with open(log, "ab") as f:
        f.write(data[cut:])
    again = run()
    assert any("extended with lines" in x for x in again) and again[-1] == f"[] {hs}"
