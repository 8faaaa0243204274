"""What a run's records add to a timeout, or to a run whose host lost its network: the rank
that failed before it, why each rank shows no stack, and the hosts whose eth0 has no route."""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from pathlib import Path

from smmpi.causes import say
from smmpi.supervision.exits import Ends
from smmpi.supervision.rank_records import read_ends
from smmpi.supervision.result import Run, RunResult


def timed_out(result: RunResult, ends: Ends, run: Run, lost: list[str]) -> None:
    """Add to a timeout what the records tell: a rank that failed, hosts that lost eth0."""
    first = ends.blame()
    parts = [result.reason or ""]
    event = ends.event(first.rank) if first is not None else None
    if first is not None and event is not None:
        verb, colon, why = first.phrase.partition(":")
        when = f"{verb} {event.time - run.started:.1f} s in{colon}{why}"
        parts.append(
            f"rank {first.rank} ({run.host(first.rank)}) had {when}, and the run did not end"
        )
    parts += [say("lost-network", host=host) for host in lost]
    result.reason = "; ".join(p for p in parts if p)


def name_lost_network(result: RunResult, run: Run) -> None:
    """A run that ended by itself: add the hosts whose eth0 had no route when a rank there
    ended (the ranks' records say so), as a timeout's line does."""
    lost = [say("lost-network", host=host) for host in lost_network({}, run)]
    if lost and result.phrase is not None:
        result.phrase = "; ".join([result.phrase, *lost])
    if lost:
        result.reason = "; ".join([result.reason or "", *lost]).removeprefix("; ")


def stack_notes(ends: Ends, run: Run) -> dict[int, str]:
    """Why a rank shows no stack at a timeout, from its records."""
    notes: dict[int, str] = {}
    for rank in range(run.shape.world_size):
        event = ends.event(rank)
        when = f"{event.time - run.started:.1f} s in" if event is not None else ""
        if event is not None and rank in ends.orphans and rank not in ends.ends:
            notes[rank] = f"the process that started it was killed {when}, and the rank did "
            notes[rank] += "not answer SIGUSR1 in time"
        elif event is not None:
            notes[rank] = f"the rank had ended {when}: {event.phrase.removeprefix('failed: ')}"
        elif rank in ends.ends:
            notes[rank] = "the rank had ended normally (exit code 0)"
        elif rank not in ends.pids:
            notes[rank] = "the rank had not started Python"
        else:
            notes[rank] = "the rank did not answer SIGUSR1 in time (it may block signals)"
    return notes


def lost_network(pids: Mapping[int, int], run: Run) -> list[str]:
    """Emulated hosts (isolated mode) whose eth0 has no route: seen from a live rank there,
    or recorded by a rank's watcher there when the rank ended."""
    if run.mode != "hosts":
        return []
    unrouted = {run.host(e.rank) for e in read_ends(run.record_dir).values() if not e.eth0_route}
    lost: list[str] = []
    for host in run.shape.hosts:
        if host in unrouted:
            lost.append(host)
            continue
        ranks = [r for r in pids if run.host(r) == host]
        for rank in ranks:
            with contextlib.suppress(OSError):
                table = Path(f"/proc/{pids[rank]}/net/route").read_text()
                if not any(line.split()[:1] == ["eth0"] for line in table.splitlines()):
                    lost.append(host)
                break
    return lost
