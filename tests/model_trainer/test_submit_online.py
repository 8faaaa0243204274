"""``smmpi submit --api model-trainer``: the request ModelTrainer builds, submitted to a real
moto server over HTTP, equal to what ``--dry-run`` prints, with the channels it lists."""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import (
    ROLE,
    ROOT,
    MotoServer,
    make_bucket,
    normalise,
    run_checked,
    s3_state,
    training_jobs,
)
from tests.sdk.sdk3 import sdk3_python

pytestmark = pytest.mark.aws

ARGS = ["demo", "-N", "2", "-n", "2", "--api", "model-trainer", "--role", ROLE]
MORE = ["--hyperparameter", "epochs=2", "--env", "FOO=bar", "--mpi-options", "-x FOO"]


def _channel_keys(request: dict[str, Any], channels: dict[str, list[str]]) -> dict[str, str]:
    """Each file the dry run lists -> the S3 key it goes to (the channel's URI / its path)."""
    uris = {
        c["ChannelName"]: c["DataSource"]["S3DataSource"]["S3Uri"]
        for c in request["InputDataConfig"]
    }
    keys = {}
    for name, files in channels.items():
        prefix = uris[name].split("/", 3)[3].rstrip("/")
        keys.update({f"{prefix}/{f}": f"{name}/{f}" for f in files})
    return keys


@pytest.mark.parametrize("sdk", ["v2", "v3"])
def test_the_submitted_request_and_uploads_are_the_dry_runs(
    moto_server: MotoServer, aws: dict[str, str], sdk: str
) -> None:
    if sdk == "v3":  # SDK v3's sagemaker.train builds the request, in its own venv
        aws = {**aws, "SMMPI_SDK3_PYTHON": sdk3_python()}
    make_bucket(moto_server, "smmpi-test")
    args = [*ARGS, "--bucket", "smmpi-test", *MORE, "--json"]
    dry = run_checked(["submit", *args, "--dry-run"], aws)
    assert dry.returncode == 0, dry.stderr
    plan = json.loads(dry.stdout)
    done = run_checked(["submit", *args], aws)  # --wait: followed to its end
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    name = out["job_name"]
    assert out["status"] == "Completed" and name.startswith("smmpi-demo-")
    assert normalise(out["request"]) == normalise(plan["request"])
    assert training_jobs(moto_server) == [name]
    sm = moto_server.boto3_client("sagemaker")
    desc = sm.describe_training_job(TrainingJobName=name)
    assert desc["RoleArn"] == ROLE
    assert desc["ResourceConfig"]["InstanceCount"] == 2
    assert desc["InputDataConfig"] == out["request"]["InputDataConfig"]
    assert desc["AlgorithmSpecification"]["TrainingImage"] == (
        "763104351884.dkr.ecr.us-west-2.amazonaws.com/tensorflow-training:2.19.0-cpu-py312"
    )
    assert desc["HyperParameters"] == {"epochs": "2"}
    tags = sm.list_tags(ResourceArn=desc["TrainingJobArn"])["Tags"]
    assert {"Key": "smmpi:managed", "Value": "true"} in tags
    # the objects in S3 are exactly the files the dry run lists, channel by channel
    keys = _channel_keys(out["request"], plan["channels"])
    assert sorted(s3_state(moto_server)["smmpi-test"]) == sorted(keys)
    s3 = moto_server.boto3_client("s3")

    def body(rel: str) -> bytes:
        key = next(k for k, v in keys.items() if v == rel)
        data: bytes = s3.get_object(Bucket="smmpi-test", Key=key)["Body"].read()
        return data

    assert body("code/demo.py") == (ROOT / "entry_points" / "demo.py").read_bytes()
    assert out["code_uri"].endswith(f"/{name}/input/code")
    # the world-size fix rides in the driver's own config, as the dry run's mpirun shows
    distributed = json.loads(body("sm_drivers/distributed.json"))
    assert distributed["process_count_per_node"] == 2
    assert distributed["mpi_additional_options"] == ["-x", "FOO", "-np", "4"]
    line = plan["mpirun"]
    assert [line[i + 1] for i, word in enumerate(line) if word == "-np"][-1] == "4"
    sourcecode = json.loads(body("sm_drivers/sourcecode.json"))
    assert sourcecode["entry_script"] == "demo.py"


def test_status_jobs_and_the_default_bucket(moto_server: MotoServer, aws: dict[str, str]) -> None:
    done = run_checked(["submit", *ARGS, "--no-wait"], aws)
    assert done.returncode == 0, done.stderr
    name = done.stdout.strip()
    assert "created bucket s3://sagemaker-us-west-2-123456789012" in done.stderr
    assert "smmpi: note: smmpi added '-np 4' to mpi_additional_options" in done.stderr
    assert f"created training job {name} (2 x ml.c5.2xlarge, 2 processes each, world size 4)" in (
        done.stderr
    )
    objects = s3_state(moto_server)["sagemaker-us-west-2-123456789012"]
    assert objects and all(k.startswith(f"smmpi-demo/{name}/input/") for k in objects)
    status = run_checked(["status", name, "--json"], aws)
    assert status.returncode == 0 and json.loads(status.stdout)["status"] == "Completed"
    jobs = run_checked(["jobs"], aws)
    assert name in jobs.stdout


