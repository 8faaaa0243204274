"""What the ranks' records add to a timeout: the rank that failed, why a rank shows no stack."""

from __future__ import annotations

import json
from pathlib import Path

from smmpi.supervision.exits import Ends
from smmpi.supervision.result import EXIT_TIMEOUT, Run, RunResult
from smmpi.supervision.timeouts import lost_network, stack_notes, timed_out
from smmpi.toolkit.shape import JobShape


def _exit(folder: Path, rank: int, code: int | None, sig: int | None, when: float) -> None:
    row = {"rank": rank, "code": code, "signal": sig, "time": when, "eth0_route": rank != 2}
    (folder / f"rank-{rank}.exit").write_text(json.dumps(row), encoding="utf-8")


def test_a_timeout_names_the_rank_that_failed_and_the_host_that_lost_its_network(
    tmp_path: Path,
) -> None:
    _exit(tmp_path, 1, 3, None, 102.5)
    _exit(tmp_path, 2, 0, None, 103.0)
    (tmp_path / "rank-3.pid").write_text("4242")
    run = Run(JobShape("job", "t.py", 2, 2), "hosts", tmp_path, tmp_path, 100.0, None)
    ends = Ends.read(tmp_path)
    result = RunResult(EXIT_TIMEOUT, "TimedOut", 60.0, tmp_path, 4, reason="timed out after 60 s")
    lost = lost_network({}, run)
    assert lost == ["algo-2"]
    timed_out(result, ends, run, lost)
    assert result.reason == (
        "timed out after 60 s; rank 1 (algo-1) had failed 2.5 s in: exit code 3, and the run "
        "did not end; algo-2 lost its network (eth0 has no route)"
    )
    notes = stack_notes(ends, run)
    assert notes[0] == "the rank had not started Python"
    assert notes[1] == "the rank had ended 2.5 s in: exit code 3"
    assert notes[2] == "the rank had ended normally (exit code 0)"
    assert notes[3] == "the rank did not answer SIGUSR1 in time (it may block signals)"
    processes = Run(JobShape("job", "t.py", 2, 2), "processes", tmp_path, tmp_path, 100.0, None)
    assert lost_network({}, processes) == []  # processes mode: no network of its own
