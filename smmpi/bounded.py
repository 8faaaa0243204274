"""What smmpi reads and writes on a user's behalf, bounded: regular files, ASCII integers.

Every file smmpi reads for a user (the entry script, the source dir's files,
the config file, ``file://`` channels and code) is opened without blocking,
checked to be a regular file (not a FIFO, a device or a socket, which could
hang or never end) of at most a given size, and read with that cap. Every
file smmpi writes in a folder the user chose (``--log-dir``) is created
without following a link. Integers typed by users are ASCII digits only
(Python's ``int()`` also takes fullwidth and Arabic-Indic digits).
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import stat
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import BinaryIO

from smmpi.errors import BadInput

#: The config file (a few settings).
CONFIG_MAX_BYTES = 1024 * 1024
#: The code: the entry script, each file of the source dir, and all of them together,
#: which are packed into one archive in memory.
CODE_MAX_BYTES = 1024 * 1024 * 1024
#: One ``file://`` input channel, all its files together (copied to every emulated host).
CHANNEL_MAX_BYTES = 16 * 1024 * 1024 * 1024

_KINDS = {
    stat.S_IFIFO: "a FIFO",
    stat.S_IFCHR: "a character device",
    stat.S_IFBLK: "a block device",
    stat.S_IFSOCK: "a socket",
    stat.S_IFDIR: "a folder",
    stat.S_IFLNK: "a symbolic link",
}
_ASCII_INT_RE = re.compile(r"[+-]?[0-9]+")


class FileRefused(BadInput):
    """A file smmpi will not read or write: ``problem`` says why, in a few words."""

    def __init__(self, field: str, path: str | os.PathLike[str], problem: str) -> None:
        self.problem = problem
        super().__init__(field, os.fspath(path), f"a regular file smmpi can use ({problem})")


def kind(mode: int) -> str:
    """What a file of this ``st_mode`` is, in words."""
    return _KINDS.get(stat.S_IFMT(mode), "not a regular file")


def human(size: int) -> str:
    for unit, factor in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if size >= factor:
            return f"{size / factor:g} {unit}"
    return f"{size} bytes"


def check_regular(st: os.stat_result, field: str, path: str | os.PathLike[str], cap: int) -> None:
    """A regular file of at most ``cap`` bytes, or :class:`FileRefused`."""
    if not stat.S_ISREG(st.st_mode):
        raise FileRefused(field, path, f"this is {kind(st.st_mode)}")
    if st.st_size > cap:
        raise FileRefused(field, path, f"{human(st.st_size)}, over the {human(cap)} limit")


@contextlib.contextmanager
def open_regular(
    path: str | os.PathLike[str], field: str, cap: int, *, follow: bool = True
) -> Iterator[tuple[BinaryIO, os.stat_result]]:
    """A regular file open for reading, and its status; anything else is one line.

    The open never blocks (a FIFO would wait for a writer) and, unless
    ``follow``, never goes through a link in the last component.
    """
    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | (0 if follow else os.O_NOFOLLOW)
    try:
        fd = os.open(path, flags)
    except OSError as err:
        raise FileRefused(field, path, f"cannot be read: {err.strerror}") from None
    try:
        st = os.fstat(fd)
        check_regular(st, field, path, cap)
        os.set_blocking(fd, True)
        f = os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise
    with f:
        yield f, st


def read_regular(
    path: str | os.PathLike[str], field: str, cap: int, *, follow: bool = True
) -> bytes:
    """The bytes of a regular file of at most ``cap`` bytes (read with that cap)."""
    with open_regular(path, field, cap, follow=follow) as (f, _):
        try:
            data = f.read(cap + 1)
        except OSError as err:
            raise FileRefused(field, path, f"cannot be read: {err.strerror}") from None
    if len(data) > cap:
        raise FileRefused(field, path, f"grew over the {human(cap)} limit while read")
    return data


def copy_regular(
    src: str | os.PathLike[str], dest: Path, field: str, cap: int, *, follow: bool = True
) -> int:
    """Copy a regular file of at most ``cap`` bytes to a new file ``dest`` (mode and mtime
    kept, as ``shutil.copy2`` would); returns the bytes copied."""
    copied = 0
    with open_regular(src, field, cap, follow=follow) as (f, st), create(dest, field) as out:
        while chunk := f.read(1 << 20):
            copied += len(chunk)
            if copied > cap:
                raise FileRefused(field, src, f"grew over the {human(cap)} limit while read")
            out.write(chunk)
        os.fchmod(out.fileno(), stat.S_IMODE(st.st_mode))
    os.utime(dest, ns=(st.st_atime_ns, st.st_mtime_ns), follow_symlinks=False)
    return copied


def create(path: str | os.PathLike[str], field: str, mode: int = 0o600) -> BinaryIO:
    """Open ``path`` for writing without following a link: a new file, or an existing
    regular file with no other name (a hard link) emptied; anything else is one line."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
    try:
        fd = os.open(path, flags, mode)
    except OSError as err:
        what = "a link" if err.errno == errno.ELOOP else f"cannot be written: {err.strerror}"
        raise FileRefused(field, path, what) from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise FileRefused(field, path, f"this is {kind(st.st_mode)}")
        if st.st_nlink > 1:
            raise FileRefused(field, path, f"a file with {st.st_nlink} hard links")
        os.ftruncate(fd, 0)
        with contextlib.suppress(PermissionError):  # another user's file keeps its mode
            os.fchmod(fd, mode)  # an existing file gets the mode a new one would have
        os.set_blocking(fd, True)
        return os.fdopen(fd, "wb")
    except BaseException:
        os.close(fd)
        raise


