"""How each rank ended, from the run's own records, and which rank to blame.

One classification for both modes, from what the ranks and their watchers recorded
(:mod:`.rank_records`; never from mpirun's text, which Open MPI 4.1 sometimes loses).

The rank to blame is the one whose failure came first, a failure being
anything but a signal Open MPI sends the others when one fails: SIGTERM, and
SIGKILL once another rank had failed. A SIGKILL that came before any other end
(the kernel's OOM killer, ``kill -9``) is the failure. The words are the table's
(:mod:`smmpi.causes`).
"""

from __future__ import annotations

import math
import signal
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from smmpi.causes import say, signal_text
from smmpi.supervision.rank_records import (
    RankAbort,
    RankEnd,
    RankException,
    RankOrphan,
    Stray,
    read_aborts,
    read_ends,
    read_exceptions,
    read_orphans,
    read_pids,
    read_statuses,
    read_strays,
    read_unfinalized,
)

COLLATERAL = signal.SIGTERM  # what mpirun sends the others when one fails
LATE_COLLATERAL = signal.SIGKILL  # what it sends them next: a cause only when it came first


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
    killed: bool = False  # SIGKILL: collateral unless no other rank had ended before


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
    unfinalized: set[int] = field(default_factory=set)

    @classmethod
    def read(cls, folder: Path) -> Ends:
        return cls(
            read_ends(folder),
            read_exceptions(folder),
            read_strays(folder),
            read_aborts(folder),
            read_orphans(folder),
            read_pids(folder),
            read_statuses(folder),
            read_unfinalized(folder),
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
            return Event(exc.time, rank, say("exception", text=exc.text))
        if rank in self.aborts:
            abort = self.aborts[rank]
            if abort.code == 0:
                return Event(abort.time, rank, say("mpi-abort-zero"))
            return Event(abort.time, rank, say("mpi-abort", code=abort.code))
        if rank in self.statuses:  # sys.exit(N): mpi4py aborts with N at exit
            status = self.statuses[rank]
            return Event(status.time, rank, say("exit-code", code=status.code))
        end = self.ends.get(rank)
        if end is not None:
            if not end.failed:
                return self._unfinalized(end)
            phrase = f"failed: {end.cause}"
            collateral, killed = end.signal == COLLATERAL, end.signal == LATE_COLLATERAL
            return Event(end.time, rank, phrase, collateral, killed)
        if rank in self.orphans:
            return self._orphaned(self.orphans[rank], launcher_signal)
        if rank in self.pids and launcher_signal is not None:
            # no record, and mpirun says the process it started for the rank was signalled:
            # that process (which writes a record whenever it can) was killed, and the rank
            # died before it could record it (mpirun's SIGTERM came first); when is unknown
            return self._orphaned(RankOrphan(rank, math.inf, None), launcher_signal)
        return None

    def _unfinalized(self, end: RankEnd) -> Event | None:
        """Exit code 0 without ``MPI_Finalize``: mpirun then stops the other ranks."""
        if end.rank not in self.unfinalized:
            return None
        return Event(end.time, end.rank, say("unfinalized"))

    def _orphaned(self, orphan: RankOrphan, launcher_signal: int | None) -> Event:
        how = (
            "ended"
            if launcher_signal is None
            else f"was killed by signal {signal_text(launcher_signal)}"
        )
        where = f" (the rank was at {orphan.where})" if orphan.where else ""
        return Event(orphan.time, orphan.rank, say("launcher-killed", how=how, where=where))

    def blame(self, signalled: dict[int, int] | None = None) -> Blame | None:
        """The rank whose failure came first (``signalled``: mpirun's word on how the
        process it started for each rank ended, for a rank whose watcher left no record)."""
        ranks = {*self.ends, *self.exceptions, *self.aborts, *self.orphans, *self.statuses}
        ranks |= set(signalled or {}) & set(self.pids)
        events = [e for r in ranks if (e := self.event(r, (signalled or {}).get(r))) is not None]
        events.sort(key=lambda e: (e.time, e.rank))
        first = next((e for e in events if _cause(e, events)), events[0] if events else None)
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


def _cause(event: Event, events: list[Event]) -> bool:
    """``event`` failed the run: not mpirun's SIGTERM, and a SIGKILL only if no rank had
    ended before it (mpirun's SIGKILL follows another rank's failure; the OOM killer's
    comes first)."""
    if event.collateral:
        return False
    return not event.killed or all(e.time >= event.time for e in events)
