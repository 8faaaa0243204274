"""SDK v2's ``@remote(use_mpirun=True)`` pointed at ``smmpi serve``: the SDK's client side
(the pickled function and its job script uploaded to serve's S3, CreateTrainingJob, the wait)
runs unchanged; serve does not run the job script yet, and says why in the job's
FailureReason, which the SDK's exception points to. Nothing of the job runs or is left."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from smmpi.serve.platform import REMOTE_FUNCTION
from tests.helpers import BIN
from tests.serve.serving import ROLE, ServeProcess

pytestmark = pytest.mark.aws

CLIENT = """
import sagemaker
from sagemaker.remote_function import remote

session = sagemaker.Session(default_bucket="{bucket}")


@remote(
    instance_count=3,
    nproc_per_node=2,
    use_mpirun=True,
    instance_type="ml.c5.2xlarge",
    image_uri="763104351884.dkr.ecr.us-west-2.amazonaws.com/pytorch-training:2.3.0-cpu-py311",
    role="{role}",
    sagemaker_session=session,
    s3_root_uri="s3://{bucket}/rf",
    job_name_prefix="rf-refused",
)
def world(x):
    from mpi4py import MPI

    return x * MPI.COMM_WORLD.Get_size()


try:
    print("RESULT", world(7))
except Exception as err:
    print("RAISED", type(err).__name__, err)
"""


def test_remote_mpirun_job_fails_with_the_reason_and_runs_nothing(
    serve: ServeProcess, bucket: str, guard: dict[str, str], tmp_path: Path
) -> None:
    script = CLIENT.format(bucket=bucket, role=ROLE)
    env = {**serve.env, **guard}
    done = subprocess.run(
        [str(BIN / "python"), "-c", script],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert "RAISED RemoteFunctionError Failed to execute remote function" in done.stdout, (
        done.stdout + done.stderr
    )[-4000:]
    sm = serve.client("sagemaker")
    jobs = sm.list_training_jobs(NameContains="rf-refused", MaxResults=100)
    (name,) = [j["TrainingJobName"] for j in jobs["TrainingJobSummaries"]]
    desc = sm.describe_training_job(TrainingJobName=name)
    assert desc["TrainingJobStatus"] == "Failed"
    assert desc["FailureReason"] == REMOTE_FUNCTION
    algo = desc["AlgorithmSpecification"]
    assert algo["ContainerArguments"][-4:] == [
        "--distribution",
        "mpirun",
        "--user_nproc_per_node",
        "2",
    ]
    lines = [line for line in serve.lines if name in line]
    assert not any("Training" in line for line in lines), lines  # never started
    assert not (serve.state / "runs" / name).exists()
