"""A code's requirements files, read from its archive before anything of the job exists.

The container's ``pip install -r requirements.txt`` reads every file the file's ``-r`` and
``-c`` lines name, recursively. A special file there (``-r /dev/zero``) grows pip without
end, and a binary file fails with a codec error that names no file. So each is checked
here, before the job's folder is made: a regular file of at most :data:`MAX_BYTES`, UTF-8
text. A relative name is the including file's neighbour, as pip reads it: in the code dir
(this archive), or beside a file of this machine named by an absolute path. URLs are
pip's to fetch, bounded as every install is (:mod:`.installs`).
"""

from __future__ import annotations

import io
import posixpath
import re
import shlex
import tarfile

from smmpi.bounded import FileRefused, human, read_regular
from smmpi.errors import BadInput
from smmpi.mpi_output import printable
from smmpi.toolkit.hosts import CONTAINER_ROOT

TOP = "requirements.txt"
#: One requirements file (200,000 pinned requirements take about 4 MiB).
MAX_BYTES = 16 * 1024 * 1024
_NESTED = ("-r", "--requirement", "-c", "--constraint")
_CODE = f"{CONTAINER_ROOT}/code/"
_HOPS = 8  # links followed inside the archive, at most
_COMMENT_RE = re.compile(r"(^|\s+)#.*$")

Members = dict[str, tarfile.TarInfo]


def logical_lines(text: str) -> list[str]:
    """The file's requirement and option lines, as pip reads them: continuation lines
    (``\\`` at the end) joined, comments and blank lines dropped."""
    lines: list[str] = []
    pending = ""
    for raw in text.splitlines():
        if raw.endswith("\\"):
            pending += raw[:-1]
            continue
        line = _COMMENT_RE.sub("", pending + raw).strip()
        pending = ""
        if line:
            lines.append(line)
    if pending.strip():
        lines.append(_COMMENT_RE.sub("", pending).strip())
    return [ln for ln in lines if ln]


def nested(line: str) -> list[tuple[str, str]]:
    """``(option, file)`` of each ``-r``/``-c``: ``-r F``, ``-rF``, ``--constraint=F``."""
    try:
        words = shlex.split(line)
    except ValueError:
        return []  # pip refuses the line itself
    found = []
    for i, word in enumerate(words):
        for opt in _NESTED:
            if word == opt and i + 1 < len(words):
                found.append((opt, words[i + 1]))
            elif opt.startswith("--") and word.startswith(opt + "="):
                found.append((opt, word[len(opt) + 1 :]))
            elif len(opt) == 2 and word.startswith(opt) and len(word) > 2:
                found.append((opt, word[2:]))
    return found


def _text(data: bytes, name: str) -> str:
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        byte = data[err.start]
        raise BadInput(
            "requirements file",
            name,
            f"UTF-8 text (byte 0x{byte:02x} at offset {err.start} is not UTF-8)",
        ) from None


def _member(members: Members, name: str, field: str, shown: str) -> tarfile.TarInfo | None:
    """The archive's regular file ``name`` (links inside the archive followed), or None."""
    for _ in range(_HOPS):
        member = members.get(name)
        if member is None or not (member.issym() or member.islnk()):
            break
        base = posixpath.dirname(name) if member.issym() else ""
        name = posixpath.normpath(posixpath.join(base, member.linkname))
        if member.issym() and (posixpath.isabs(member.linkname) or name.startswith("..")):
            raise FileRefused(field, shown, "a link out of the code dir")
    else:
        raise FileRefused(field, shown, f"more than {_HOPS} links")
    if member is None or member.isdir():
        return None
    if not member.isfile():
        raise FileRefused(field, shown, "not a regular file")
    if member.size > MAX_BYTES:
        raise FileRefused(field, shown, f"{human(member.size)}, over the {human(MAX_BYTES)} limit")
    return member


def _read(tar: tarfile.TarFile, members: Members, where: str, field: str, shown: str) -> str:
    """The text of one requirements file: a name in the code dir, or ``/path`` of this machine."""
    if where.startswith("/"):
        return _text(read_regular(where, field, MAX_BYTES), shown)
    member = _member(members, where, field, shown)
    data = tar.extractfile(member) if member is not None else None
    if data is None:
        raise FileRefused(field, shown, "no such file in the code dir")
    return _text(data.read(MAX_BYTES + 1)[:MAX_BYTES], shown)


def _where(parent: str, value: str) -> str:
    """Where a nested file is: a name in the code dir, or an absolute path of this machine."""
    if value.startswith(_CODE):
        return posixpath.normpath(value[len(_CODE) :])
    if posixpath.isabs(value):
        return value
    return posixpath.normpath(posixpath.join(posixpath.dirname(parent), value))


def requirement_lines(source: bytes, install: bool) -> list[str] | None:
    """The code's requirements.txt, as lines (None: the code has none).

    ``install``: every file its ``-r``/``-c`` lines name is checked too, recursively.
    """
    with tarfile.open(fileobj=io.BytesIO(source), mode="r:*") as tar:
        members = {posixpath.normpath(m.name): m for m in tar.getmembers()}
        if _member(members, TOP, "requirements file", TOP) is None:
            return None
        top = logical_lines(_read(tar, members, TOP, "requirements file", TOP))
        if install:
            _check_nested(tar, members, top)
    return top


def _check_nested(tar: tarfile.TarFile, members: Members, top: list[str]) -> None:
    todo = [(TOP, top)]
    seen = {TOP}
    while todo:
        parent, lines = todo.pop()
        for line in lines:
            for opt, value in nested(line):
                if "://" in value:
                    continue  # pip fetches it, within the install's bounds
                where = _where(parent, value)
                field = f"{opt} in {parent}"
                if where.startswith(".."):
                    raise FileRefused(field, value, "outside the code dir")
                if where not in seen:
                    seen.add(where)
                    todo.append((where, logical_lines(_read(tar, members, where, field, value))))


def shown(lines: list[str], most: int = 3, width: int = 60) -> str:
    """A few of ``lines`` for one progress line: how many, the first ``most``, each cut short."""
    if not lines:
        return "nothing"
    cut = [printable(ln if len(ln) <= width else ln[: width - 1] + "…") for ln in lines[:most]]
    if len(lines) <= most:
        return ", ".join(cut)
    return f"{len(lines)} requirements: {', '.join(cut)}, … and {len(lines) - most} more"
