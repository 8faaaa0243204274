"""The dry run: the request captured from the SDK's own fit, offline, against golden files."""

from __future__ import annotations

import json
import re
import time

import pytest

from smmpi.errors import BadInput
from smmpi.spec import MPIJob
from smmpi.toolkit import request as toolkit_request
from tests.helpers import GOLDEN, check_golden, normalise

ROLE = "arn:aws:iam::123456789012:role/x"


JOB_NAME = "smmpi-demo-GOLDEN"


pytestmark = pytest.mark.usefixtures("no_aws_settings")


@pytest.mark.parametrize("framework", ["tensorflow", "pytorch"])
def test_golden_demo_3x2(framework: str) -> None:
    job = MPIJob(
        "demo",
        instances=3,
        ppn=2,
        framework=framework,
        role=ROLE,
        bucket="smmpi-golden-bucket",
        region="us-west-2",
    )
    result = job.plan(job_name=JOB_NAME)
    check_golden(f"demo_3x2_{framework}.request.json", result.request)
    check_golden(f"demo_3x2_{framework}.mpirun.json", result.mpirun)
    assert result.world_size == 6
    assert result.placeholders == []


def test_generated_job_name_is_normalised() -> None:
    result = MPIJob("demo", instances=3, ppn=2, role=ROLE, region="us-west-2").plan()
    assert re.fullmatch(r"smmpi-demo-\d{4}(-\d{2}){5}-\d{3}", result.job_name)
    assert normalise(result.job_name) == "smmpi-demo-GOLDEN"


def test_request_carries_the_mpi_block_and_tag() -> None:
    request = MPIJob("demo", instances=3, ppn=2, region="us-west-2").plan().request
    hp = toolkit_request.decode_hyperparameters(request)
    assert hp["sagemaker_mpi_enabled"] is True
    assert hp["sagemaker_mpi_num_of_processes_per_host"] == 2
    assert hp["sagemaker_program"] == "demo.py"
    assert request["ResourceConfig"] == {
        "InstanceCount": 3,
        "InstanceType": "ml.c5.2xlarge",
        "VolumeSizeInGB": 30,
    }
    assert {"Key": "smmpi:managed", "Value": "true"} in request["Tags"]
    assert request["AlgorithmSpecification"]["TrainingImage"].endswith(
        "/tensorflow-training:2.19.0-cpu-py312"
    )
    # No debugger/profiler side jobs billed for an MPI program.
    assert "DebugHookConfig" not in request
    assert request["ProfilerConfig"] == {"DisableProfiler": True}


def test_missing_role_and_bucket_are_marked_placeholders() -> None:
    result = MPIJob("demo", instances=3, ppn=2).plan()
    assert result.request["RoleArn"] == "<role: set --role or SMMPI_ROLE>"
    assert result.code_uri.startswith("s3://<bucket: set --bucket or SMMPI_BUCKET>/")
    assert "smmpi-dry-run" not in json.dumps(result.to_json())
    assert any("region" in note for note in result.notes)


def test_plan_64x96_is_fast() -> None:
    job = MPIJob("demo", instances=64, ppn=96, instance_type="ml.m5.24xlarge", region="us-west-2")
    job.plan()  # first call pays the SDK import
    start = time.perf_counter()
    result = MPIJob(
        "demo", instances=64, ppn=96, instance_type="ml.m5.24xlarge", region="us-west-2"
    ).plan()
    elapsed = time.perf_counter() - start
    assert result.world_size == 6144
    assert result.mpirun[2].count(",") == 63
    assert elapsed < 5  # generous here; benchmarks/bench_submit.py measures the real figure


def test_every_optional_field_reaches_the_request() -> None:
    job = MPIJob(
        "demo",
        instances=2,
        ppn=2,
        region="us-west-2",
        role=ROLE,
        bucket="bkt",
        use_spot=True,
        max_run=1800,
        checkpoint_s3_uri="s3://bkt/ckpt",
        encrypt_inter_container_traffic=True,
        network_isolation=True,
        subnets=["subnet-0abc"],
        security_groups=["sg-0abc"],
        volume_size=50,
        tags={"team": "hpc"},
        output_path="s3://bkt/out",
        base_job_name="mpi-test",
    )
    result = job.plan()
    req = result.request
    assert result.job_name.startswith("mpi-test-")
    assert req["StoppingCondition"] == {"MaxRuntimeInSeconds": 1800, "MaxWaitTimeInSeconds": 1800}
    assert req["ResourceConfig"]["VolumeSizeInGB"] == 50
    assert req["EnableManagedSpotTraining"] is True
    assert req["CheckpointConfig"] == {"S3Uri": "s3://bkt/ckpt"}
    assert req["EnableNetworkIsolation"] is True
    assert req["EnableInterContainerTrafficEncryption"] is True
    assert req["VpcConfig"] == {"Subnets": ["subnet-0abc"], "SecurityGroupIds": ["sg-0abc"]}
    assert req["OutputDataConfig"]["S3OutputPath"] == "s3://bkt/out"
    assert {"Key": "team", "Value": "hpc"} in req["Tags"]
    # Under network isolation the code arrives as a "code" channel, and the toolkit
    # forwards that channel's variable too.
    assert [c["ChannelName"] for c in req["InputDataConfig"]] == ["code"]
    assert "SM_CHANNEL_CODE" in result.mpirun
    warm = MPIJob("demo", region="us-west-2", keep_alive=600).plan().request
    assert warm["ResourceConfig"]["KeepAlivePeriodInSeconds"] == 600
    with pytest.raises(BadInput, match="keep_alive"):
        MPIJob("demo", use_spot=True, keep_alive=600)


def test_input_channels_reach_the_request_and_the_mpirun_line() -> None:
    job = MPIJob("demo", instances=2, ppn=2, inputs=["train=s3://bkt/train", "val=s3://bkt/v"])
    result = job.plan()
    channels = {
        c["ChannelName"]: c["DataSource"]["S3DataSource"]["S3Uri"]
        for c in result.request["InputDataConfig"]
    }
    assert channels == {"train": "s3://bkt/train", "val": "s3://bkt/v"}
    assert "SM_CHANNEL_TRAIN" in result.mpirun and "SM_CHANNEL_VAL" in result.mpirun
    with pytest.raises(BadInput, match="file:// works only with --local"):
        MPIJob("demo", inputs={"train": f"file://{GOLDEN}"}).plan()
