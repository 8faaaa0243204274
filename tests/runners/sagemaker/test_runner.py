"""SageMaker's runner from the registry: the estimator's request or ModelTrainer's, created on a
real moto server over HTTP, the code uploaded where the request says."""

from __future__ import annotations

import pytest

from smmpi.runners.registry import runner
from smmpi.spec import MPIJob
from tests.helpers import ROLE, MotoServer, make_bucket, training_jobs

pytestmark = pytest.mark.aws


@pytest.fixture
def endpoint(moto_server: MotoServer, monkeypatch: pytest.MonkeyPatch) -> MotoServer:
    for name, value in moto_server.aws_env().items():
        monkeypatch.setenv(name, value)
    make_bucket(moto_server, "smmpi-runner")
    return moto_server


@pytest.mark.parametrize("api", ["estimator", "model-trainer"])
def test_start_creates_the_job_with_its_code(endpoint: MotoServer, api: str) -> None:
    base = "smmpi-runner-mt" if api == "model-trainer" else None
    name = None if base else "smmpi-runner-est"
    job = MPIJob(
        "demo", instances=2, ppn=1, role=ROLE, bucket="smmpi-runner", api=api,
        job_name=name, base_job_name=base,
    )  # fmt: skip
    lines: list[str] = []
    sub = runner("sagemaker").start(job, wait=False, echo=lines.append)
    assert training_jobs(endpoint) == [sub.job_name]
    assert sub.job_name == name or sub.job_name.startswith(f"{base}-")
    described = endpoint.boto3_client("sagemaker").describe_training_job(
        TrainingJobName=sub.job_name
    )
    assert described["ResourceConfig"]["InstanceCount"] == 2
    keys = [
        o["Key"]
        for o in endpoint.boto3_client("s3").list_objects_v2(Bucket="smmpi-runner")["Contents"]
    ]
    assert any(sub.job_name in key for key in keys), keys
    assert any(sub.job_name in line for line in lines), lines
