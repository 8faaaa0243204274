"""``smmpi serve --exact``: every job in exact mode (a real sshd on each instance)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import boto3
import pytest

from smmpi.runners.local.exact import FIRST_LINE
from smmpi.serve import Server
from tests.helpers import BIN, base_env
from tests.nobody import NOBODY
from tests.serve.serving import dry_run_request, script_source

pytestmark = pytest.mark.aws

ANCESTRY = """
import os
from mpi4py import MPI

def ancestry():
    names, pid = [], os.getpid()
    while pid > 1:
        names.append(open(f"/proc/{pid}/comm").read().strip())
        pid = int(open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[1])
    return "<".join(names)

comm = MPI.COMM_WORLD
print(f"rank {comm.Get_rank()} on {MPI.Get_processor_name()}: {ancestry()}", flush=True)
open("/opt/ml/model/exact.txt", "w").write("ran")
"""


def test_a_job_created_against_an_exact_server_reaches_its_workers_through_sshd(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SMMPI_TOOLKIT_VENV", "none")  # sshd only, without the toolkit
    monkeypatch.setenv("SMMPI_LOCAL_JOBS", str(tmp_path / "local-jobs"))
    events: list[str] = []
    with Server(state=tmp_path / "state", exact=True, event=events.append) as server:
        env = server.env
        session = boto3.Session(
            aws_access_key_id=env["AWS_ACCESS_KEY_ID"],
            aws_secret_access_key=env["AWS_SECRET_ACCESS_KEY"],
            region_name=env["AWS_REGION"],
        )
        s3 = session.client("s3", endpoint_url=server.url)
        sm = session.client("sagemaker", endpoint_url=server.url)
        s3.create_bucket(
            Bucket="exact-bucket", CreateBucketConfiguration={"LocationConstraint": "us-west-2"}
        )
        request = dry_run_request(
            base_env(tmp_path), "exact-job", "exact-bucket", "--instances", "2", "--ppn", "1"
        )
        request["HyperParameters"]["sagemaker_program"] = json.dumps("train.py")
        uri = json.loads(request["HyperParameters"]["sagemaker_submit_directory"])
        key = uri[len("s3://exact-bucket/") :]
        s3.put_object(Bucket="exact-bucket", Key=key, Body=script_source(ANCESTRY))
        sm.create_training_job(**request)
        waiter = sm.get_waiter("training_job_completed_or_stopped")
        waiter.wait(TrainingJobName="exact-job", WaiterConfig={"Delay": 1, "MaxAttempts": 300})
        desc = sm.describe_training_job(TrainingJobName="exact-job")
        logs = session.client("logs", endpoint_url=server.url)
        streams = logs.describe_log_streams(
            logGroupName="/aws/sagemaker/TrainingJobs", logStreamNamePrefix="exact-job/"
        )["logStreams"]
        first = next(s["logStreamName"] for s in streams if "/algo-1-" in s["logStreamName"])
        lines = [
            e["message"]
            for e in logs.get_log_events(
                logGroupName="/aws/sagemaker/TrainingJobs", logStreamName=first, startFromHead=True
            )["events"]
        ]
    assert desc["TrainingJobStatus"] == "Completed", desc.get("FailureReason")
    assert any(FIRST_LINE in e for e in events), events
    # algo-1's mpirun reached algo-2 with ssh (its first contact adds algo-2's host key, as
    # in a SageMaker log); fast mode uses no ssh at all
    assert "Warning: Permanently added 'algo-2' (ED25519) to the list of known hosts." in lines
    worker = [x for x in lines if "rank 1 on algo-2:" in x]
    assert worker and "orted" in worker[0].split(": ", 1)[1].split("<"), lines
    assert any("rank 0 on algo-1:" in x for x in lines), lines


def test_exact_where_it_cannot_run_is_one_line_exit_2_and_nothing_started(
    tmp_path: Path, nobody_smmpi: str
) -> None:
    env = base_env(tmp_path)
    state = tmp_path / "state"
    refused = subprocess.run(
        [str(BIN / "smmpi"), "serve", "--exact", "--isolation", "processes", "--port", "0",
         "--state", str(state)],
        env=env, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert refused.returncode == 2, refused
    assert refused.stdout == ""
    assert len(refused.stderr.splitlines()) == 1 and "--exact" in refused.stderr
    assert not state.exists()
    nobody = subprocess.run(
        [*NOBODY, nobody_smmpi, "serve", "--exact", "--port", "0",
         "--state", str(tmp_path / "nobody-state")],
        env={**env, "HOME": "/tmp"}, capture_output=True, text=True, timeout=60,
        cwd="/",
    )  # fmt: skip
    assert nobody.returncode == 2, nobody
    assert len(nobody.stderr.splitlines()) == 1 and "root" in nobody.stderr, nobody.stderr
    assert not (tmp_path / "nobody-state").exists()
    assert os.geteuid() == 0
