"""How each rank ended, from the run's own records, and which rank to blame.

One classification for both modes, from what the ranks and their watchers
recorded (never from mpirun's text, which Open MPI 4.1 sometimes loses):
- ``rank-R.exc``: an exception reached the top of the rank's program;
- ``rank-R.abort``: the rank called ``MPI.Comm.Abort(code)``;
- ``rank-R.status``: ``python -m mpi4py`` will abort with this code at exit
  (an uncaught ``SystemExit``, or exception);
- ``rank-R.exit``: its watcher saw it end (exit code or signal, and when);
- ``rank-R.orphan``: its watcher ended while it ran (the rank's stack then).

The rank to blame is the one whose failure came first, a failure being
anything but a signal Open MPI sends the others when one fails (SIGTERM,
SIGKILL), unless nothing else failed.
"""

from __future__ import annotations

import contextlib
import json
import math
import re
import signal
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

COLLATERAL = (signal.SIGTERM, signal.SIGKILL)  # what mpirun sends the others when one fails
_FRAME_RE = re.compile(r'^\s*File "(?P<file>[^"]+)", line (?P<line>\d+) in ')
_LAUNCH_FRAMES = ("<frozen ", "/mpi4py/", "/threading.py")


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


@dataclass(frozen=True)
class RankAbort:
    rank: int
    code: int
    time: float


@dataclass(frozen=True)
class RankOrphan:
    """A rank whose watcher ended while it ran; ``where``: its innermost frame of the program."""

    rank: int
    time: float
    where: str | None


def _load(path: Path) -> dict[str, Any] | None:
    with contextlib.suppress(OSError, ValueError):
        row = json.loads(path.read_text(encoding="utf-8"))
        if isinstance(row, dict):
            return row
    return None


def _rank_of(path: Path) -> int | None:
    tail = path.name.split("-", 1)[-1].split(".", 1)[0]
    return int(tail) if tail.isdigit() else None


def _rows(folder: Path, suffix: str) -> dict[int, dict[str, Any]]:
    rows: dict[int, dict[str, Any]] = {}
    for path in folder.glob(f"rank-*.{suffix}"):
        row, rank = _load(path), _rank_of(path)
        if row is not None and rank is not None:
            rows[rank] = row
    return rows


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def read_ends(folder: Path) -> dict[int, RankEnd]:
    return {
        rank: RankEnd(rank, _int(r.get("code")), _int(r.get("signal")), float(r.get("time") or 0))
        for rank, r in _rows(folder, "exit").items()
    }


def read_exceptions(folder: Path) -> dict[int, RankException]:
    return {
        rank: RankException(rank, str(r.get("text")), float(r.get("time") or 0))
        for rank, r in _rows(folder, "exc").items()
    }


def read_aborts(folder: Path) -> dict[int, RankAbort]:
    return {
        rank: RankAbort(rank, _int(r.get("code")) or 0, float(r.get("time") or 0))
        for rank, r in _rows(folder, "abort").items()
    }


def read_statuses(folder: Path) -> dict[int, RankAbort]:
    """The code ``python -m mpi4py`` set to abort with at exit (``sys.exit(N)``: N)."""
    return {
        rank: RankAbort(rank, _int(r.get("code")) or 1, float(r.get("time") or 0))
        for rank, r in _rows(folder, "status").items()
    }


def read_status_exceptions(folder: Path) -> dict[int, RankException]:
    """The exception ``python -m mpi4py`` set its abort code for, recorded as it did so:
    before the rank's excepthook runs (mpirun may kill the rank between the two)."""
    return {
        rank: RankException(rank, str(r["text"]), float(r.get("time") or 0))
        for rank, r in _rows(folder, "status").items()
        if isinstance(r.get("text"), str)
    }


def user_frame(stack: str) -> str | None:
    """``train.py, line 12``: the innermost frame of a faulthandler dump that is the program's."""
    for line in stack.splitlines():
        m = _FRAME_RE.match(line)
        if m and not any(marker in m["file"] for marker in _LAUNCH_FRAMES):
            return f"{m['file']}, line {m['line']}"
    return None


def read_orphans(folder: Path) -> dict[int, RankOrphan]:
    """Ranks whose watcher ended while they ran: the hook's stack dump (empty until then)."""
    found: dict[int, RankOrphan] = {}
    for path in folder.glob("rank-*.orphan"):
        rank = _rank_of(path)
        with contextlib.suppress(OSError):
            if rank is not None and path.stat().st_size:
                text = path.read_text(errors="replace")
                current = text.split("Current thread", 1)[-1]
                found[rank] = RankOrphan(rank, path.stat().st_mtime, user_frame(current))
    return found


