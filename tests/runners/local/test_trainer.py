"""What the end of a ModelTrainer request's local job adds (runners/local/trainer.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from smmpi.errors import BadInput
from smmpi.platform.instance_endpoint import VARIABLE as ENDPOINT_VARIABLE
from smmpi.runners.base import RunOptions
from smmpi.runners.local import trainer
from smmpi.runners.local.records import LocalJob
from smmpi.runners.local.short_world import LOCAL_WORLD
from smmpi.supervision.result import RunResult
from smmpi.toolkit.plan import ContainerPlan
from smmpi.toolkit.shape import JobShape


def _plan(api: str = "model-trainer", instances: int = 2, ppn: int = 2) -> ContainerPlan:
    shape = JobShape("smmpi-mt", "", instances, ppn)
    return ContainerPlan(
        {}, shape, ("/bin/bash", "-c", "sm_train.sh"), entrypoint=True, driver_np=instances, api=api
    )


def _failure_file(run_dir: Path) -> Path:
    path = run_dir / "algo-1" / "opt" / "ml" / "output" / "failure"
    path.parent.mkdir(parents=True)
    return path


def test_the_drivers_failure_file_is_read_from_algo_1(tmp_path: Path) -> None:
    assert trainer.driver_failure(tmp_path) is None  # none written
    path = _failure_file(tmp_path)
    path.write_text("\n  \n")
    assert trainer.driver_failure(tmp_path) is None  # blank
    path.write_text("Traceback ...\nRuntimeError: the driver failed\n")
    assert trainer.driver_failure(tmp_path) == "Traceback ...\nRuntimeError: the driver failed"


def test_a_failure_file_that_is_a_link_is_never_read(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.write_text("a file of this machine's\n")
    _failure_file(tmp_path / "hosts").symlink_to(outside)
    assert trainer.driver_failure(tmp_path / "hosts") is None


def test_a_failed_jobs_lines_name_the_rank_and_the_drivers_last_line(tmp_path: Path) -> None:
    result = RunResult(1, "Failed", 1.0, tmp_path, 4, failed_rank=3, failed_host="algo-2")
    result.reason = "ValueError: bad"
    job = LocalJob("smmpi-mt", tmp_path, {"TrainingJobStatus": "Failed"}, result)
    lines = trainer.ending(job, "Traceback ...\nExecuteUserScriptError: exit \x1b[31m1")
    assert (
        lines[0] == f"smmpi: local job smmpi-mt Failed (the instances' files: {tmp_path / 'hosts'})"
    )
    assert lines[1] == f"smmpi: {result.failure_line}" and "rank 3 (algo-2)" in lines[1]
    assert lines[2].startswith(
        "smmpi: the MPI driver's failure file (algo-1): ExecuteUserScriptError"
    )
    assert "\x1b" not in lines[2]  # the file's control characters are not sent to the terminal
    # without a failure file or a rank: the status alone
    bare = LocalJob(
        "smmpi-mt",
        tmp_path,
        {"TrainingJobStatus": "Stopped"},
        RunResult(130, "Interrupted", 1.0, tmp_path, 4),
    )
    assert trainer.ending(bare, None)[1:] == ["smmpi: Stopped"]


def test_remotes_job_runs_under_serve_only() -> None:
    with pytest.raises(BadInput, match="smmpi serve"):
        trainer.check_remote(_plan("remote"), RunOptions())
    trainer.check_remote(_plan("remote"), RunOptions(env={ENDPOINT_VARIABLE: "http://x"}))
    trainer.check_remote(_plan("model-trainer"), RunOptions())


def test_the_short_world_sagemaker_would_run_is_said_and_recorded(tmp_path: Path) -> None:
    lines: list[str] = []
    record: dict[str, object] = {}
    result = RunResult(
        1, "Failed", 1.0, tmp_path, 4, reason="the job asked for 4 ranks but 2 started"
    )
    trainer.settle(_plan(), result, RunOptions(as_sagemaker=True, progress=lines.append), record)
    assert len(lines) == 1 and lines[0].startswith("smmpi: ")
    assert "2 of 2 x 2 = 4 ranks started" in lines[0]
    assert record[LOCAL_WORLD] == lines[0].removeprefix("smmpi: ")


def test_without_as_sagemaker_the_short_world_is_the_runs_failure(tmp_path: Path) -> None:
    lines: list[str] = []
    record: dict[str, object] = {}
    result = RunResult(
        1, "Failed", 1.0, tmp_path, 4, reason="the job asked for 4 ranks but 2 started"
    )
    trainer.settle(_plan(), result, RunOptions(progress=lines.append), record)
    assert lines == [] and LOCAL_WORLD not in record
    assert result.reason is not None and result.reason.endswith("the MPI driver's mpirun has -np 2")
