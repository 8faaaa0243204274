"""The tar archives a job moves: packed reproducibly, extracted without leaving their folder."""

from __future__ import annotations

import gzip
import io
import os
import stat
import tarfile
from collections.abc import Iterable
from pathlib import Path, PurePosixPath

from smmpi.bounded import CODE_MAX_BYTES, read_regular
from smmpi.errors import SmmpiError
from smmpi.trees import Entry, entries


def pack(files: Iterable[tuple[Path, str]], field: str = "code file") -> bytes:
    """A ``.tar.gz`` of ``(path, archive name)`` pairs, reproducible byte for byte.

    Each path must be a regular file of at most :data:`~smmpi.bounded.CODE_MAX_BYTES`.
    """
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for path, name in files:
            data = read_regular(path, field, CODE_MAX_BYTES)
            info = tarfile.TarInfo(name)
            info.size, info.mode, info.mtime = len(data), 0o644, 0
            tar.addfile(info, io.BytesIO(data))
    out = io.BytesIO()
    with gzip.GzipFile(fileobj=out, mode="wb", mtime=0) as gz:
        gz.write(raw.getvalue())
    return out.getvalue()


def tar_dirs(
    sources: list[Path], archive: Path, *, below: Path | None = None, prefix: str = ""
) -> None:
    """One archive of several folders merged (as the SDK's local mode merges hosts' dirs),
    each member named ``prefix`` + its path in its folder.

    Each folder is read below ``below`` (a folder smmpi made; the folder's own parent
    without it) as :mod:`smmpi.trees` reads an instance: a link inside is stored as a link,
    never followed, and a folder that is a link, or lies below one, is
    :class:`~smmpi.trees.TreeRefused` (then no archive is left).
    """
    try:
        with tarfile.open(archive, "w:gz") as tar:
            for src in sources:
                for entry in entries(below or src.parent, src):
                    _add(tar, entry, prefix + entry.name)
    except BaseException:
        archive.unlink(missing_ok=True)
        raise


def _add(tar: tarfile.TarFile, entry: Entry, name: str) -> None:
    """A regular file with its bytes, or a link as a link (anything else is not packed)."""
    info = tarfile.TarInfo(name)
    info.mode, info.mtime = stat.S_IMODE(entry.info.st_mode), int(entry.info.st_mtime)
    if entry.is_link:
        info.type, info.linkname = tarfile.SYMTYPE, entry.link()
        tar.addfile(info)
        return
    fd = entry.open() if entry.is_file else None
    if fd is None:
        return
    with os.fdopen(fd, "rb") as f:
        info.size = os.fstat(f.fileno()).st_size
        tar.addfile(info, f)


def extract(archive: Path | bytes, dest: Path, *, links: bool = False) -> list[Path]:
    """Extract ``archive`` (a file or its bytes) into ``dest``; returns the regular files.

    A member that would land outside ``dest`` or is a device is refused, and so
    is any link unless ``links`` (a job's code may hold links inside itself). Nothing
    is written through a link: ``dest`` itself, a link already on disk where a member
    goes (or above it), or a member below a link of the archive is refused.
    """
    name = archive.name if isinstance(archive, Path) else "archive"
    if dest.is_symlink():
        raise SmmpiError(f"{name}: refusing to extract into {dest}: it is a link")
    dest.mkdir(parents=True, exist_ok=True)
    root = dest.resolve()
    source = tarfile.open(archive) if isinstance(archive, Path) else _open_bytes(archive)
    with source as tar:
        members = tar.getmembers()
        linked = {PurePosixPath(m.name) for m in members if m.issym() or m.islnk()}
        for m in members:
            target = (root / m.name).resolve()
            inside = target == root or root in target.parents
            if not inside or m.isdev() or (not links and (m.issym() or m.islnk())):
                raise SmmpiError(f"{name}: refusing unsafe member {m.name!r}")
            through = _through_link(root, PurePosixPath(m.name), linked)
            if through:
                raise SmmpiError(f"{name}: refusing member {m.name!r}: {through} is a link")
        try:
            _extract_all(tar, root, members)
        except tarfile.TarError as err:  # the data filter's refusals (absolute links, ...)
            raise SmmpiError(f"{name}: refusing unsafe member: {err}") from None
        except OSError as err:  # a member that clashes with another (a file, then a folder)
            raise SmmpiError(f"{name}: cannot extract into {dest}: {err}") from None
    return [root / m.name for m in members if m.isfile()]


def _through_link(root: Path, name: PurePosixPath, linked: set[PurePosixPath]) -> str | None:
    """Where extracting ``name`` would go through a link: one of the archive's own links
    above it, or a link on disk at or above it; None if nowhere."""
    for parent in name.parents:
        if parent in linked:
            return parent.as_posix()
    here = root
    for part in name.parts:
        here = here / part
        if here.is_symlink():
            return str(here)
        if not here.is_dir():
            return None
    return None


def _extract_all(tar: tarfile.TarFile, root: Path, members: list[tarfile.TarInfo]) -> None:
    """``extractall`` with the ``data`` filter, or its rules where Python predates it.

    Python 3.10.12 and 3.11.4 brought the filters; Debian 12's 3.11.2 has none.
    """
    if hasattr(tarfile, "data_filter"):
        tar.extractall(root, filter="data")
        return
    for m in members:
        _data_rules(m, root)
    tar.extractall(root, members=members)


def _data_rules(m: tarfile.TarInfo, root: Path) -> None:
    """The ``data`` filter's rules: links stay inside, no special bits, no owner from the tar."""
    if m.issym() or m.islnk():
        base = (root / m.name).parent if m.issym() else root
        target = (base / m.linkname).resolve()
        if os.path.isabs(m.linkname) or not (target == root or root in target.parents):
            raise tarfile.TarError(f"{m.name!r} links outside the folder ({m.linkname!r})")
    if m.isfile():
        m.mode = (m.mode & 0o755) | 0o600
    elif m.isdir():
        m.mode = (m.mode & 0o755) | 0o700
    m.uid, m.gid, m.uname, m.gname = os.getuid(), os.getgid(), "", ""


def _open_bytes(data: bytes) -> tarfile.TarFile:
    return tarfile.open(fileobj=io.BytesIO(data), mode="r:*")
