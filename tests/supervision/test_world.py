"""The ranks' world against the job's N x n, from the ranks' records."""

from __future__ import annotations

import json
from pathlib import Path

from smmpi.causes import say
from smmpi.supervision.exits import Ends
from smmpi.supervision.result import EXIT_FAILED, EXIT_OK, Run, RunResult
from smmpi.supervision.world import check_started, check_world, too_many_ranks, world_line
from smmpi.toolkit.shape import JobShape


def _run(folder: Path, instances: int = 2, ppn: int = 2, options: str = "") -> Run:
    shape = JobShape("job", "t.py", instances, ppn, custom_mpi_options=options)
    return Run(shape, "hosts", folder, folder, 0.0, 0)


def _world(folder: Path, rank: int, size: int, host: str) -> None:
    row = {"size": size, "host": host}
    (folder / f"rank-{rank}.world").write_text(json.dumps(row), encoding="utf-8")


def test_a_world_smaller_than_the_job_is_one_line_naming_the_options(tmp_path: Path) -> None:
    for rank in range(2):
        _world(tmp_path, rank, 2, "algo-1")
    run = _run(tmp_path, options="-np 2")
    assert world_line(run, completed=True) == (
        "the job asked for 2 x 2 = 4 ranks, but the container started 2 (algo-1 only; none "
        "on algo-2): its mpirun options '-np 2' change the world"
    )
    result = RunResult(EXIT_OK, "Completed", 1.0, tmp_path, 4)
    check_world(result, run)
    assert (result.exit_code, result.status) == (EXIT_FAILED, "Failed")
    assert result.failure_line == world_line(run, completed=True)


def test_the_jobs_own_world_is_no_line(tmp_path: Path) -> None:
    for rank in range(4):
        _world(tmp_path, rank, 4, f"algo-{rank // 2 + 1}")
    assert world_line(_run(tmp_path), completed=True) is None
    assert world_line(_run(tmp_path / "none"), completed=True) is None  # no records: no line


def test_mpirun_exiting_0_with_no_rank_started_fails(tmp_path: Path) -> None:
    result = RunResult(EXIT_OK, "Completed", 1.0, tmp_path, 4)
    check_started(result, Ends(), _run(tmp_path), 0)
    assert result.exit_code == EXIT_FAILED
    assert result.reason == say("no-rank-started", which="no rank", started=0, world=4)
    assert result.reason == "mpirun exited 0 but no rank started (0 of 4 ranks reported)"


def test_the_containers_np_is_the_world_and_a_host_past_it_needs_no_rank(tmp_path: Path) -> None:
    """sagemaker_mpi_num_processes=1 on 2 x 2: one rank on algo-1 is the whole world."""
    _world(tmp_path, 0, 1, "algo-1")
    shape = JobShape("job", "t.py", 2, 2, processes=1)
    assert world_line(Run(shape, "hosts", tmp_path, tmp_path, 0.0, 0), completed=True) is None
    _world(tmp_path, 1, 2, "algo-1")  # a world of 2: not the container's -np
    line = world_line(Run(shape, "hosts", tmp_path, tmp_path, 0.0, 0), completed=True)
    assert line == (
        "the job asked for 1 ranks (sagemaker_mpi_num_processes) on 2 x 2 slots, but the "
        "container started 1 or 2 (algo-1 only)"
    )


def test_more_ranks_than_slots_fail_before_the_run_as_open_mpi_refuses_them(
    tmp_path: Path,
) -> None:
    assert too_many_ranks(JobShape("job", "t.py", 2, 2, processes=4), tmp_path) is None
    result = too_many_ranks(JobShape("job", "t.py", 2, 2, processes=5), tmp_path)
    assert result is not None
    assert (result.exit_code, result.status, result.world_size) == (EXIT_FAILED, "Failed", 5)
    assert result.failure_line == (
        "the job asks for 5 ranks (sagemaker_mpi_num_processes) on 2 x 2 = 4 slots: the "
        "container's mpirun refuses to start them (Open MPI: not enough slots); ask for 4 or "
        "fewer, or more instances or processes per host"
    )