#: Linux's longest path (PATH_MAX, less its NUL) and longest name in one (NAME_MAX), in bytes.
PATH_MAX_BYTES = 4095
NAME_MAX_BYTES = 255


def lookup(field: str, path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` exists. A path the system cannot look up is one line naming ``field``:
    one over Linux's limits (named, before any lookup), or any other error of the lookup."""
    text = os.fspath(path)
    raw = os.fsencode(text)
    if len(raw) > PATH_MAX_BYTES or max(map(len, raw.split(b"/"))) > NAME_MAX_BYTES:
        shown = text if len(text) <= 60 else f"{text[:40]}... ({len(text)} characters)"
        raise BadInput(
            field,
            shown,
            f"a path of at most {PATH_MAX_BYTES} bytes, each name in it at most "
            f"{NAME_MAX_BYTES} bytes (the system's limits)",
        )
    try:
        os.stat(text)
    except (FileNotFoundError, NotADirectoryError):
        return False
    except OSError as err:  # a link loop, a folder it may not search...
        raise BadInput(field, text, f"a path smmpi can look up ({err.strerror})") from None
    return True


def existing_problem(path: str | os.PathLike[str]) -> str | None:
    """Why smmpi would refuse to write ``path`` (a link, a FIFO, a hard link...), or None."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return None
    except OSError as err:
        return f"cannot be checked: {err.strerror}"
    if not stat.S_ISREG(st.st_mode):
        return f"this is {kind(st.st_mode)}"
    if st.st_nlink > 1:
        return f"a file with {st.st_nlink} hard links"
    return None


def ascii_int(text: str) -> int | None:
    """The integer ``text`` spells in ASCII digits (an optional sign, spaces around), else None.

    Python's ``int()`` also reads ``'１２'`` and ``'١٢'``, and ``'1_000'``: none is a number here.
    """
    stripped = text.strip(" \t")
    if not _ASCII_INT_RE.fullmatch(stripped):
        return None
    return int(stripped)


#: The kernel's own file systems: their files claim sizes they do not have, and hold this
#: machine's state (``/proc/self/environ`` is smmpi's own environment, credentials included).
KERNEL_ROOTS = ("/proc", "/sys", "/dev")


def kernel_root(path: str | os.PathLike[str]) -> str | None:
    """The kernel file system ``path`` (through any link) is part of, or None."""
    real = os.path.realpath(path)
    try:
        device: int | None = os.stat(real).st_dev
    except OSError:
        device = None
    for root in KERNEL_ROOTS:
        if real == root or real.startswith(root + "/") or device == _device(root):
            return root
    return None


def _device(path: str) -> int | None:
    try:
        return os.stat(path).st_dev
    except OSError:
        return None


def check_not_kernel(path: str | os.PathLike[str], field: str) -> None:
    """:class:`FileRefused` for a file or folder of :data:`KERNEL_ROOTS` (through a link too)."""
    root = kernel_root(path)
    if root is not None:
        raise FileRefused(field, path, f"it is in {root}, the kernel's files, not data")


def regular_tree(root: Path, field: str, cap: int) -> list[tuple[Path, str]]:
    """Every file under ``root`` (or ``root`` itself, a file) as ``(path, relative name)``:
    each a regular file (a link to one counts as one), at most ``cap`` bytes in all.

    A FIFO, socket, device, a link that leads nowhere or to a folder, and anything of
    ``/proc``, ``/sys`` or ``/dev`` (:data:`KERNEL_ROOTS`) is one line.
    """
    check_not_kernel(root, field)
    st = _stat(root, field)
    if not stat.S_ISDIR(st.st_mode):
        check_regular(st, field, root, cap)
        return [(root, root.name)]
    found: list[tuple[Path, str]] = []
    total = 0
    for folder, dirs, files in os.walk(root, onerror=_walk_error(field)):
        for name in sorted(dirs):
            if os.path.islink(os.path.join(folder, name)):
                raise FileRefused(field, os.path.join(folder, name), "a link to a folder")
        for name in sorted(files):
            path = Path(folder, name)
            check_not_kernel(path, field)
            st = _stat(path, field)
            check_regular(st, field, path, cap)
            total += st.st_size
            if total > cap:
                raise FileRefused(field, root, f"over the {human(cap)} limit in all")
            found.append((path, path.relative_to(root).as_posix()))
    return found


def _stat(path: Path, field: str) -> os.stat_result:
    try:
        return path.stat()
    except OSError as err:
        raise FileRefused(field, path, f"cannot be read: {err.strerror}") from None


def _walk_error(field: str) -> Callable[[OSError], None]:
    def fail(err: OSError) -> None:
        raise FileRefused(field, err.filename or "?", f"cannot be read: {err.strerror}")

    return fail
