"""What each rank and its watcher recorded of how the rank ended, read back from the run's
stack folder (``rank-R.*``, written by :mod:`.rank_hook` and ``watch.py``):
- ``rank-R.exc``: an exception reached the top of the rank's program;
- ``rank-R.abort``: the rank called ``MPI.Comm.Abort(code)``;
- ``rank-R.status``: ``python -m mpi4py`` will abort with this code at exit (an uncaught
  ``SystemExit``, or exception, whose line it then carries too);
- ``rank-R.mpi``: whether the rank, once it imported ``mpi4py.MPI``, called
  ``MPI_Finalize`` (or reached Python's normal exit, where mpi4py calls it);
- ``rank-R.exit``: its watcher saw it end (exit code or signal, and when);
- ``rank-R.orphan``: its watcher ended while it ran (the rank's stack then);
- ``rank-R.pid``, and the reaper's ``strays*.json``: the processes it killed;
- ``init-HOST.json`` (isolated hosts): the instance's first process (PID 1) ended on a
  signal a process of the instance sent it, and every process there with it.

:mod:`.exits` classifies them.
"""

from __future__ import annotations

import contextlib
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from smmpi.causes import ended

_FRAME_RE = re.compile(r'^\s*File "(?P<file>[^"]+)", line (?P<line>\d+) in ')
_LAUNCH_FRAMES = ("<frozen ", "/mpi4py/", "/threading.py")


@dataclass(frozen=True)
class RankEnd:
    """One rank's end, as its parent process saw it."""

    rank: int
    code: int | None
    signal: int | None
    time: float
    eth0_route: bool = True  # its instance's eth0 still had a route when it ended
    oom_kills: int | None = None  # OOM kills its memory cgroup counted while it ran (None: unknown)

    @property
    def failed(self) -> bool:
        return self.signal is not None or (self.code is not None and self.code != 0)

    @property
    def cause(self) -> str:
        """Its cause's words from the table (:mod:`smmpi.causes`), after ``failed: ``."""
        return ended(self.code, self.signal, self.oom_kills).removeprefix("failed: ")


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
        rank: RankEnd(
            rank,
            _int(r.get("code")),
            _int(r.get("signal")),
            _time(r),
            r.get("eth0_route") is not False,
        )
        for rank, r in _rows(folder, "exit").items()
    }


def read_exceptions(folder: Path) -> dict[int, RankException]:
    """The exception that reached the top of each rank, as first recorded: in the abort-code
    record ``python -m mpi4py`` makes as it catches it, else by the rank's excepthook, which
    runs later (mpirun may kill the rank between the two)."""
    found: dict[int, RankException] = {}
    for suffix in ("exc", "status"):  # the abort-code record, where it names one, wins
        for rank, r in _rows(folder, suffix).items():
            if isinstance(r.get("text"), str):
                found[rank] = RankException(rank, r["text"], _time(r))
    return found


def read_aborts(folder: Path) -> dict[int, RankAbort]:
    return {
        rank: RankAbort(rank, _int(r.get("code")) or 0, _time(r))
        for rank, r in _rows(folder, "abort").items()
    }


def read_statuses(folder: Path) -> dict[int, RankAbort]:
    """The code ``python -m mpi4py`` set to abort with at exit (``sys.exit(N)``: N)."""
    return {
        rank: RankAbort(rank, _int(r.get("code")) or 1, _time(r))
        for rank, r in _rows(folder, "status").items()
    }


def read_unfinalized(folder: Path) -> set[int]:
    """Ranks that imported ``mpi4py.MPI`` and had not called ``MPI_Finalize`` when they ended
    (nor reached Python's normal exit): ``os._exit(0)`` before it, for one."""
    return {rank for rank, r in _rows(folder, "mpi").items() if r.get("finalized") is False}


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
class InitEnd:
    """An isolated instance whose first process (PID 1) ended on a signal that a process of
    the instance sent it (``rank``: the sender's, if it was a rank or a rank's child)."""

    host: str
    signal: int
    pid: int
    rank: int | None
    command: str
    time: float


def _time(row: dict[str, Any]) -> float:
    value = row.get("time")
    return float(value) if isinstance(value, int | float) else 0.0


def read_init_ends(folder: Path) -> list[InitEnd]:
    """The instances whose first process was ended from inside, the first first."""
    found: list[InitEnd] = []
    for path in folder.glob("init-*.json"):
        row = _load(path)
        sig, pid = _int((row or {}).get("signal")), _int((row or {}).get("pid"))
        if row is not None and sig is not None and pid is not None:
            host, command = str(row.get("host", "")), str(row.get("command", ""))
            found.append(InitEnd(host, sig, pid, _int(row.get("rank")), command, _time(row)))
    return sorted(found, key=lambda e: e.time)
