"""A driver's world after its run: said as SageMaker runs it, or named in smmpi's failure."""

from __future__ import annotations

from pathlib import Path

from smmpi.runners.local.short_world import settle_world
from smmpi.supervision.result import RunResult


def _result(reason: str | None = None, rank: int | None = None) -> RunResult:
    return RunResult(1, "Failed", 1.0, Path("/nonexistent"), 4, failed_rank=rank, reason=reason)


def test_as_sagemaker_says_the_short_world_and_leaves_the_result() -> None:
    result = _result()
    line = settle_world(result, 2, 2, 2, True, "model-trainer")
    assert line is not None and "2 of 2 x 2 = 4 ranks started" in line
    assert result.reason is None


def test_smmpis_world_check_names_the_drivers_np() -> None:
    result = _result("the job asked for 4 ranks but 2 started")
    assert settle_world(result, 2, 2, 2, False, "model-trainer") is None
    assert (
        result.reason
        == "the job asked for 4 ranks but 2 started: the MPI driver's mpirun has -np 2"
    )


def test_a_rank_failure_is_left_as_it_is() -> None:
    result = _result("ZeroDivisionError", rank=1)
    settle_world(result, 2, 2, 2, False, "model-trainer")
    assert result.reason == "ZeroDivisionError"
