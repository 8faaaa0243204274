"""Jobs that end through serve's own runner, their work replaced by what a job leaves.

``JobRunner._guarded`` ends each job (its finally hands the logs over to disk); the work is
SageMaker's transitions, log events on two streams, three S3 objects and the job's end.
Shared by the memory tests.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import Any

import pytest

from smmpi.serve import Server
from smmpi.serve.operations import call
from smmpi.serve.running import Running

REGION = "us-west-2"
HOSTS = ("algo-1", "algo-2")
PARTS = ("source/sourcedir.tar.gz", "output/model.tar.gz", "output/output.tar.gz")


def request(name: str, bucket: str, **hyperparameters: str) -> dict[str, Any]:
    return {
        "TrainingJobName": name,
        "RoleArn": "arn:aws:iam::123456789012:role/r",
        "AlgorithmSpecification": {
            "TrainingImage": "x/pytorch-training:2",
            "TrainingInputMode": "File",
        },
        "HyperParameters": {"sagemaker_program": '"train.py"', **hyperparameters},
        "OutputDataConfig": {"S3OutputPath": f"s3://{bucket}/"},
        "ResourceConfig": {"InstanceCount": 2, "InstanceType": "ml.c5.xlarge", "VolumeSizeInGB": 1},
        "StoppingCondition": {"MaxRuntimeInSeconds": 600},
    }


def job_work(
    server: Server, bucket: str, lines: int, object_bytes: int, pad: int = 0
) -> Callable[[str, Running], None]:
    """What a job does to serve's state, in the runner's place (``JobRunner._run``):
    ``lines`` log lines per stream (``pad`` bytes more each), objects of ``object_bytes``."""

    def run(name: str, running: Running) -> None:
        server.store.transition(name, "Downloading")
        server.store.transition(name, "Training", TrainingStartTime=time.time())
        streams = server.logs.open(name, REGION, list(HOSTS))
        for host, stream in streams.items():
            for start in range(0, lines, 50):
                chunk = range(start, min(lines, start + 50))
                said = [f"[1,mpirank:{i % 2},{host}]<stdout>:{name} step {i}" + "x" * pad
                        for i in chunk]  # fmt: skip
                server.logs.append(name, REGION, host, stream, said)
        for part in PARTS:
            server.s3.put(bucket, f"{name}/{part}", os.urandom(object_bytes))
        server.store.transition(name, "Uploading")
        model = f"s3://{bucket}/{name}/output/model.tar.gz"
        server.runner._end(name, "Completed", ModelArtifacts={"S3ModelArtifacts": model})

    return run


def run_by_test(
    server: Server,
    monkeypatch: pytest.MonkeyPatch,
    bucket: str,
    work: Callable[[str, Running], None],
) -> Server:
    """``server``, whose jobs run only when the test ends them (:func:`end_jobs`)."""
    monkeypatch.setattr(server.runner, "start", lambda name: None)
    monkeypatch.setattr(server.runner, "_run", work)
    server.s3.ensure_bucket(bucket, REGION)
    return server


def end_jobs(server: Server, names: list[str], bucket: str, **hyperparameters: str) -> None:
    """Create each job, then end it as the runner ends one."""
    for name in names:
        created = request(name, bucket, **hyperparameters)
        call(server.runner, "SageMaker.CreateTrainingJob", created, REGION)
        server.runner._guarded(name, Running())
