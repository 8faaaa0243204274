"""`smmpi submit` end to end: the real CLI as a subprocess against a moto server over HTTP.

Every CLI run here goes through the network guard (see tests/conftest.py), and
every output is checked for the fake credentials.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import (
    DEMO_FILES,
    ROLE,
    MotoServer,
    make_bucket,
    run_checked,
    s3_state,
    tar_members,
    training_jobs,
)

pytestmark = pytest.mark.aws


def test_submit_demo_3x2_waits_until_completed(
    moto_server: MotoServer, aws: dict[str, str]
) -> None:
    moto_server.boto3_client("s3").create_bucket(
        Bucket="smmpi-test", CreateBucketConfiguration={"LocationConstraint": "us-west-2"}
    )
    result = run_checked(
        [
            "submit",
            "demo",
            "--instances",
            "3",
            "--ppn",
            "2",
            "--role",
            ROLE,
            "--bucket",
            "smmpi-test",
        ],
        aws,
    )
    assert result.returncode == 0, result.stderr
    name = result.stdout.strip().splitlines()[-1]
    assert name.startswith("smmpi-demo-")
    # --wait reports each status with the time since the job was created.
    assert re.search(r"^smmpi: \[\d\d:\d\d\] Completed$", result.stderr, re.M), result.stderr
    assert "INFO" not in result.stderr and "Warning" not in result.stderr  # SDK chatter is off
    assert training_jobs(moto_server) == [name]
    client = moto_server.boto3_client("sagemaker")
    desc = client.describe_training_job(TrainingJobName=name)
    assert desc["TrainingJobStatus"] == "Completed"
    assert desc["ResourceConfig"]["InstanceCount"] == 3
    assert desc["ResourceConfig"]["InstanceType"] == "ml.c5.2xlarge"
    hp = desc["HyperParameters"]
    assert hp["sagemaker_mpi_enabled"] == "true"
    assert hp["sagemaker_mpi_num_of_processes_per_host"] == "2"
    assert hp["sagemaker_mpi_custom_mpi_options"] == '""'
    assert hp["sagemaker_program"] == '"demo.py"'
    key = json.loads(hp["sagemaker_submit_directory"]).removeprefix("s3://smmpi-test/")
    assert re.fullmatch(rf"{name}/source/[0-9a-f]{{8}}/sourcedir\.tar\.gz", key), key
    assert desc["AlgorithmSpecification"]["TrainingImage"] == (
        "763104351884.dkr.ecr.us-west-2.amazonaws.com/tensorflow-training:2.19.0-cpu-py312"
    )
    assert desc["RoleArn"] == ROLE
    tags = client.list_tags(ResourceArn=desc["TrainingJobArn"])["Tags"]
    assert {"Key": "smmpi:managed", "Value": "true"} in tags
    assert s3_state(moto_server) == {"smmpi-test": [key]}
    assert tar_members(moto_server, "smmpi-test", key) == DEMO_FILES


def test_submit_names_and_creates_default_bucket_no_wait_json(
    moto_server: MotoServer, aws: dict[str, str]
) -> None:
    result = run_checked(
        [
            "submit",
            "demo",
            "--instances",
            "3",
            "--ppn",
            "2",
            "--role",
            ROLE,
            "--framework",
            "pytorch",
            "--no-wait",
            "--json",
            "--hyperparameter",
            "epochs=2",
            "--env",
            "FOO=bar",
        ],
        aws,
    )
    assert result.returncode == 0, result.stderr
    out: dict[str, Any] = json.loads(result.stdout)
    name = out["job_name"]
    bucket = "sagemaker-us-west-2-123456789012"
    assert out["arn"].endswith(f"training-job/{name}")
    assert out["request"]["ResourceConfig"]["InstanceCount"] == 3
    state = s3_state(moto_server)
    assert list(state) == [bucket]
    (key,) = state[bucket]
    assert re.fullmatch(rf"{name}/source/[0-9a-f]{{8}}/sourcedir\.tar\.gz", key), key
    desc = moto_server.boto3_client("sagemaker").describe_training_job(TrainingJobName=name)
    assert "/pytorch-training:2.8.0-cpu-py312" in desc["AlgorithmSpecification"]["TrainingImage"]
    assert desc["HyperParameters"]["epochs"] == '"2"'
    assert out["request"]["Environment"] == {"FOO": "bar"}  # moto does not echo it back


def test_no_wait_prints_the_job_name(moto_server: MotoServer, aws: dict[str, str]) -> None:
    env = {**aws, "SMMPI_ROLE": ROLE}
    result = run_checked(
        [
            "submit",
            "demo",
            "--instances",
            "2",
            "--ppn",
            "1",
            "--no-wait",
            "--job-name",
            "my-mpi-job",
        ],
        env,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "my-mpi-job"
    assert training_jobs(moto_server) == ["my-mpi-job"]


def test_ppn_above_vcpus_warns_and_submits(moto_server: MotoServer, aws: dict[str, str]) -> None:
    result = run_checked(
        ["submit", "demo", "--instances", "1", "--ppn", "16", "--role", ROLE, "--no-wait"], aws
    )
    assert result.returncode == 0, result.stderr
    assert "warning: ppn 16 exceeds the 8 vCPUs" in result.stderr
    assert len(training_jobs(moto_server)) == 1


def test_user_script_with_source_dir(
    moto_server: MotoServer, aws: dict[str, str], tmp_path: Path
) -> None:
    make_bucket(moto_server, "user-code")
    src = tmp_path / "proj"
    for rel in (
        "train.py",
        "lib/util.py",
        ".git/HEAD",
        "__pycache__/train.cpython-311.pyc",
        ".venv/pyvenv.cfg",
    ):
        (src / rel).parent.mkdir(parents=True, exist_ok=True)
        (src / rel).write_text("x = 1\n")
    result = run_checked(
        [
            "submit",
            str(src / "train.py"),
            "--source-dir",
            str(src),
            "--instances",
            "2",
            "--ppn",
            "2",
            "--role",
            ROLE,
            "--bucket",
            "user-code",
            "--no-wait",
            "--json",
        ],
        aws,
    )
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout)
    assert out["job_name"].startswith("smmpi-train-")
    key = out["code_uri"].removeprefix("s3://user-code/")
    assert tar_members(moto_server, "user-code", key) == [
        "lib/util.py",
        "smmpi_runtime.py",
        "train.py",
    ]
    hp = out["request"]["HyperParameters"]
    assert hp["sagemaker_program"] == '"train.py"'


def test_input_channels_spot_and_checkpoint_reach_sagemaker(
    moto_server: MotoServer, aws: dict[str, str]
) -> None:
    make_bucket(moto_server, "bkt")
    result = run_checked(
        [
            "submit",
            "demo",
            "--instances",
            "2",
            "--ppn",
            "2",
            "--role",
            ROLE,
            "--bucket",
            "bkt",
            "--input",
            "train=s3://bkt/data/train",
            "--input",
            "val=s3://bkt/data/val",
            "--spot",
            "--max-run",
            "1800",
            "--max-wait",
            "7200",
            "--checkpoint-s3-uri",
            "s3://bkt/ckpt",
            "--no-wait",
            "--json",
        ],
        aws,
    )
    assert result.returncode == 0, result.stderr
    name = json.loads(result.stdout)["job_name"]
    desc = moto_server.boto3_client("sagemaker").describe_training_job(TrainingJobName=name)
    channels = {
        c["ChannelName"]: c["DataSource"]["S3DataSource"]["S3Uri"] for c in desc["InputDataConfig"]
    }
    assert channels == {"train": "s3://bkt/data/train", "val": "s3://bkt/data/val"}
    assert desc["EnableManagedSpotTraining"] is True
    assert desc["StoppingCondition"] == {
        "MaxRuntimeInSeconds": 1800,
        "MaxWaitTimeInSeconds": 7200,
    }
    assert desc["CheckpointConfig"] == {"S3Uri": "s3://bkt/ckpt"}
    code = json.loads(desc["HyperParameters"]["sagemaker_submit_directory"])
    assert s3_state(moto_server) == {"bkt": [code.removeprefix("s3://bkt/")]}


def test_keep_alive_reaches_the_request(moto_server: MotoServer, aws: dict[str, str]) -> None:
    result = run_checked(
        [
            "submit",
            "demo",
            "--instances",
            "2",
            "--ppn",
            "1",
            "--role",
            ROLE,
            "--keep-alive",
            "600",
            "--no-wait",
            "--json",
        ],
        aws,
    )
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout)
    assert out["request"]["ResourceConfig"]["KeepAlivePeriodInSeconds"] == 600
    desc = moto_server.boto3_client("sagemaker").describe_training_job(
        TrainingJobName=out["job_name"]
    )
    assert desc["ResourceConfig"]["KeepAlivePeriodInSeconds"] == 600
