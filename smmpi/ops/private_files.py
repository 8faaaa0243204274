"""smmpi's own files and folders: files 0600 in 0700 folders, never written through a link,
and older, looser ones tightened when found (links are left alone)."""

from __future__ import annotations

import os
import stat
from pathlib import Path


def tighten_dir(path: Path) -> None:
    """A folder of smmpi's, not a link and owned by this user, made 0700 if it is looser."""
    try:
        info = path.lstat()
        if stat.S_ISDIR(info.st_mode) and info.st_uid == os.getuid() and info.st_mode & 0o077:
            path.chmod(0o700)
    except OSError:
        pass


def tighten(folder: Path) -> None:
    """A local job's folder 0700, its files and ``logs/`` files 0600 (links are left alone)."""
    tighten_dir(folder)
    for parent in (folder, folder / "logs"):
        try:
            children = list(parent.iterdir())
        except OSError:
            continue
        for child in children:
            try:
                info = child.lstat()
                if stat.S_ISDIR(info.st_mode):
                    tighten_dir(child)
                elif stat.S_ISREG(info.st_mode) and info.st_mode & 0o077:
                    child.chmod(0o600)
            except OSError:
                continue


def write_private(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` (0600) through a temporary file; never through a link."""
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
    fd = os.open(tmp, flags, 0o600)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
