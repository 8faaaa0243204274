"""serve's memory does not grow with what its jobs leave behind (their logs, their artifacts).

Jobs are run through the runner's own end of a job (``JobRunner._guarded``, whose finally
hands the logs over to disk), with the job's work replaced by what a job leaves: log
events on two streams, three S3 objects of its own, SageMaker's status transitions and its
end. The jobs are many and their data is large, so what memory keeps per job shows at once.
"""

from __future__ import annotations

import gc
import os
import time
import tracemalloc
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest

from smmpi.serve import Server
from smmpi.serve.operations import call
from smmpi.serve.runner import Running

pytestmark = pytest.mark.aws

REGION = "us-west-2"
BUCKET = "memory-bucket"
OBJECT_BYTES = 64 << 10  # each of a job's three objects
LINES = 400  # per stream, two streams per job
WARM = 24  # jobs before measuring (past every cache's bound)
MEASURED = 40
#: What serve may keep per ended job: its summary, moto's description (not the data) of
#: its three S3 objects and its two log streams (not their events). Before, the events and
#: the objects' bytes stayed in memory too: about 450 KB per job here.
BOUND = 16 << 10


def _request(name: str) -> dict[str, Any]:
    return {
        "TrainingJobName": name,
        "RoleArn": "arn:aws:iam::123456789012:role/r",
        "AlgorithmSpecification": {
            "TrainingImage": "x/pytorch-training:2",
            "TrainingInputMode": "File",
        },
        "HyperParameters": {"sagemaker_program": '"train.py"', "long": "v" * 2000},
        "OutputDataConfig": {"S3OutputPath": f"s3://{BUCKET}/"},
        "ResourceConfig": {"InstanceCount": 2, "InstanceType": "ml.c5.xlarge", "VolumeSizeInGB": 1},
        "StoppingCondition": {"MaxRuntimeInSeconds": 600},
    }


def _job_work(server: Server) -> Any:
    """What a job does to serve's state, in the runner's place (``JobRunner._run``)."""
    store, logs, s3, runner = server.store, server.logs, server.s3, server.runner

    def run(name: str, running: Running) -> None:
        store.transition(name, "Downloading")
        store.transition(name, "Training", TrainingStartTime=time.time())
        streams = logs.open(name, REGION, ["algo-1", "algo-2"])
        for host, stream in streams.items():
            for start in range(0, LINES, 50):
                lines = [f"[1,mpirank:{i % 4},{host}]<stdout>:step {start + i} " + "x" * 60
                         for i in range(50)]  # fmt: skip
                logs.append(name, REGION, host, stream, lines)
        for part in ("source/sourcedir.tar.gz", "output/model.tar.gz", "output/output.tar.gz"):
            s3.put(BUCKET, f"{name}/{part}", os.urandom(OBJECT_BYTES))
        store.transition(name, "Uploading")
        model = f"s3://{BUCKET}/{name}/output/model.tar.gz"
        runner._end(name, "Completed", ModelArtifacts={"S3ModelArtifacts": model})

    return run


def _run_jobs(server: Server, first: int, count: int) -> None:
    for i in range(first, first + count):
        name = f"mem-{i}"
        call(server.runner, "SageMaker.CreateTrainingJob", _request(name), REGION)
        server.runner._guarded(name, Running())  # the job's end, as the runner ends it
        answer = call(
            server.runner, "SageMaker.DescribeTrainingJob", {"TrainingJobName": name}, REGION
        )
        assert b'"TrainingJobStatus": "Completed"' in answer  # type: ignore[operator]
        call(server.runner, "SageMaker.ListTrainingJobs", {"MaxResults": 100}, REGION)


@pytest.fixture
def server(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Server]:
    with Server(state=tmp_path / "state") as started:
        monkeypatch.setattr(started.runner, "start", lambda name: None)  # run by the test
        monkeypatch.setattr(started.runner, "_run", _job_work(started))
        started.s3.ensure_bucket(BUCKET, REGION)
        yield started


def test_memory_kept_per_ended_job_does_not_grow_with_its_logs_and_artifacts(
    server: Server,
) -> None:
    tracemalloc.start()  # before the first job: what a bounded cache drops is counted too
    try:
        _run_jobs(server, 0, WARM)
        gc.collect()
        before = tracemalloc.get_traced_memory()[0]
        _run_jobs(server, WARM, MEASURED)
        gc.collect()
        after = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    per_job = (after - before) / MEASURED
    assert per_job < BOUND, f"{per_job / 1024:.1f} KB kept per ended job"
    # and everything is still served: the last job's model, its logs, its record
    client = boto3.client(
        "s3", endpoint_url=server.url, region_name=REGION,
        aws_access_key_id=server.keys.access_key, aws_secret_access_key=server.keys.secret_key,
    )  # fmt: skip
    last = f"mem-{WARM + MEASURED - 1}"
    body = client.get_object(Bucket=BUCKET, Key=f"{last}/output/model.tar.gz")["Body"].read()
    assert len(body) == OBJECT_BYTES
    assert body == (server.s3.objects / _oid(f"{last}/output/model.tar.gz")).read_bytes()
    listed = call(server.runner, "SageMaker.ListTrainingJobs", {"MaxResults": 100}, REGION)
    assert isinstance(listed, dict) and len(listed["TrainingJobSummaries"]) == WARM + MEASURED


def _oid(key: str) -> str:
    from smmpi.serve.s3store import _object_id

    return _object_id(BUCKET, key)
