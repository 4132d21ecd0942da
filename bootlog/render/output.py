"""Files bootlog writes where the user says (`export FILE`, `report -o`, `plot -o`, `hook
--openmetrics`): checked before anything is read or waited for, then written whole and renamed
into place, so a reader (a browser, node_exporter's textfile collector) never sees half a file.

What an output path may not be, whatever links lead there:
* the database itself or its `-wal`, `-shm` or `-journal` file (a rename over it destroys it;
  compared by resolved path and by inode, so a hard link is caught too);
* a symbolic link owned by another user (a link planted in a shared directory such as the
  collector's), a link to nothing, or a link to a regular file the user does not own: bootlog
  writes through a link only to a regular file the user owns (a device or FIFO behind a link
  the user or root owns, `/dev/stdout`, is written to as it is).
A regular file that is replaced keeps its permission bits (a read-only 0444 stays 0444).
"""

from __future__ import annotations

import errno
import os
import stat
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Iterator

from bootlog.errors import InputError

DB_SUFFIXES = ("", "-wal", "-shm", "-journal")


def database_files(store) -> list[str]:
    """The files of a SQLite store (the database and its journal files); [] for PostgreSQL."""
    from bootlog.store.db import sqlite_path

    path = sqlite_path(getattr(store, "url", "") or "") if store is not None else None
    if path is None:
        return []
    return [os.path.realpath(path) + s for s in DB_SUFFIXES]


def _is_database(path: Path, store) -> bool:
    files = database_files(store)
    if not files:
        return False
    real = os.path.realpath(path)
    if real in files:
        return True
    try:
        st = os.stat(path)
    except OSError:
        return False
    for f in files:
        try:
            other = os.stat(f)
        except OSError:
            continue
        if (st.st_dev, st.st_ino) == (other.st_dev, other.st_ino):
            return True
    return False


def _through_link(path: Path) -> None:
    """A symbolic link is followed only when the user or root owns it, and then only to a regular
    file the user owns, or to a device or FIFO (module docstring)."""
    if not path.is_symlink():
        return
    me = os.geteuid()
    if os.lstat(path).st_uid not in (me, 0):
        raise InputError(
            f"{path} is a symbolic link owned by another user: bootlog writes through a link only "
            "to a regular file you own; give the target's own path"
        )
    try:
        st = os.stat(path)
    except OSError:
        raise InputError(f"{path} is a symbolic link to nothing: give the file's own path") from None
    if stat.S_ISREG(st.st_mode) and st.st_uid != me:
        raise InputError(
            f"{path} is a symbolic link to a file owned by another user: bootlog writes through "
            "a link only to a regular file you own; give the target's own path"
        )


def check_target(path: str | os.PathLike, store=None) -> Path:
    """An output file name that can be written: not a directory, in a directory that exists,
    not the database of `store` (nor its journal files), no link bootlog may not follow."""
    path = Path(path)
    if path.is_dir():
        raise InputError(f"{path} is a directory; give a file name")
    if not path.parent.exists():
        raise InputError(f"directory {path.parent} does not exist")
    _through_link(path)
    if _is_database(path, store):
        raise InputError(f"{path} is the database bootlog reads (or its -wal/-shm file): give another file name")
    return path


def _umask_mode() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return 0o666 & ~mask


@contextmanager
def writing(path: str | os.PathLike, *, binary: bool = False, new_mode: int | None = None) -> Iterator[IO]:
    """A file object whose content replaces `path` when the block ends without an error: a
    regular file (or a new one) is written to a temp file in the same directory (a rename is
    atomic only within one file system), fsynced, given the old file's permission bits (a new
    one `new_mode`, else what the umask allows), then renamed over it, through a link to the
    file it names (the link stays); the directory is fsynced so the rename survives a crash.
    The temp name ends in .tmp, which node_exporter's textfile collector (*.prom only) never
    reads.  Anything else that exists -- /dev/stdout, a FIFO, /dev/full -- is written to as it is:
    a rename would put a file where the device was.  Call check_target() first."""
    target = os.path.realpath(path) if os.path.islink(path) else os.path.abspath(os.fspath(path))
    try:
        st = os.stat(target)
    except FileNotFoundError:
        st = None
    if st is not None and not stat.S_ISREG(st.st_mode):
        with _open_special(target, binary) as f:
            yield f
        return
    directory = os.path.dirname(target)
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=f".{os.path.basename(target)}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") if binary else os.fdopen(fd, "w", encoding="utf-8", newline="") as f:
            yield f
            f.flush()
            os.fsync(f.fileno())
        mode = stat.S_IMODE(st.st_mode) if st is not None else (new_mode if new_mode is not None else _umask_mode())
        os.chmod(tmp, mode)  # (mkstemp makes 0600)
        os.replace(tmp, target)
    except BaseException:
        _remove(tmp)
        raise
    _fsync_dir(directory)


def _open_special(target: str, binary: bool) -> IO:
    """A device or FIFO opened for writing; a FIFO nobody reads is an error, not a hang."""
    flags = os.O_WRONLY | getattr(os, "O_NONBLOCK", 0)
    try:
        fd = os.open(target, flags)
    except OSError as e:
        if e.errno == errno.ENXIO:
            raise InputError(f"{target} is a FIFO that nobody reads: start its reader first") from None
        raise
    os.set_blocking(fd, True)
    return os.fdopen(fd, "wb") if binary else os.fdopen(fd, "w", encoding="utf-8")


def write_whole(path: str | os.PathLike, data: str | bytes, *, new_mode: int | None = None) -> None:
    """`data` put at `path` whole (writing())."""
    with writing(path, binary=isinstance(data, bytes), new_mode=new_mode) as f:
        f.write(data)


def _remove(path: str) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


def _fsync_dir(directory: str) -> None:
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return  # (a platform without directory fds: the rename is still atomic)
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
