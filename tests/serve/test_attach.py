"""DescribeTrainingJob's whole answer holds to botocore's output shape, with the members SageMaker
always returns; the SDK v2's ``Estimator.attach`` binds to a finished job and to a running one."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest
from botocore.validate import ParamValidator

from tests.serve.serving import (
    ServeProcess,
    demo_source,
    dry_run_request,
    put_source,
    script_source,
    wait_end,
)

pytestmark = pytest.mark.aws

#: A user's script: attach to job NAME with estimator class CLS (``module.Class``); with
#: ``--stop``, stop the job once attach has described it.
ATTACH = """
import importlib
import sys
import sagemaker

name, stop = sys.argv[1], "--stop" in sys.argv
module, _, cls = sys.argv[2].rpartition(".")
Estimator = getattr(importlib.import_module(module), cls)
session = sagemaker.Session()
client = session.sagemaker_client
seen = []

def described(parsed, **_):
    if not seen:
        seen.append(parsed["TrainingJobStatus"])
        if stop:
            client.stop_training_job(TrainingJobName=name)

client.meta.events.register("after-call.sagemaker.DescribeTrainingJob", described)
estimator = Estimator.attach(name, sagemaker_session=session)
print("SEEN", seen[0])
print("JOB", estimator.latest_training_job.name)
print("OUTPUT", estimator.output_path, repr(estimator.output_kms_key))
print("RUN", estimator.instance_count, estimator.instance_type, estimator.max_run)
print("STATUS", client.describe_training_job(TrainingJobName=name)["TrainingJobStatus"])
"""

SLEEPS = """
import time
from mpi4py import MPI
print("rank", MPI.COMM_WORLD.Get_rank(), "sleeping", flush=True)
time.sleep(600)
"""


def _raw_describe(serve: ServeProcess, name: str) -> tuple[dict[str, Any], Any]:
    """DescribeTrainingJob's JSON as serve sent it, and botocore's shape of that answer."""
    client = serve.client("sagemaker")
    bodies: list[bytes] = []
    client.meta.events.register(
        "after-call.sagemaker.DescribeTrainingJob",
        lambda http_response, **_: bodies.append(http_response.content),
    )
    client.describe_training_job(TrainingJobName=name)
    shape = client.meta.service_model.operation_model("DescribeTrainingJob").output_shape
    return json.loads(bodies[-1]), shape


def _check_shape(answer: dict[str, Any], shape: Any, uploaded: bool) -> None:
    """Every member known to the shape, of its type; the required ones there (the model's
    location once the model is uploaded); the enums' values among theirs."""
    report = ParamValidator().validate(answer, shape)
    problems = report.generate_report().splitlines()[1:] if report.has_errors() else []
    if not uploaded:
        problems = [p for p in problems if "Missing required parameter in input" not in p
                    or '"ModelArtifacts"' not in p]  # fmt: skip
    assert problems == [], problems
    assert _off_enum(answer, shape, "") == []
    assert answer.get("ProfilingStatus") in shape.members["ProfilingStatus"].enum


def _off_enum(value: Any, shape: Any, where: str) -> list[str]:
    """Each string member whose value is not among its shape's enum values."""
    if shape.type_name == "string" and shape.enum:
        return [] if value in shape.enum else [f"{where}: {value!r}"]
    found: list[str] = []
    if shape.type_name == "structure" and isinstance(value, dict):
        for name, item in value.items():
            if name in shape.members:
                found += _off_enum(item, shape.members[name], f"{where}.{name}")
    elif shape.type_name == "list" and isinstance(value, list):
        for i, item in enumerate(value):
            found += _off_enum(item, shape.member, f"{where}[{i}]")
    return found


def _always_returned(answer: dict[str, Any]) -> None:
    assert answer["OutputDataConfig"]["KmsKeyId"] == ""
    assert answer["OutputDataConfig"]["CompressionType"] == "GZIP"
    for flag in (
        "EnableNetworkIsolation",
        "EnableInterContainerTrafficEncryption",
        "EnableManagedSpotTraining",
    ):
        assert answer[flag] is False, flag
    assert answer["ProfilingStatus"] == "Disabled"  # the SDK's request disables the profiler
    assert answer["StoppingCondition"]["MaxRuntimeInSeconds"] == 3600  # the request's own


