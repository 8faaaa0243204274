"""`smmpi status` and `smmpi stop`, bad and unknown job names, missing credentials or region."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber

from smmpi.aws import errors as aws_errors
from smmpi.aws import facts
from smmpi.errors import BadInput
from smmpi.ops import status as ops_status
from tests.helpers import MotoServer, smmpi
from tests.ops.jobs import BUCKET, JOB, SECRET, cli_env, create_job, run

pytestmark = pytest.mark.aws


def test_status(moto_server: MotoServer, env: dict[str, str]) -> None:
    create_job(moto_server)
    done = run(["status", JOB], cli_env(env, moto_server))
    assert done.returncode == 0, done.stderr
    rows = {line.split()[0]: line.split(None, 1)[1] for line in done.stdout.splitlines()}
    assert rows["job"] == JOB
    assert rows["status"] == "Completed"
    assert "progress" not in rows
    assert rows["instances"] == "3 x ml.c5.2xlarge"
    assert rows["processes"] == "2 per host, 6 in all"
    assert rows["model"] == f"s3://{BUCKET}/jobs/{JOB}/output/model.tar.gz"
    as_json = json.loads(run(["status", JOB, "--json"], cli_env(env, moto_server)).stdout)
    assert as_json["status"] == "Completed"
    assert as_json["instance_count"] == 3
    assert as_json["processes_per_host"] == 2
    assert as_json["world"] == 6  # the "6 in all" of the text, as a number


def test_stop_of_a_finished_job_changes_nothing(
    moto_server: MotoServer, env: dict[str, str]
) -> None:
    create_job(moto_server)
    done = run(["stop", JOB], cli_env(env, moto_server))
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"{JOB} already Completed; nothing to stop"


def _stubbed_sagemaker() -> tuple[Any, Stubber]:
    sm = boto3.client(
        "sagemaker", region_name="us-west-2", aws_access_key_id="x", aws_secret_access_key="y"
    )
    return sm, Stubber(sm)


def test_stop_of_a_running_job_requests_the_stop() -> None:
    """moto cannot hold a job InProgress, so the request is checked on a stubbed client."""
    sm, stub = _stubbed_sagemaker()
    described = {
        "TrainingJobName": JOB,
        "TrainingJobArn": "arn:x",
        "TrainingJobStatus": "InProgress",
        "SecondaryStatus": "Training",
        "CreationTime": 0,
        "AlgorithmSpecification": {"TrainingInputMode": "File"},
        "ResourceConfig": {"VolumeSizeInGB": 30},
        "StoppingCondition": {},
        "ModelArtifacts": {"S3ModelArtifacts": "s3://b/k"},
    }
    stub.add_response("describe_training_job", described, {"TrainingJobName": JOB})
    stub.add_response("stop_training_job", {}, {"TrainingJobName": JOB})
    with stub:
        message = ops_status.stop(sm, JOB)
    stub.assert_no_pending_responses()
    assert message.startswith(f"{JOB}: stop requested (was InProgress)")


def test_stop_of_a_stopping_job_sends_nothing() -> None:
    sm, stub = _stubbed_sagemaker()
    stub.add_response(
        "describe_training_job",
        {
            "TrainingJobName": JOB,
            "TrainingJobArn": "arn:x",
            "TrainingJobStatus": "Stopping",
            "SecondaryStatus": "Stopping",
            "CreationTime": 0,
            "AlgorithmSpecification": {"TrainingInputMode": "File"},
            "ResourceConfig": {"VolumeSizeInGB": 30},
            "StoppingCondition": {},
            "ModelArtifacts": {"S3ModelArtifacts": "s3://b/k"},
        },
        {"TrainingJobName": JOB},
    )
    with stub:
        assert ops_status.stop(sm, JOB) == f"{JOB} is already stopping"
    stub.assert_no_pending_responses()


def test_real_sagemaker_not_found_message_is_an_unknown_job() -> None:
    sm, stub = _stubbed_sagemaker()
    stub.add_client_error(
        "describe_training_job", "ValidationException", "Requested resource not found.", 400
    )
    with stub, pytest.raises(aws_errors.UnknownJob) as err:
        ops_status.describe(sm, "nope")
    assert err.value.exit_code == 2
    assert str(err.value) == "unknown job: 'nope': no such training job in us-west-2"


@pytest.mark.parametrize("command", [["status"], ["stop"], ["logs"], ["fetch"]])
@pytest.mark.parametrize("name", ["bad_name", "a.b", "x" * 64, "trailing-", "_leading"])
def test_bad_job_name_is_one_line_exit_2(
    command: list[str], name: str, env: dict[str, str]
) -> None:
    done = run([*command, name], env)  # no AWS at all: the name is refused first
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        f"smmpi: invalid job name: {name!r}; allowed: {facts.JOB_NAME_RULE}"
    ]


@pytest.mark.parametrize("command", [["status"], ["stop"], ["logs"], ["fetch"], ["logs", "-f"]])
def test_unknown_job_is_one_line_exit_2(
    command: list[str], moto_server: MotoServer, env: dict[str, str], tmp_path: Path
) -> None:
    create_job(moto_server, "some-other-job")
    done = smmpi([*command, "no-such-job"], cli_env(env, moto_server), cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip().splitlines() == [
        "smmpi: unknown job: 'no-such-job': no such training job in us-west-2"
    ]
    assert not (tmp_path / "no-such-job").exists()


def test_no_credentials_is_one_line(moto_server: MotoServer, env: dict[str, str]) -> None:
    no_keys = {**env, "AWS_ENDPOINT_URL": moto_server.url, "AWS_REGION": "us-west-2"}
    done = run(["status", JOB], no_keys)
    assert done.returncode == 2
    assert len(done.stderr.strip().splitlines()) == 1
    assert done.stderr.startswith("smmpi: no AWS credentials found")


def test_no_region_is_one_line(env: dict[str, str]) -> None:
    done = run(["status", JOB], {**env, "AWS_ACCESS_KEY_ID": "a", "AWS_SECRET_ACCESS_KEY": SECRET})
    assert done.returncode == 2
    assert done.stderr.strip().startswith("smmpi: no AWS region")


def test_check_name_accepts_sagemaker_names() -> None:
    assert facts.check_job_name("a") == "a"
    assert facts.check_job_name("tensorflow-training-2021-05-11-19-56-11-281")
    assert facts.check_job_name("a--b" + "c" * 59)
    with pytest.raises(BadInput):
        facts.check_job_name("-leading-hyphen")
    with pytest.raises(BadInput):
        facts.check_job_name("a" * 64)


def test_status_of_a_running_job_shows_its_phase_and_progress() -> None:
    sm, stub = _stubbed_sagemaker()
    stub.add_response(
        "describe_training_job",
        {
            "TrainingJobName": JOB,
            "TrainingJobArn": "arn:x",
            "TrainingJobStatus": "InProgress",
            "SecondaryStatus": "Downloading",
            "CreationTime": datetime(2026, 1, 1, tzinfo=timezone.utc),
            "AlgorithmSpecification": {"TrainingInputMode": "File"},
            "ResourceConfig": {
                "InstanceType": "ml.c5.2xlarge",
                "InstanceCount": 3,
                "VolumeSizeInGB": 30,
            },
            "StoppingCondition": {},
            "ModelArtifacts": {"S3ModelArtifacts": "s3://b/k"},
            "SecondaryStatusTransitions": [
                {
                    "Status": "Starting",
                    "StartTime": datetime(2026, 1, 1, tzinfo=timezone.utc),
                    "StatusMessage": "Preparing the instances for training",
                },
                {
                    "Status": "Downloading",
                    "StartTime": datetime(2026, 1, 1, 0, 1, tzinfo=timezone.utc),
                    "StatusMessage": "Downloading input data",
                },
            ],
        },
        {"TrainingJobName": JOB},
    )
    with stub:
        st = ops_status.job_status(sm, JOB)
    rows = dict(line.split(None, 1) for line in st.lines())
    assert rows["status"] == "InProgress (Downloading)"
    assert rows["progress"] == "Downloading input data"
    assert not st.done
    assert rows["created"] == "2026-01-01T00:00:00+00:00"


def test_a_local_job_is_its_records_status_with_its_times(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``smmpi status`` of a local job (submit --local): its describe.json, whose times are
    ISO text, read as a submitted job's DescribeTrainingJob; its own -np is its world."""
    from smmpi.ops import local_jobs, private_files

    monkeypatch.setenv("SMMPI_LOCAL_JOBS", str(tmp_path / "jobs"))
    folder = local_jobs.create_folder("here")
    record = {
        "TrainingJobName": "here",
        "TrainingJobStatus": "Completed",
        "ResourceConfig": {"InstanceType": "ml.c5.xlarge", "InstanceCount": 2},
        "HyperParameters": {
            "sagemaker_mpi_num_of_processes_per_host": "2",
            "sagemaker_mpi_num_processes": "3",
        },
        "CreationTime": "2026-11-27T10:00:00+00:00",
        "TrainingStartTime": "2026-11-27T10:00:01+00:00",
        "TrainingEndTime": "2026-11-27T10:00:05+00:00",
        "FinalMetricDataList": [{"MetricName": "loss", "Value": 0.5, "Timestamp": "x"}],
    }
    private_files.write_private(folder / "describe.json", json.dumps(record))
    st = ops_status.local_status("here")
    assert st is not None
    assert st.started == datetime(2026, 11, 27, 10, 0, 1, tzinfo=timezone.utc)
    assert (st.elapsed(), st.world, st.metrics) == (4.0, 3, (("loss", 0.5),))
    assert "processes  2 per host, 3 in all" in st.lines()
    assert ops_status.local_status("not-here") is None
