"""A local run's end (RunResult) and what the verdict reads of the run (Run)."""

from __future__ import annotations

from pathlib import Path

from smmpi.supervision.result import EXIT_FAILED, Run, RunResult
from smmpi.toolkit.shape import JobShape


def test_the_failure_line_names_rank_host_and_cause_or_says_the_reason(tmp_path: Path) -> None:
    result = RunResult(EXIT_FAILED, "Failed", 1.0, tmp_path, 4, 3, "algo-2", "exit code 3")
    assert result.failure_line == "rank 3 (algo-2) failed: exit code 3"
    result.phrase = "called MPI_Abort(0)"
    assert result.failure_line == "rank 3 (algo-2) called MPI_Abort(0)"
    alone = RunResult(EXIT_FAILED, "Failed", 1.0, tmp_path, 4, reason="mpirun exited with code 1")
    assert alone.failure_line == "mpirun exited with code 1"


def test_a_rank_is_on_the_host_the_container_maps_it_to(tmp_path: Path) -> None:
    run = Run(JobShape("job", "t.py", 3, 2), "hosts", tmp_path, tmp_path, 0.0, 1)
    assert [run.host(r) for r in range(6)] == ["algo-1"] * 2 + ["algo-2"] * 2 + ["algo-3"] * 2