def _attach(serve: ServeProcess, name: str, cls: str, *args: str) -> dict[str, str]:
    done = subprocess.run(
        [sys.executable, "-c", ATTACH, name, cls, *args],
        env=serve.env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, (done.stdout + done.stderr)[-4000:]
    lines = (line.partition(" ") for line in done.stdout.splitlines())
    return {key: value for key, _, value in lines}


@pytest.mark.parametrize(
    "cls", ["sagemaker.estimator.Estimator", "sagemaker.tensorflow.TensorFlow"]
)
def test_attach_to_a_finished_job_and_its_answer_is_sagemakers(
    serve: ServeProcess, bucket: str, job_name: str, cls: str
) -> None:
    request = dry_run_request(serve.env, job_name, bucket)
    put_source(serve, request, demo_source())
    serve.client("sagemaker").create_training_job(**request)
    assert wait_end(serve, job_name)["TrainingJobStatus"] == "Completed"
    seen = _attach(serve, job_name, cls)  # the request is TensorFlow's (smmpi's default)
    assert seen["SEEN"] == "Completed" and seen["JOB"] == job_name
    assert seen["OUTPUT"] == f"s3://{bucket}/ ''"
    assert seen["RUN"] == "1 ml.c5.2xlarge 3600"
    assert seen["STATUS"] == "Completed"
    answer, shape = _raw_describe(serve, job_name)
    _check_shape(answer, shape, uploaded=True)
    _always_returned(answer)


def test_attach_to_a_running_job_waits_for_its_end(
    serve: ServeProcess, bucket: str, job_name: str
) -> None:
    request = dry_run_request(serve.env, job_name, bucket)
    request["HyperParameters"]["sagemaker_program"] = '"train.py"'
    request["OutputDataConfig"]["KmsKeyId"] = "alias/mine"  # what the request gives stays
    request["EnableManagedSpotTraining"] = True
    request["StoppingCondition"]["MaxWaitTimeInSeconds"] = 7200
    request["ProfilerConfig"] = {"S3OutputPath": f"s3://{bucket}/profiler"}  # profiling on
    source = {"S3DataType": "S3Prefix", "S3Uri": f"s3://{bucket}/data/"}
    request["InputDataConfig"] = [{"ChannelName": "train", "DataSource": {"S3DataSource": source}}]
    serve.client("s3").put_object(Bucket=bucket, Key="data/part-0", Body=b"0\n")
    put_source(serve, request, script_source(SLEEPS))
    serve.client("sagemaker").create_training_job(**request)
    serve.wait_for(f"{job_name}: Training")  # printed once the job's record says so
    answer, shape = _raw_describe(serve, job_name)
    assert (answer["TrainingJobStatus"], answer["SecondaryStatus"]) == ("InProgress", "Training")
    _check_shape(answer, shape, uploaded=False)
    assert answer["OutputDataConfig"] == {
        "S3OutputPath": f"s3://{bucket}/",
        "KmsKeyId": "alias/mine",
        "CompressionType": "GZIP",
    }
    assert answer["InputDataConfig"] == [
        {
            "ChannelName": "train",
            "DataSource": {"S3DataSource": {**source, "S3DataDistributionType": "FullyReplicated"}},
            "CompressionType": "None",
            "RecordWrapperType": "None",
        }
    ]
    assert answer["EnableManagedSpotTraining"] is True
    assert answer["ProfilingStatus"] == "Enabled"
    assert answer["EnableNetworkIsolation"] is False
    # attach waits for the job's end: the job is stopped once attach has described it
    seen = _attach(serve, job_name, "sagemaker.estimator.Estimator", "--stop")
    assert seen["SEEN"] == "InProgress" and seen["JOB"] == job_name
    assert seen["OUTPUT"] == f"s3://{bucket}/ 'alias/mine'"
    assert seen["STATUS"] == "Stopped"
