"""What leaves an emulated instance: its own files, walked without following a link out of it.

A rank owns its ``/opt/ml`` tree and may put links anywhere in it: to ``/etc``, to
another instance, to smmpi's own folders. Everything smmpi takes out of an instance
(the model and output archives, checkpoints) is therefore read by opening one folder
at a time below a folder smmpi made, never through a link: a link inside the tree is
taken as a link (SageMaker's ``tar`` stores it so), and a folder smmpi was asked to take
that is itself a link, or lies below one, is refused in one line. Paths longer than
Linux's PATH_MAX are refused too: no program on the instance could name such a file,
and nothing could extract it.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from smmpi.errors import SmmpiError

#: The longest relative path taken out of an instance, in bytes (Linux's PATH_MAX, less its NUL).
MAX_PATH = 4095
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC


class TreeRefused(SmmpiError):
    """A folder smmpi will not take out of an instance; the message names it and why."""


def where(folder: Path, below: Path) -> str:
    """``folder`` as the instance names it (``algo-1's /opt/ml/model``), if it is a host's."""
    try:
        parts = folder.relative_to(below).parts
    except ValueError:
        return str(folder)
    if len(parts) > 1:
        return f"{parts[0]}'s /{'/'.join(parts[1:])}"
    return str(folder)


def open_folder(below: Path, folder: Path) -> int | None:
    """A descriptor of ``folder``, each of its components below ``below`` (a folder smmpi
    made) opened without following a link; None when it does not exist (or is a file). A
    component that is a link is :class:`TreeRefused`."""
    fd = os.open(below, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    done = below
    try:
        for part in folder.relative_to(below).parts:
            try:
                child = os.open(part, _DIR_FLAGS, dir_fd=fd)
            except OSError as err:
                if _is_link(fd, part) or not isinstance(
                    err, (FileNotFoundError, NotADirectoryError)
                ):
                    raise TreeRefused(_why(fd, part, done / part, below, err)) from None
                os.close(fd)
                return None  # nothing there to take (or a file)
            os.close(fd)
            fd, done = child, done / part
    except BaseException:
        os.close(fd)
        raise
    return fd


def _is_link(fd: int, name: str) -> bool:
    try:
        return stat.S_ISLNK(os.stat(name, dir_fd=fd, follow_symlinks=False).st_mode)
    except OSError:
        return False


def _why(fd: int, name: str, path: Path, below: Path, err: OSError) -> str:
    if _is_link(fd, name):
        what = f"is a link (to {os.readlink(name, dir_fd=fd)})"
    else:
        what = f"cannot be read ({err.strerror})"
    return (
        f"{where(path, below)} {what}: smmpi takes only what lies inside the instance, "
        "never through a link"
    )


@dataclass(frozen=True)
class Entry:
    """One file, folder or link of a tree: its relative name, status and parent folder."""

    name: str  # relative, with /
    info: os.stat_result  # not following a link
    parent: int  # a descriptor of its folder, open while the entry is current
    base: str  # its name in that folder

    @property
    def is_dir(self) -> bool:
        return stat.S_ISDIR(self.info.st_mode)

    @property
    def is_file(self) -> bool:
        return stat.S_ISREG(self.info.st_mode)

    @property
    def is_link(self) -> bool:
        return stat.S_ISLNK(self.info.st_mode)

    def link(self) -> str:
        return os.readlink(self.base, dir_fd=self.parent)

    def open(self) -> int | None:
        """A descriptor of this regular file (None if it changed since it was listed)."""
        try:
            fd = os.open(self.base, _FILE_FLAGS, dir_fd=self.parent)
        except OSError:
            return None
        now = os.fstat(fd)
        if not stat.S_ISREG(now.st_mode) or (now.st_dev, now.st_ino) != (
            self.info.st_dev,
            self.info.st_ino,
        ):
            os.close(fd)
            return None
        os.set_blocking(fd, True)
        return fd


def walk(fd: int, label: str) -> Iterator[Entry]:
    """Every entry under the folder ``fd`` (which stays the caller's), folders before what
    they hold, names sorted; a link is an entry, never followed. ``label`` names the folder
    in a :class:`TreeRefused` for a path longer than :data:`MAX_PATH`."""
    stack: list[tuple[int, str, Iterator[str]]] = [(os.dup(fd), "", iter(_names(fd, label)))]
    try:
        while stack:
            here, prefix, names = stack[-1]
            name = next(names, None)
            if name is None:
                os.close(here)
                stack.pop()
                continue
            rel = prefix + name
            if len(os.fsencode(rel)) > MAX_PATH:
                raise TreeRefused(
                    f"{label}/{prefix[:60]}... holds a path of over {MAX_PATH} bytes "
                    "(Linux's PATH_MAX): no program could open it, nor extract it"
                )
            try:
                info = os.stat(name, dir_fd=here, follow_symlinks=False)
            except FileNotFoundError:
                continue
            yield Entry(rel, info, here, name)
            if stat.S_ISDIR(info.st_mode):
                try:
                    child = os.open(name, _DIR_FLAGS, dir_fd=here)
                except OSError:
                    continue  # replaced since it was listed
                stack.append((child, rel + "/", iter(())))  # closed with the stack
                stack[-1] = (child, rel + "/", iter(_names(child, label)))
    finally:
        for here, _prefix, _names_left in stack:
            os.close(here)


def _names(fd: int, label: str) -> list[str]:
    try:
        return sorted(os.listdir(fd))
    except OSError as err:
        raise TreeRefused(f"{label} cannot be read ({err.strerror})") from None


def entries(below: Path, folder: Path) -> Iterator[Entry]:
    """:func:`walk` of ``folder`` opened by :func:`open_folder` (nothing if it is missing)."""
    fd = open_folder(below, folder)
    if fd is None:
        return
    try:
        yield from walk(fd, where(folder, below))
    finally:
        os.close(fd)


def copy_tree(
    below: Path, folder: Path, dest: Path, want: Callable[[Entry], bool] = lambda e: True
) -> int:
    """Copy ``folder`` (read as :func:`entries` reads it) into ``dest``, a folder smmpi made:
    folders, regular files for which ``want`` is true, links as links. Nothing is written
    through a link: whatever stands in the way in ``dest`` (a link, a file where a folder
    goes) is replaced. Returns the files and links copied."""
    copied = 0
    top = os.open(dest, _DIR_FLAGS)
    stack: list[tuple[str, int]] = [("", top)]
    try:
        for entry in entries(below, folder):
            parent = entry.name.rpartition("/")[0]
            while stack[-1][0] != parent:
                os.close(stack.pop()[1])
            here = stack[-1][1]
            if entry.is_dir:
                stack.append((entry.name, _folder_in(here, entry.base)))
            elif (entry.is_file or entry.is_link) and want(entry):
                copied += _copy_entry(entry, here)
    finally:
        for _name, fd in stack:
            os.close(fd)
    return copied


def _clear(fd: int, name: str, keep_dir: bool) -> None:
    """Make way for ``name`` in folder ``fd``: remove what is there (a folder too, unless
    ``keep_dir``), never following a link."""
    try:
        info = os.stat(name, dir_fd=fd, follow_symlinks=False)
    except FileNotFoundError:
        return
    if stat.S_ISDIR(info.st_mode):
        if not keep_dir:
            shutil.rmtree(f"/proc/self/fd/{fd}/{name}")  # (rmtree's dir_fd: Python 3.11)
        return
    os.unlink(name, dir_fd=fd)


def _folder_in(fd: int, name: str) -> int:
    _clear(fd, name, keep_dir=True)
    with contextlib.suppress(FileExistsError):
        os.mkdir(name, 0o700, dir_fd=fd)
    return os.open(name, _DIR_FLAGS, dir_fd=fd)


def _copy_entry(entry: Entry, fd: int) -> int:
    if entry.is_link:
        _clear(fd, entry.base, keep_dir=False)
        os.symlink(entry.link(), entry.base, dir_fd=fd)
        return 1
    src = entry.open()
    if src is None:
        return 0
    try:
        _clear(fd, entry.base, keep_dir=False)
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
        with os.fdopen(os.open(entry.base, flags, 0o600, dir_fd=fd), "wb") as out:
            while chunk := os.read(src, 1 << 20):
                out.write(chunk)
    finally:
        os.close(src)
    info = entry.info
    os.utime(entry.base, ns=(info.st_atime_ns, info.st_mtime_ns), dir_fd=fd, follow_symlinks=False)
    return 1
