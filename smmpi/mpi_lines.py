"""Each rank's lines rebuilt from Open MPI's tagged output (``[1,r]<stdout>:text``).

Open MPI 4.1 (SageMaker's containers, and smmpi's own) writes ``[1,3]<stdout>:text``, and
the text is returned exactly as the rank wrote it, leading spaces included. Open MPI 5
writes ``[1,3]<stdout>: text``: its lines keep that one extra space. SageMaker's log
since toolkit 4.0.0 (and smmpi's local output) has the toolkit's rewritten tags,
``[1,mpirank:3,algo-2]<stdout>:text``, which name the rank's host too.

A rank's line is kept to its last :data:`MAX_LINE` characters: a rank that writes
100 MB without a newline costs that much neither memory nor time, and its line is
shown with a note that says how much of its start was cut.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

MAX_LINE = 64 * 1024  # characters of one rank's line that are kept (its last ones)


@dataclass(frozen=True)
class Tagged:
    rank: int
    stream: str  # "stdout" | "stderr" | "stddiag"
    text: str
    host: str | None = None  # the tag's host (``[1,mpirank:R,algo-K]``), if it names one


_ANY_TAG_RE = re.compile(
    r"\[(?P<job>\d+),(?:mpirank:)?(?P<rank>\d+)(?:,(?P<host>[\w.-]+))?\]"
    r"<(?P<stream>stdout|stderr|stddiag)>:"
)


def is_tagged(line: str) -> bool:
    """True for a line a rank wrote (it starts with a tag), False for mpirun's own."""
    return _ANY_TAG_RE.match(line) is not None


def split_tags(line: str) -> list[Tagged]:
    """Every tagged piece of one physical line, each with its own rank.

    Ranks that print without a newline share a line with other ranks (seed 004:
    ``[1,3]<stdout>:Data at rank 3 [1,2]<stdout>:Data at rank 2 [1,2]<stdout>:[0 1 …]``).
    Each piece keeps its own rank, so rank 2's words stay with rank 2. Untagged
    text before the first tag is dropped; [] for untagged lines.
    """
    line = line.rstrip("\r\n")
    matches = list(_ANY_TAG_RE.finditer(line))
    if not matches or matches[0].start() != 0:
        return []
    pieces = []
    for i, m in enumerate(matches):
        end = matches[i + 1].start() if i + 1 < len(matches) else len(line)
        text = line[m.end() : end]
        pieces.append(Tagged(int(m["rank"]), m["stream"], text, m["host"]))
    return pieces


def cut_note(cut: int) -> str:
    """What a line cut to its last :data:`MAX_LINE` characters starts with."""
    return f"[smmpi: {cut} earlier characters of this line are not shown] "


class _Text:
    """One rank's unfinished line: its last :data:`MAX_LINE` characters, and how many
    came before them (kept in parts, so a long line costs time in proportion to it)."""

    def __init__(self) -> None:
        self.parts: list[str] = []
        self.size = self.cut = 0

    def add(self, text: str) -> None:
        self.parts.append(text)
        self.size += len(text)
        if self.size > 2 * MAX_LINE:
            self._trim()

    def _trim(self) -> None:
        kept = "".join(self.parts)[-MAX_LINE:]
        self.cut += self.size - len(kept)
        self.parts, self.size = [kept], len(kept)

    def text(self) -> str:
        if self.size > MAX_LINE:
            self._trim()
        joined = "".join(self.parts)
        return cut_note(self.cut) + joined if self.cut else joined


class LineAssembler:
    """Rebuild each rank's own lines from physical lines where ranks interleave.

    Open MPI tags every chunk a rank writes, and a newline ends only the last
    chunk of a physical line; the earlier chunks are the starts of lines their
    ranks finish later. Feeding seed 004's lines yields ``Data at rank 2 [0 1 …]``
    for rank 2 and, one line later, ``Data at rank 3 [0 1 …]`` for rank 3.
    Use one assembler per stream (per host's log) and ``flush`` at its end.

    A physical line may be fed in parts (``ends=False`` for all but its last): the
    text a part starts with, before any tag, goes on the previous part's last piece.
    """

    def __init__(self) -> None:
        self._pending: dict[tuple[int, str], _Text] = {}
        self._hosts: dict[int, str | None] = {}
        self.open: tuple[int, str] | None = None  # the piece a part of a line ended in

    def feed(self, line: str, ends: bool = True) -> list[Tagged]:
        """Complete lines this physical line (or part of one) finishes ([] for untagged
        lines)."""
        line = line.rstrip("\r\n") if ends else line
        matches = list(_ANY_TAG_RE.finditer(line))
        first = matches[0].start() if matches else len(line)
        pieces: list[tuple[tuple[int, str], str]] = []
        if self.open is not None:
            pieces.append((self.open, line[:first]))
        elif first != 0 or not matches:  # an untagged line (an empty one too)
            return []
        for i, m in enumerate(matches):
            end = matches[i + 1].start() if i + 1 < len(matches) else len(line)
            rank = int(m["rank"])
            self._hosts[rank] = m["host"] or self._hosts.get(rank)
            pieces.append(((rank, m["stream"]), line[m.end() : end]))
        for key, text in pieces:
            self._pending.setdefault(key, _Text()).add(text)
        last = pieces[-1][0]
        self.open = None if ends else last
        return [self._take(last)] if ends else []

    def _take(self, key: tuple[int, str]) -> Tagged:
        rank, stream = key
        return Tagged(rank, stream, self._pending.pop(key).text(), self._hosts.get(rank))

    def flush(self) -> list[Tagged]:
        """Text still waiting for its newline (a rank that ended mid-line)."""
        rest = [self._take(key) for key in list(self._pending)]
        self.open = None
        return rest
