"""``aws logs filter-log-events --log-stream-name-prefix JOB`` against serve reads that job's
events only, page by page; the prefix with stream names too is CloudWatch's refusal."""

from __future__ import annotations

import json
import subprocess
from typing import Any

import pytest
from botocore.exceptions import ClientError

from tests.helpers import BIN
from tests.serve.serving import (
    REGION,
    ServeProcess,
    demo_source,
    dry_run_request,
    put_source,
    wait_end,
)

pytestmark = pytest.mark.aws

GROUP = "/aws/sagemaker/TrainingJobs"


def _aws(serve: ServeProcess, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(BIN / "aws"), "logs", "filter-log-events", "--log-group-name", GROUP, *args],
        env={**env, **serve.exports},
        capture_output=True,
        text=True,
        timeout=120,
    )


def _events(serve: ServeProcess, env: dict[str, str], *args: str) -> dict[str, Any]:
    done = _aws(serve, env, *args)
    assert done.returncode == 0, done.stderr
    found: dict[str, Any] = json.loads(done.stdout)
    return found


def _run_jobs(serve: ServeProcess, bucket: str, names: list[str]) -> None:
    """Each job (2 instances x 1 process: two log streams) run to its end."""
    sm = serve.client("sagemaker")
    for name in names:
        request = dry_run_request(serve.env, name, bucket, "--instances", "2", "--ppn", "1")
        put_source(serve, request, demo_source())
        sm.create_training_job(**request)
    for name in names:
        assert wait_end(serve, name)["TrainingJobStatus"] == "Completed"


def test_the_prefix_reads_one_jobs_events_only(
    serve: ServeProcess, bucket: str, job_name: str, env: dict[str, str]
) -> None:
    first, second = f"{job_name}-a", f"{job_name}-b"
    _run_jobs(serve, bucket, [first, second])
    every = _events(serve, env)["events"]
    assert {e["logStreamName"].partition("/")[0] for e in every} >= {first, second}
    mine = [e for e in every if e["logStreamName"].startswith(f"{first}/")]

    found = _events(serve, env, "--log-stream-name-prefix", first)
    assert found["events"] and all(
        e["logStreamName"].startswith(f"{first}/") for e in found["events"]
    )
    assert sorted(e["eventId"] for e in found["events"]) == sorted(e["eventId"] for e in mine)
    searched = sorted(s["logStreamName"] for s in found["searchedLogStreams"])
    assert [s.rpartition("-")[0] for s in searched] == [f"{first}/algo-1", f"{first}/algo-2"]
    assert any("rank 1 (algo-2)" in e["message"] for e in found["events"])

    # the CLI pages through with nextToken, the prefix given again with each page
    paged = _events(serve, env, "--log-stream-name-prefix", first, "--page-size", "3")
    assert [e["eventId"] for e in paged["events"]] == [e["eventId"] for e in found["events"]]

    none = _events(serve, env, "--log-stream-name-prefix", f"{job_name}-none")
    assert none["events"] == [] and none["searchedLogStreams"] == []


def test_the_prefix_with_stream_names_is_refused(
    serve: ServeProcess, job_name: str, env: dict[str, str]
) -> None:
    done = _aws(serve, env, "--log-stream-name-prefix", job_name, "--log-stream-names", "x/y")
    assert done.returncode == 255, done.stdout + done.stderr
    assert "(InvalidParameterException)" in done.stderr
    assert "logStreamNames and logStreamNamePrefix cannot both be given" in done.stderr


def test_bounds_that_are_not_whole_numbers_are_refused(serve: ServeProcess, job_name: str) -> None:
    """A client that skips botocore's checks gets CloudWatch's refusal, not a server error."""
    import boto3
    from botocore.config import Config

    logs: Any = boto3.client(  # a client without botocore's checks: any value goes
        "logs",
        endpoint_url=serve.url,
        region_name=REGION,
        aws_access_key_id=serve.exports["AWS_ACCESS_KEY_ID"],
        aws_secret_access_key=serve.exports["AWS_SECRET_ACCESS_KEY"],
        config=Config(parameter_validation=False, retries={"max_attempts": 1}),
    )
    for name, value, says in (
        ("limit", "ten", "Member must be a whole number"),
        ("limit", 0, "Member must have value greater than or equal to 1"),
        ("startTime", -5, "Member must have value greater than or equal to 0"),
    ):
        with pytest.raises(ClientError) as raised:
            logs.filter_log_events(
                logGroupName=GROUP, logStreamNamePrefix=job_name, **{name: value}
            )
        error = raised.value.response["Error"]
        assert error["Code"] == "InvalidParameterException", error
        assert f"at '{name}' failed to satisfy constraint: {says}" in error["Message"]
