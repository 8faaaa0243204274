"""serve's memory does not grow with what its jobs leave behind (their logs, their artifacts).

Jobs are run through the runner's own end of a job (``JobRunner._guarded``, whose finally
hands the logs over to disk), with the job's work replaced by what a job leaves: log
events on two streams, three S3 objects of its own, SageMaker's status transitions and its
end. The jobs are many and their data is large, so what memory keeps per job shows at once.
"""

from __future__ import annotations

import gc
import tracemalloc
from collections.abc import Iterator
from pathlib import Path

import boto3
import pytest

from smmpi.serve import Server
from smmpi.serve.operations import call
from tests.serve.ended_jobs import REGION, end_jobs, job_work, run_by_test

pytestmark = pytest.mark.aws

BUCKET = "memory-bucket"
OBJECT_BYTES = 64 << 10  # each of a job's three objects
LINES = 400  # per stream, two streams per job
WARM = 24  # jobs before measuring (past every cache's bound)
MEASURED = 40
#: What serve may keep per ended job: its summary, moto's description (not the data) of
#: its three S3 objects and its two log streams (not their events). Before, the events and
#: the objects' bytes stayed in memory too: about 450 KB per job here.
BOUND = 16 << 10


def _run_jobs(server: Server, first: int, count: int) -> None:
    for i in range(first, first + count):
        name = f"mem-{i}"
        end_jobs(server, [name], BUCKET, long="v" * 2000)
        answer = call(
            server.runner, "SageMaker.DescribeTrainingJob", {"TrainingJobName": name}, REGION
        )
        assert b'"TrainingJobStatus": "Completed"' in answer  # type: ignore[operator]
        call(server.runner, "SageMaker.ListTrainingJobs", {"MaxResults": 100}, REGION)


@pytest.fixture
def server(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Server]:
    with Server(state=tmp_path / "state") as started:
        work = job_work(started, BUCKET, LINES, OBJECT_BYTES, pad=60)
        yield run_by_test(started, monkeypatch, BUCKET, work)


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
