"""A kept local job's route (runners/local/job.py): its folder, its record, its end."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest

from smmpi.api import options
from smmpi.archives import pack
from smmpi.catalog import resolve
from smmpi.errors import BadInput
from smmpi.ops.local_jobs import create_folder
from smmpi.runners.local.job import run
from smmpi.runners.local.records import write_record
from smmpi.toolkit.offline import request_from_program


def _demo(name: str, instances: int = 1, ppn: int = 2) -> tuple[dict[str, Any], bytes]:
    program = resolve("demo")
    request = request_from_program(program, instances, ppn)
    request["TrainingJobName"] = name
    return request, pack(program.files(), "ENTRY")


@pytest.mark.own_mode
def test_an_interrupt_before_the_ranks_start_leaves_no_folder(local_env: dict[str, str]) -> None:
    """The job's first record goes to ``on_start``; stopped there, nothing of it is kept."""
    request, source = _demo("smmpi-job-stopped")
    folder = Path(local_env["SMMPI_LOCAL_JOBS"]) / "smmpi-job-stopped"
    seen: list[dict[str, Any]] = []

    def stop(record: dict[str, Any]) -> None:
        seen.append(dict(record))
        assert json.loads((folder / "describe.json").read_text())["TrainingJobStatus"] == (
            "InProgress"
        )
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run(request, source, options(isolation="processes"), on_start=stop)
    assert [(r["TrainingJobName"], r["TrainingJobStatus"], r["SecondaryStatus"]) for r in seen] == [
        ("smmpi-job-stopped", "InProgress", "Starting")
    ]
    assert seen[0]["LocalHostsDir"] == str(folder / "hosts")
    assert not folder.exists()


@pytest.mark.own_mode
def test_a_name_in_use_is_refused_and_its_folder_left_alone(local_env: dict[str, str]) -> None:
    request, source = _demo("smmpi-job-taken")
    taken = Path(local_env["SMMPI_LOCAL_JOBS"]) / "smmpi-job-taken"
    taken.mkdir(parents=True)
    (taken / "notes.txt").write_text("someone else's\n")
    started: list[dict[str, Any]] = []
    with pytest.raises(BadInput, match="a name no local job has yet"):
        run(request, source, options(isolation="processes"), on_start=started.append)
    assert started == []
    assert sorted(p.name for p in taken.iterdir()) == ["notes.txt"]


@pytest.mark.own_mode
def test_a_completed_job_is_recorded_packed_and_the_oldest_pruned(
    local_env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The file's one run (1 instance x 2 processes, processes mode)."""
    monkeypatch.setenv("SMMPI_LOCAL_JOBS_KEEP", "1")
    old = create_folder("smmpi-job-old")
    write_record(old, {"TrainingJobName": "smmpi-job-old", "TrainingJobStatus": "Completed"})
    request, source = _demo("smmpi-job-done")
    lines: list[str] = []
    out = io.StringIO()
    chosen = options(keep=False, isolation="processes", out=out, err=out, progress=lines.append)
    job = run(request, source, chosen)
    assert (job.status, job.exit_code) == ("Completed", 0), (lines, out.getvalue())
    folder = Path(local_env["SMMPI_LOCAL_JOBS"]) / "smmpi-job-done"
    assert job.folder == folder
    record = json.loads((folder / "describe.json").read_text())
    assert record == job.record
    assert (record["TrainingJobStatus"], record["SecondaryStatus"]) == ("Completed", "Completed")
    assert record["TrainingTimeInSeconds"] >= 0 and record["BillableTimeInSeconds"] == 0
    assert "FailureReason" not in record
    assert job.model_artifact.is_file() and job.output_artifact.is_file()
    assert not (folder / "hosts").exists()  # not kept
    assert (folder / "describe.json").stat().st_mode & 0o777 == 0o600
    assert lines[-4:] == [
        f"smmpi: local job smmpi-job-done Completed in {job.result.seconds:.1f} s",
        f"smmpi: model  {folder / 'model.tar.gz'}",
        f"smmpi: output {folder / 'output.tar.gz'}",
        "smmpi: removed old local job smmpi-job-old (keeping the newest 1)",
    ]
    assert not old.exists()


@pytest.mark.own_mode
@pytest.mark.parametrize("isolation", ["hosts", "processes"])
def test_the_containers_np_is_the_world_a_job_runs_with(
    local_env: dict[str, str], isolation: str
) -> None:
    """sagemaker_mpi_num_processes=3 on 2 x 2 (a request from boto3, say): the toolkit runs
    ``mpirun --host algo-1:2,algo-2:2 -np 3``; the job completes with 3 ranks, as there."""
    request, source = _demo(f"smmpi-np-{isolation}", instances=2, ppn=2)
    request["HyperParameters"]["sagemaker_mpi_num_processes"] = "3"
    lines: list[str] = []
    out = io.StringIO()
    chosen = options(keep=False, isolation=isolation, out=out, err=out, progress=lines.append)
    job = run(request, source, chosen)
    assert (job.status, job.exit_code) == ("Completed", 0), (lines, out.getvalue())
    assert "demo: all 3 ranks verified their results" in out.getvalue()
    assert "2 emulated host(s) x 2 process(es), 3 ranks (sagemaker_mpi_num_processes)" in lines[0]
    said = out.getvalue()  # ranks 0-1 on algo-1, rank 2 on algo-2, by slot
    assert "rank 1 (algo-1)" in said and "rank 2 (algo-2)" in said and "rank 3" not in said


def test_more_ranks_than_the_containers_slots_fail_before_any_rank(
    local_env: dict[str, str],
) -> None:
    request, source = _demo("smmpi-np-over", instances=2, ppn=2)
    request["HyperParameters"]["sagemaker_mpi_num_processes"] = "5"
    out = io.StringIO()
    job = run(request, source, options(keep=False, out=out, err=out, progress=print))
    assert (job.status, job.exit_code) == ("Failed", 1)
    assert out.getvalue() == ""  # no rank ran
    assert job.record["FailureReason"].endswith(
        "smmpi: the job asks for 5 ranks (sagemaker_mpi_num_processes) on 2 x 2 = 4 slots: the "
        "container's mpirun refuses to start them (Open MPI: not enough slots); ask for 4 or "
        "fewer, or more instances or processes per host"
    )
