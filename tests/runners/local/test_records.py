"""A local job's record (runners/local/records.py): its describe.json, its end, its interrupts."""

from __future__ import annotations

import json
import os
import signal
import tarfile
from pathlib import Path

import pytest

from smmpi.errors import BadInput
from smmpi.ops.local_jobs import create_folder
from smmpi.runners.local.records import (
    Interrupted,
    finish,
    interruptible,
    load_record,
    new_record,
    write_record,
)
from smmpi.runners.local.supervise import EXIT_FAILED, EXIT_OK, RunResult
from smmpi.toolkit.hosts import HostDirs

REQUEST = {
    "HyperParameters": {"sagemaker_program": '"train.py"'},
    "AlgorithmSpecification": {"TrainingImage": "tensorflow-training:2.19.0-cpu-py312"},
    "ResourceConfig": {"InstanceCount": 2, "InstanceType": "ml.c5.2xlarge"},
    "Environment": {"A": "1"},
}


def _hosts(folder: Path) -> list[HostDirs]:
    """Two instances' trees, each with a model file and an output data file."""
    hosts = []
    for i in (1, 2):
        dirs = HostDirs(folder / "hosts" / f"algo-{i}" / "opt" / "ml")
        dirs.model.mkdir(parents=True)
        dirs.output_data.mkdir(parents=True)
        (dirs.model / f"model-{i}.txt").write_text(f"model {i}\n")
        (dirs.output_data / f"out-{i}.txt").write_text(f"out {i}\n")
        (dirs.output / "success").write_text("")
        hosts.append(dirs)
    return hosts


def _members(archive: Path) -> list[str]:
    with tarfile.open(archive, "r:gz") as tar:
        return sorted(tar.getnames())


def test_a_new_record_is_in_progress_with_the_requests_fields(tmp_path: Path) -> None:
    record = new_record(REQUEST, "smmpi-job", tmp_path / "hosts")
    assert record["TrainingJobName"] == "smmpi-job"
    assert record["TrainingJobArn"] == "local:training-job/smmpi-job"
    assert (record["TrainingJobStatus"], record["SecondaryStatus"]) == ("InProgress", "Starting")
    assert record["ResourceConfig"] == REQUEST["ResourceConfig"]
    assert record["Environment"] == {"A": "1"}
    assert record["InputDataConfig"] == []
    assert record["LocalHostsDir"] == str(tmp_path / "hosts")
    assert "CheckpointConfig" not in record
    with_checkpoints = {**REQUEST, "CheckpointConfig": {"S3Uri": "s3://b/ckpt"}}
    assert new_record(with_checkpoints, "x", tmp_path)["CheckpointConfig"] == {
        "S3Uri": "s3://b/ckpt"
    }


def test_a_written_record_is_private_and_loads_by_the_jobs_name(
    local_env: dict[str, str],
) -> None:
    folder = create_folder("smmpi-recorded")
    write_record(folder, {"TrainingJobStatus": "Completed", "When": Path("/x")})
    assert (folder / "describe.json").stat().st_mode & 0o777 == 0o600
    assert load_record("smmpi-recorded") == {"TrainingJobStatus": "Completed", "When": "/x"}
    with pytest.raises(BadInput, match="smmpi-unknown"):
        load_record("smmpi-unknown")


def test_a_completed_job_packs_model_and_output_and_is_recorded(tmp_path: Path) -> None:
    folder = tmp_path / "job"
    hosts = _hosts(folder)
    record = {"TrainingJobStatus": "Completed", "SecondaryStatus": "Completed"}
    result = RunResult(EXIT_OK, "Completed", 1.0, folder / "hosts", 4)
    finish(record, REQUEST, hosts, folder, None, result)
    assert _members(folder / "model.tar.gz") == ["model-1.txt", "model-2.txt"]
    # output/data only, as data/...: not the instance's success file
    assert _members(folder / "output.tar.gz") == ["data/out-1.txt", "data/out-2.txt"]
    saved = json.loads((folder / "describe.json").read_text())
    assert saved["ModelArtifacts"] == {"S3ModelArtifacts": (folder / "model.tar.gz").as_uri()}
    assert saved["OutputArtifacts"] == (folder / "output.tar.gz").as_uri()
    assert "FailureReason" not in saved and saved["TrainingJobStatus"] == "Completed"


