"""blockread.blocks: a file's bytes as views of reused buffers, a block at a time, ending at newlines."""
from __future__ import annotations

import os
import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bootlog import blockread
from bootlog.errors import InputError


@settings(max_examples=int(os.environ.get("BOOTLOG_HYPOTHESIS_EXAMPLES", "100")) * 2, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(lines=st.lists(st.sampled_from([0, 1, 7, 100, 3000, 9000, 40000]), max_size=30),
       final_nl=st.booleans(), block=st.sampled_from([1, 64, 3000, 8192]),
       cut=st.tuples(st.floats(0, 1), st.floats(0, 1)))
def test_views_are_the_bytes_in_blocks_that_end_at_newlines(tmp_path, lines, final_nl, block, cut):
    data = b"\n".join(b"x" * n for n in lines) + (b"\n" if final_nl and lines else b"")
    path = tmp_path / "log"
    path.write_bytes(data)
    start, stop = sorted(int(c * len(data)) for c in cut)
    views = blockread.blocks(str(path), start, stop, block)
    assert views is not None
    got = [bytes(v) for v in views]  # (each read before the next: a view lasts one block more)
    assert b"".join(got) == data[start:stop]
    assert all(got)
    for v in got[:-1]:  # each ends at a newline: no line is cut in two
        assert v.endswith(b"\n")
        assert len(v) <= block or v.count(b"\n") == 1  # (longer only for one long line)


def test_a_file_that_cannot_be_opened_is_read_another_way(tmp_path):
    assert blockread.blocks(str(tmp_path / "missing"), 0, 10, 4096) is None
    empty = tmp_path / "empty"
    empty.write_bytes(b"")
    assert list(blockread.blocks(str(empty), 0, 0, 4096)) == []
    assert list(blockread.blocks(str(empty), 0, None, 4096)) == []


def _open_on(path) -> int:
    """The descriptors of this process open on `path`."""
    n = 0
    for fd in os.listdir("/proc/self/fd"):
        try:
            n += os.readlink(f"/proc/self/fd/{fd}") == str(path)
        except OSError:
            pass
    return n


def test_views_never_asked_for_leave_no_descriptor_open(tmp_path):
    import gc

    if not os.path.isdir("/proc/self/fd"):
        pytest.skip("no /proc/self/fd here")
    path = tmp_path / "log"
    path.write_bytes(b"a\nb\n" * 1000)
    views = [blockread.blocks(str(path), 0, None, 64) for _ in range(20)]
    assert all(v is not None for v in views) and _open_on(path) == 20
    del views
    gc.collect()
    assert _open_on(path) == 0


def test_without_a_stop_the_views_go_to_the_end_as_read_goes_on(tmp_path):
    """stop None: as read() would go on, the bytes written before they are read are read."""
    path = tmp_path / "log"
    first = b"".join(b"line %05d\n" % i for i in range(2000))
    path.write_bytes(first)
    views = blockread.blocks(str(path), 0, None, 1000)
    got = [bytes(next(views))]
    with open(path, "ab") as f:  # (grows while it is read)
        f.write(b"more\n" * 10)
    got += [bytes(v) for v in views]
    out = b"".join(got)
    assert out.startswith(first) and out in (first, first + b"more\n" * 10)


@pytest.mark.parametrize("bad", [-1, 1 << 62])
def test_views_past_any_file_are_none_or_empty(tmp_path, bad):
    path = tmp_path / "log"
    path.write_bytes(b"a\nb\n")
    views = blockread.blocks(str(path), max(bad, 0), max(bad, 0), 4096)
    assert views is None or list(views) == []
    assert blockread.blocks(str(path), 3, 2, 4096) is None


def test_a_view_kept_past_the_next_block_is_released_not_overwritten(tmp_path):
    """Two buffers take turns: a view is good while the next block is read (the scanner looks
    one ahead), and is released when its buffer takes the block after that, so a consumer that
    kept it fails loudly instead of reading another block's bytes."""
    path = tmp_path / "log"
    path.write_bytes(b"".join(b"line %05d\n" % i for i in range(100)))
    views = blockread.blocks(str(path), 0, None, 110)
    first = next(views)
    want = bytes(first)
    second = next(views)
    assert bytes(first) == want and bytes(second).startswith(b"line 00010")
    next(views)
    with pytest.raises(ValueError, match="released"):
        bytes(first)
    assert bytes(second).startswith(b"line 00010")


def test_a_file_that_ends_before_the_stop_is_an_error(tmp_path):
    """Truncated or rotated in place while it is read: an error, never a shorter log."""
    path = tmp_path / "log"
    path.write_bytes(b"a line\n" * 1000)
    views = blockread.blocks(str(path), 0, 8000, 1000)
    got = bytes(next(views))
    os.truncate(path, 3000)
    with pytest.raises(InputError, match="^" + re.escape(f"{path}: the log got shorter while it was read")):
        for v in views:
            got += bytes(v)
    assert got == b"a line\n" * (len(got) // 7) and len(got) <= 3000


def test_the_native_module_is_built_where_ci_has_a_compiler():
    """The C module's paths are tested only where it was built: CI (which has a C compiler)
    must build it, or those tests would skip there unnoticed."""
    import shutil

    if not os.environ.get("CI") or not (shutil.which("cc") or shutil.which("gcc")):
        pytest.skip("not CI, or no C compiler here")
    from bootlog import scan

    assert scan._native_cut is not None, "bootlog._linecut was not built: `pip install -e .` builds it in the checkout"


def test_a_read_error_is_one_line_naming_the_file():
    """An I/O error mid-read (a failing disk, a vanished network mount) is the InputError of
    every other read of a file, not a traceback."""
    import errno

    class Failing:
        def readinto(self, view):
            raise OSError(errno.EIO, "Input/output error")

    with pytest.raises(InputError, match="^" + re.escape("cannot read /var/log/x.log: Input/output error")):
        blockread._fill(Failing(), "/var/log/x.log", memoryview(bytearray(10)))