def read_pids(folder: Path) -> dict[int, int]:
    pids: dict[int, int] = {}
    for path in folder.glob("rank-*.pid"):
        rank = _rank_of(path)
        with contextlib.suppress(OSError, ValueError):
            if rank is not None:
                pids[rank] = int(path.read_text().strip())
    return pids


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
    """The rank to blame; ``phrase`` follows ``rank R (algo-k)`` (``failed: ...``)."""

    rank: int
    phrase: str

    @property
    def reason(self) -> str:
        return self.phrase.removeprefix("failed: ")


@dataclass(frozen=True)
class Event:
    time: float
    rank: int
    phrase: str
    collateral: bool = False


@dataclass
class Ends:
    """A finished run's records: every rank's end, exception, abort call and orphaning."""

    ends: dict[int, RankEnd] = field(default_factory=dict)
    exceptions: dict[int, RankException] = field(default_factory=dict)
    strays: list[Stray] = field(default_factory=list)
    aborts: dict[int, RankAbort] = field(default_factory=dict)
    orphans: dict[int, RankOrphan] = field(default_factory=dict)
    pids: dict[int, int] = field(default_factory=dict)
    statuses: dict[int, RankAbort] = field(default_factory=dict)

    @classmethod
    def read(cls, folder: Path) -> Ends:
        return cls(
            read_ends(folder),
            {**read_exceptions(folder), **read_status_exceptions(folder)},  # the earlier record
            read_strays(folder),
            read_aborts(folder),
            read_orphans(folder),
            read_pids(folder),
            read_statuses(folder),
        )

    @property
    def aborted_zero(self) -> RankAbort | None:
        """The first rank that called ``MPI_Abort(0)``: a failure though every code is 0."""
        zero = [a for a in self.aborts.values() if a.code == 0]
        return min(zero, key=lambda a: a.time) if zero else None

    def event(self, rank: int, launcher_signal: int | None = None) -> Event | None:
        """What rank ``rank`` did that failed the run, if anything (one classification)."""
        if rank in self.exceptions:
            exc = self.exceptions[rank]
            return Event(exc.time, rank, f"failed: {exc.text}")
        if rank in self.aborts:
            abort = self.aborts[rank]
            if abort.code == 0:
                return Event(abort.time, rank, "called MPI_Abort(0)")
            return Event(abort.time, rank, f"failed: exit code {abort.code} (MPI_Abort)")
        if rank in self.statuses:  # sys.exit(N): mpi4py aborts with N at exit
            status = self.statuses[rank]
            return Event(status.time, rank, f"failed: exit code {status.code}")
        end = self.ends.get(rank)
        if end is not None:
            if not end.failed:
                return None
            collateral = end.signal in COLLATERAL
            return Event(end.time, rank, f"failed: {end.cause}", collateral)
        if rank in self.orphans:
            return self._orphaned(self.orphans[rank], launcher_signal)
        if rank in self.pids and launcher_signal is not None:
            # no record, and mpirun says the process it started for the rank was signalled:
            # that process (which writes a record whenever it can) was killed, and the rank
            # died before it could record it (mpirun's SIGTERM came first); when is unknown
            return self._orphaned(RankOrphan(rank, math.inf, None), launcher_signal)
        return None

    def _orphaned(self, orphan: RankOrphan, launcher_signal: int | None) -> Event:
        how = (
            "ended"
            if launcher_signal is None
            else f"was killed by signal {signal_text(launcher_signal)}"
        )
        where = f" (the rank was at {orphan.where})" if orphan.where else ""
        phrase = (
            f"failed: the process that started it (smmpi's rank watcher) {how} "
            f"while the rank ran{where}"
        )
        return Event(orphan.time, orphan.rank, phrase)

    def blame(self, signalled: dict[int, int] | None = None) -> Blame | None:
        """The rank whose failure came first (``signalled``: mpirun's word on how the
        process it started for each rank ended, for a rank whose watcher left no record)."""
        ranks = {*self.ends, *self.exceptions, *self.aborts, *self.orphans, *self.statuses}
        ranks |= set(signalled or {}) & set(self.pids)
        events = [e for r in ranks if (e := self.event(r, (signalled or {}).get(r))) is not None]
        events.sort(key=lambda e: (e.time, e.rank))
        first = next((e for e in events if not e.collateral), events[0] if events else None)
        return Blame(first.rank, first.phrase) if first is not None else None

    def stray_lines(self, host_of: Callable[[int], str]) -> list[str]:
        """One line per rank that left processes running, naming what was killed."""
        ranks_own = set(self.pids.items())
        by_rank: dict[int | None, list[Stray]] = {}
        for stray in self.strays:
            if (stray.rank, stray.pid) not in ranks_own:  # a rank is no stray of its own
                by_rank.setdefault(stray.rank, []).append(stray)
        lines = []
        for rank, strays in sorted(by_rank.items(), key=lambda item: (item[0] is None, item[0])):
            who = "the run" if rank is None else f"rank {rank} ({host_of(rank)})"
            names = "; ".join(f"{s.command} (pid {s.pid})" for s in strays)
            lines.append(f"killed {len(strays)} stray process(es) left by {who}: {names}")
        return lines
