"""How each rank ended, from the launcher's own records, and which rank to blame.

Every rank runs under ``watch.py rank``, which writes ``rank-R.exit`` (exit code
or signal, and when); the rank hook writes ``rank-R.exc`` when an exception
reaches the top of the rank's program (a traceback the program handled and
printed itself writes nothing). The rank to blame is the one whose failure
came first: ranks that Open MPI stops because another failed end later.
"""

from __future__ import annotations

import contextlib
import json
import signal
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

COLLATERAL = (signal.SIGTERM, signal.SIGKILL)  # what mpirun sends the others when one fails


def signal_text(number: int) -> str:
    """``9 (SIGKILL)``: the number and its name."""
    try:
        return f"{number} ({signal.Signals(number).name})"
    except ValueError:
        return str(number)


@dataclass(frozen=True)
class RankEnd:
    """One rank's end, as its parent process saw it."""

    rank: int
    code: int | None
    signal: int | None
    time: float

    @property
    def failed(self) -> bool:
        return self.signal is not None or (self.code is not None and self.code != 0)

    @property
    def cause(self) -> str:
        if self.signal is not None:
            return f"killed by signal {signal_text(self.signal)}"
        return f"exit code {self.code}"


@dataclass(frozen=True)
class RankException:
    rank: int
    text: str  # ``ValueError: boom``
    time: float


def _load(path: Path) -> dict[str, Any] | None:
    with contextlib.suppress(OSError, ValueError):
        row = json.loads(path.read_text(encoding="utf-8"))
        if isinstance(row, dict):
            return row
    return None


def _rank_of(path: Path) -> int | None:
    tail = path.name.split("-", 1)[-1].split(".", 1)[0]
    return int(tail) if tail.isdigit() else None


def read_ends(folder: Path) -> dict[int, RankEnd]:
    ends: dict[int, RankEnd] = {}
    for path in folder.glob("rank-*.exit"):
        row, rank = _load(path), _rank_of(path)
        if row is None or rank is None:
            continue
        ends[rank] = RankEnd(
            rank,
            row.get("code"),
            row.get("signal"),
            float(row.get("time") or 0.0),
        )
    return ends


def read_exceptions(folder: Path) -> dict[int, RankException]:
    found: dict[int, RankException] = {}
    for path in folder.glob("rank-*.exc"):
        row, rank = _load(path), _rank_of(path)
        if row is not None and rank is not None:
            found[rank] = RankException(rank, str(row.get("text")), float(row.get("time") or 0))
    return found


@dataclass(frozen=True)
class Stray:
    """A process a rank left running, which the run's reaper killed."""

    rank: int | None
    pid: int
    command: str


def read_strays(folder: Path) -> list[Stray]:
    """The run reaper's ``strays.json``, and each isolated instance's ``strays-HOST.json``."""
    found: list[Stray] = []
    for path in sorted(folder.glob("strays*.json")):
        with contextlib.suppress(OSError, ValueError):
            rows = json.loads(path.read_text(encoding="utf-8"))
            if isinstance(rows, list):
                found += [
                    Stray(r.get("rank"), int(r.get("pid", 0)), str(r.get("command", "")))
                    for r in rows
                    if isinstance(r, dict)
                ]
    return found


@dataclass(frozen=True)
class Blame:
    rank: int
    reason: str


@dataclass
class Ends:
    """A finished run's records: every rank's end and top-level exception."""

    ends: dict[int, RankEnd] = field(default_factory=dict)
    exceptions: dict[int, RankException] = field(default_factory=dict)
    strays: list[Stray] = field(default_factory=list)

    @classmethod
    def read(cls, folder: Path) -> Ends:
        return cls(read_ends(folder), read_exceptions(folder), read_strays(folder))

    def _events(self) -> list[tuple[float, int, str]]:
        """(when, rank, reason) of every failure: an exception, or an abnormal end."""
        events = [(e.time, e.rank, e.text) for e in self.exceptions.values()]
        events += [
            (end.time, end.rank, end.cause)
            for end in self.ends.values()
            if end.failed and end.rank not in self.exceptions
        ]
        return sorted(events)

    def blame(self, aborted: int | None = None, abort_code: int | None = None) -> Blame | None:
        """The rank whose failure came first; ``aborted`` is the rank MPI says called abort."""
        if aborted is not None:
            if aborted in self.exceptions:
                return Blame(aborted, self.exceptions[aborted].text)
            end = self.ends.get(aborted)
            code = end.code if end is not None and end.code is not None else abort_code
            if code is not None:
                return Blame(aborted, f"exit code {code} (MPI_Abort)")
        events = self._events()
        if aborted is not None:  # the others were stopped because of the abort
            events = [e for e in events if not self._collateral(e[1])] or events
        return Blame(events[0][1], events[0][2]) if events else None

    def _collateral(self, rank: int) -> bool:
        end = self.ends.get(rank)
        return end is not None and end.signal in COLLATERAL and rank not in self.exceptions

    def stray_lines(self, host_of: Callable[[int], str]) -> list[str]:
        """One line per rank that left processes running, naming what was killed."""
        by_rank: dict[int | None, list[Stray]] = {}
        for stray in self.strays:
            by_rank.setdefault(stray.rank, []).append(stray)
        lines = []
        for rank, strays in sorted(by_rank.items(), key=lambda item: (item[0] is None, item[0])):
            who = "the run" if rank is None else f"rank {rank} ({host_of(rank)})"
            names = "; ".join(f"{s.command} (pid {s.pid})" for s in strays)
            lines.append(f"killed {len(strays)} stray process(es) left by {who}: {names}")
        return lines
