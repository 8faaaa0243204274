"""The tar archives a job moves: packed reproducibly, extracted without leaving their folder."""

from __future__ import annotations

import gzip
import io
import os
import tarfile
from collections.abc import Iterable
from pathlib import Path

from smmpi.bounded import CODE_MAX_BYTES, read_regular
from smmpi.errors import SmmpiError


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


def tar_dirs(sources: list[Path], archive: Path) -> None:
    """One archive of several folders merged (as the SDK's local mode merges hosts' dirs)."""
    with tarfile.open(archive, "w:gz") as tar:
        for src in sources:
            for path in sorted(src.rglob("*")):
                if path.is_file():
                    tar.add(path, arcname=path.relative_to(src).as_posix())


def extract(archive: Path | bytes, dest: Path, *, links: bool = False) -> list[Path]:
    """Extract ``archive`` (a file or its bytes) into ``dest``; returns the regular files.

    A member that would land outside ``dest`` or is a device is refused, and so
    is any link unless ``links`` (a job's code may hold links inside itself).
    """
    dest.mkdir(parents=True, exist_ok=True)
    root = dest.resolve()
    name = archive.name if isinstance(archive, Path) else "archive"
    source = tarfile.open(archive) if isinstance(archive, Path) else _open_bytes(archive)
    with source as tar:
        members = tar.getmembers()
        for m in members:
            target = (root / m.name).resolve()
            inside = target == root or root in target.parents
            if not inside or m.isdev() or (not links and (m.issym() or m.islnk())):
                raise SmmpiError(f"{name}: refusing unsafe member {m.name!r}")
        try:
            _extract_all(tar, root, members)
        except tarfile.TarError as err:  # the data filter's refusals (absolute links, ...)
            raise SmmpiError(f"{name}: refusing unsafe member: {err}") from None
    return [root / m.name for m in members if m.isfile()]


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