@pytest.mark.parametrize(
    ("args", "line"),
    [
        (
            ["--job-name", "mine-1", "--bucket", "smmpi-test"],
            "smmpi: invalid job_name: 'mine-1'; allowed: none with api model-trainer",
        ),
        (
            ["--bucket", "no-such-bucket"],
            "smmpi: bucket 'no-such-bucket' does not exist in us-west-2",
        ),
        (
            ["--bucket", "smmpi-test", "--input", "data=s3://missing-bucket/x"],
            "smmpi: invalid input data: 's3://missing-bucket/x'; allowed: an S3 URI in a bucket",
        ),
        (
            ["--bucket", "smmpi-test", "--input", "data=file://{tmp}"],
            "smmpi: invalid inputs.data: 'file://{tmp}'; allowed: an s3://bucket/prefix URI",
        ),
        (
            ["--bucket", "smmpi-test", "--exact"],
            "smmpi: invalid --exact: True; allowed: only with --local",
        ),
    ],
)
def test_bad_input_is_one_line_exit_2_and_creates_nothing(
    moto_server: MotoServer, aws: dict[str, str], args: list[str], line: str, tmp_path: Path
) -> None:
    make_bucket(moto_server, "smmpi-test")
    args = [a.replace("{tmp}", str(tmp_path)) for a in args]
    line = line.replace("{tmp}", str(tmp_path))
    done = run_checked(["submit", *ARGS, *args], aws)
    assert done.returncode == 2, done.stderr
    assert done.stdout == ""
    (said,) = done.stderr.strip().splitlines()
    assert said.startswith(line), said
    assert s3_state(moto_server) == {"smmpi-test": []}
    assert training_jobs(moto_server) == []


def test_a_refused_create_removes_every_upload(
    moto_server: MotoServer, aws: dict[str, str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """SageMaker refusing CreateTrainingJob leaves none of this submit's objects behind."""
    from botocore.awsrequest import AWSResponse, HTTPHeaders

    from smmpi.runners.sagemaker import trainer
    from smmpi.runners.sagemaker.job import SubmitFailed
    from smmpi.spec import MPIJob

    for key, value in aws.items():
        monkeypatch.setenv(key, value)
    make_bucket(moto_server, "smmpi-test")
    sessions = trainer.boto_session

    def refusing(*args: Any, **kwargs: Any) -> Any:
        boto = sessions(*args, **kwargs)

        def refuse(**_: Any) -> Any:
            error = {"Error": {"Code": "ValidationException", "Message": "no capacity here"}}
            return AWSResponse("", 400, HTTPHeaders(), None), error

        boto.events.register("before-call.sagemaker.CreateTrainingJob", refuse)
        return boto

    monkeypatch.setattr(trainer, "boto_session", refusing)
    job = MPIJob("demo", instances=2, ppn=1, role=ROLE, bucket="smmpi-test", api="model-trainer")
    with pytest.raises(SubmitFailed, match=r"CreateTrainingJob refused: .*no capacity here"):
        job.submit(wait=False)
    assert s3_state(moto_server) == {"smmpi-test": []}
    assert training_jobs(moto_server) == []


def test_a_taken_name_is_one_line_and_uploads_nothing(
    moto_server: MotoServer, aws: dict[str, str]
) -> None:
    """ModelTrainer names each job BASE-TIMESTAMP (to the second): the name it picks is
    checked before anything is uploaded."""
    make_bucket(moto_server, "smmpi-test")
    sm = moto_server.boto3_client("sagemaker")
    taken = {"smmpi:managed": "true"}
    start = datetime.now()
    for second in range(90):  # every name the submit below may pick
        stamp = (start + timedelta(seconds=second)).strftime("%Y%m%d%H%M%S")
        sm.create_training_job(
            TrainingJobName=f"mt-taken-{stamp}",
            AlgorithmSpecification={"TrainingImage": "x", "TrainingInputMode": "File"},
            RoleArn=ROLE,
            OutputDataConfig={"S3OutputPath": "s3://smmpi-test/out"},
            ResourceConfig={"InstanceType": "ml.c5.2xlarge", "InstanceCount": 1},
            StoppingCondition={"MaxRuntimeInSeconds": 60},
            Tags=[{"Key": k, "Value": v} for k, v in taken.items()],
        )
    args = ["--bucket", "smmpi-test", "--base-job-name", "mt-taken"]
    done = run_checked(["submit", *ARGS, *args], aws)
    assert done.returncode == 2, done.stderr
    (said,) = done.stderr.strip().splitlines()
    assert said.startswith("smmpi: job name 'mt-taken-"), said
    assert said.endswith(
        "(SageMaker never reuses a name): submit again in a second, or pick another --base-job-name"
    ), said
    assert s3_state(moto_server) == {"smmpi-test": []}
    assert len(training_jobs(moto_server)) == 90
