"""Every instance's log stream: the workers' own toolkit lines; the SDK's tailer over 50 streams."""

from __future__ import annotations

import contextlib
import re
import subprocess
import sys
import time

import pytest

from tests.serve.serving import (
    ServeProcess,
    demo_source,
    dry_run_request,
    log_lines,
    put_source,
    wait_end,
)

pytestmark = pytest.mark.aws

GROUP = "/aws/sagemaker/TrainingJobs"
TOOLKIT_LINE = re.compile(
    r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} sagemaker-training-toolkit INFO     (?P<m>.+)$"
)


def test_each_worker_stream_carries_that_instance_s_toolkit_lines(
    serve: ServeProcess, bucket: str, job_name: str
) -> None:
    request = dry_run_request(serve.env, job_name, bucket, "--instances", "3", "--ppn", "1")
    put_source(serve, request, demo_source())
    serve.client("sagemaker").create_training_job(**request)
    assert wait_end(serve, job_name)["TrainingJobStatus"] == "Completed"
    streams = log_lines(serve, job_name)
    assert sorted(re.sub(r"-\d+$", "", s) for s in streams) == [
        f"{job_name}/algo-{k}" for k in (1, 2, 3)
    ]
    by_host = {re.sub(r"-\d+$", "", s).rsplit("/", 1)[1]: lines for s, lines in streams.items()}
    assert any(x.startswith("[1,mpirank:0,algo-1]<stdout>:") for x in by_host["algo-1"])
    for host in ("algo-2", "algo-3"):
        lines = by_host[host]
        assert lines, f"{host}'s stream is empty"
        messages = []
        for line in lines:
            found = TOOLKIT_LINE.match(line)
            assert found, line  # the toolkit's own lines only: its ranks print through algo-1
            messages.append(found["m"])
        assert messages == [
            "Starting MPI run as worker node.",
            "Waiting for MPI Master to create SSH daemon.",
            "MPI Master online, creating SSH daemon.",
            "Writing environment variables to /etc/environment for the MPI process.",
            "Waiting for MPI process to finish.",
            "Orted process exited",
            f"Begin looking for status file on {host}",
            "MPI training job status file found. Exit gracefully",
            "End looking for status file",
            "MPI process finished.",
            "Reporting training SUCCESS",
        ]


TAIL = """
import sagemaker
sagemaker.Session().logs_for_job("{name}", wait=False)
print("TAILER ENDED")
"""


def test_the_sdk_tailer_ends_over_more_than_50_instance_streams(
    serve: ServeProcess, bucket: str, job_name: str
) -> None:
    """The SDK asks again, without the nextToken, while an answer has one: serve must answer
    a job's streams in one page, or the tailer never ends."""
    request = dry_run_request(serve.env, job_name, bucket, "--instances", "60", "--ppn", "1")
    request["AlgorithmSpecification"]["TrainingInputMode"] = "FastFile"  # fails at once
    serve.client("sagemaker").create_training_job(**request)
    assert wait_end(serve, job_name)["TrainingJobStatus"] == "Failed"
    logs = serve.client("logs")
    # a job that fails at once writes no log: the group exists only if an earlier job of this
    # server ran, which depends on which tests share it (pytest-xdist spreads them)
    with contextlib.suppress(logs.exceptions.ResourceAlreadyExistsException):
        logs.create_log_group(logGroupName=GROUP)
    epoch = int(time.time())
    now = epoch * 1000
    for k in range(1, 61):
        stream = f"{job_name}/algo-{k}-{epoch}"
        logs.create_log_stream(logGroupName=GROUP, logStreamName=stream)
        logs.put_log_events(
            logGroupName=GROUP,
            logStreamName=stream,
            logEvents=[{"timestamp": now, "message": f"printed by algo-{k}"}],
        )
    pages = logs.get_paginator("describe_log_streams").paginate(
        logGroupName=GROUP, logStreamNamePrefix=f"{job_name}/", PaginationConfig={"PageSize": 7}
    )
    names = [s["logStreamName"] for page in pages for s in page["logStreams"]]
    assert len(names) == 60 and len(set(names)) == 60
    other = logs.describe_log_streams(logGroupName=GROUP, limit=7)  # not one job's: paged
    assert len(other["logStreams"]) == 7 and "nextToken" in other
    done = subprocess.run(
        [sys.executable, "-c", TAIL.format(name=job_name)],
        env=serve.env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    assert "TAILER ENDED" in done.stdout
    for k in range(1, 61):
        assert f"printed by algo-{k}\n" in done.stdout, k