def test_a_failed_job_gets_no_model_but_its_output_and_reason(tmp_path: Path) -> None:
    folder = tmp_path / "job"
    hosts = _hosts(folder)
    record = {"TrainingJobStatus": "Failed", "SecondaryStatus": "Failed"}
    result = RunResult(EXIT_FAILED, "Failed", 1.0, folder / "hosts", 4, reason="boom")
    finish(record, REQUEST, hosts, folder, "AlgorithmError: boom", result)
    assert not (folder / "model.tar.gz").exists()
    assert _members(folder / "output.tar.gz") == ["data/out-1.txt", "data/out-2.txt"]
    saved = json.loads((folder / "describe.json").read_text())
    assert saved["FailureReason"] == "AlgorithmError: boom"
    assert "ModelArtifacts" not in saved


def test_a_model_folder_linked_out_of_its_instance_fails_a_completed_job(tmp_path: Path) -> None:
    folder = tmp_path / "job"
    hosts = _hosts(folder)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("not the job's\n")
    for child in hosts[1].model.iterdir():
        child.unlink()
    hosts[1].model.rmdir()
    hosts[1].model.symlink_to(outside)
    record = {"TrainingJobStatus": "Completed", "SecondaryStatus": "Completed"}
    result = RunResult(EXIT_OK, "Completed", 1.0, folder / "hosts", 4)
    finish(record, REQUEST, hosts, folder, None, result)
    assert not (folder / "model.tar.gz").exists()
    saved = json.loads((folder / "describe.json").read_text())
    assert saved["TrainingJobStatus"] == "Failed"
    assert saved["FailureReason"] and "model" in saved["FailureReason"]
    assert (result.exit_code, result.status) == (EXIT_FAILED, "Failed")
    assert result.reason == saved["FailureReason"]


def test_sigterm_before_the_job_is_named_ends_in_interrupted_and_restores_handlers() -> None:
    before = signal.getsignal(signal.SIGTERM)
    with pytest.raises(Interrupted, match="nothing of it was kept") as caught:
        with interruptible():
            os.kill(os.getpid(), signal.SIGTERM)
    assert caught.value.exit_code == 130
    assert signal.getsignal(signal.SIGTERM) is before


@pytest.mark.parametrize(
    ("status", "said", "kept"),
    [("InProgress", "nothing of it was kept", False), ("Stopped", "had ended: Stopped", True)],
)
def test_an_interrupt_removes_a_job_that_never_ran_and_keeps_one_that_ended(
    local_env: dict[str, str], status: str, said: str, kept: bool
) -> None:
    folder = create_folder("smmpi-interrupted")
    write_record(folder, {"TrainingJobStatus": status})
    with pytest.raises(Interrupted, match=said):
        with interruptible() as stops:
            stops.name = "smmpi-interrupted"
            raise KeyboardInterrupt
    assert (folder / "describe.json").is_file() == kept
    assert folder.exists() == kept


def test_an_interrupt_the_sdk_swallowed_still_ends_the_command() -> None:
    """The SDK's wrapper turned the interrupt into another error (or none): the one that came
    is remembered, and the command ends as interrupted all the same."""
    with pytest.raises(Interrupted):
        with interruptible() as stops:
            try:
                os.kill(os.getpid(), signal.SIGINT)
            except KeyboardInterrupt:
                pass  # swallowed, as the SDK's telemetry wrapper does
            stops.check()
    with pytest.raises(Interrupted):
        with interruptible() as stops:
            try:
                os.kill(os.getpid(), signal.SIGINT)
            except KeyboardInterrupt:
                raise ValueError("the SDK's own error") from None
