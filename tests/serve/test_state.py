"""What serve keeps: private files, jobs/logs/artifacts across restarts, nothing left by a kill."""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from botocore.exceptions import ClientError

from tests.helpers import base_env
from tests.nobody import BOTO3, nobody_venv
from tests.serve.serving import (
    ServeProcess,
    demo_source,
    dry_run_request,
    log_lines,
    make_bucket,
    processes_under,
    put_source,
    script_source,
    wait_end,
)

pytestmark = pytest.mark.aws

SLEEPER = """
import os, time
from mpi4py import MPI
open("/opt/ml/model/weights.txt", "w").write("saved before the stop")
print("sleeping now", flush=True)
time.sleep(600)
"""


_STARTED: list[ServeProcess] = []


def _start(tmp_path: Path) -> ServeProcess:
    server = ServeProcess(tmp_path / "state", base_env(tmp_path))
    _STARTED.append(server)
    return server


@pytest.fixture(autouse=True)
def _stop_what_a_test_left() -> Iterator[None]:
    """A test that fails half-way still leaves no serve (nor its jobs) running."""
    yield
    while _STARTED:
        _STARTED.pop().stop()


def _sleeper(serve: ServeProcess, name: str, bucket: str) -> None:
    request = dry_run_request(serve.env, name, bucket, "--instances", "2", "--ppn", "1")
    request["HyperParameters"]["sagemaker_program"] = json.dumps("train.py")
    put_source(serve, request, script_source(SLEEPER))
    serve.client("sagemaker").create_training_job(**request)
    deadline = time.monotonic() + 120
    while not any("sleeping now" in x for ls in log_lines(serve, name).values() for x in ls):
        assert time.monotonic() < deadline, "the job never started"
        time.sleep(0.2)


def test_every_file_serve_keeps_is_private(tmp_path: Path) -> None:
    serve = _start(tmp_path)
    try:
        make_bucket(serve, "private-files")
        serve.client("s3").put_object(Bucket="private-files", Key="../../escape", Body=b"x")
    finally:
        assert serve.stop() == 0
    root = tmp_path / "state"
    assert stat.S_IMODE(root.stat().st_mode) == 0o700
    for path in root.rglob("*"):
        mode = stat.S_IMODE(path.lstat().st_mode)
        assert mode == (0o700 if path.is_dir() else 0o600), (path, oct(mode))
        assert not path.is_symlink()
    assert not (tmp_path / "escape").exists() and not list(tmp_path.rglob("escape"))
    keys = json.loads((root / "credentials.json").read_text())
    assert keys["access_key"] == serve.exports["AWS_ACCESS_KEY_ID"]


def test_a_restart_keeps_jobs_logs_artifacts_and_keys(tmp_path: Path) -> None:
    serve = _start(tmp_path)
    try:
        make_bucket(serve, "restart-bucket")
        request = dry_run_request(serve.env, "before-restart", "restart-bucket")
        put_source(serve, request, demo_source())
        serve.client("sagemaker").create_training_job(**request)
        first = wait_end(serve, "before-restart")
        lines = log_lines(serve, "before-restart")
    finally:
        assert serve.stop() == 0
    assert first["TrainingJobStatus"] == "Completed", first.get("FailureReason")
    again = _start(tmp_path)
    try:
        assert again.exports["AWS_SECRET_ACCESS_KEY"] == serve.exports["AWS_SECRET_ACCESS_KEY"]
        desc = again.client("sagemaker").describe_training_job(TrainingJobName="before-restart")
        assert desc == first | {"ResponseMetadata": desc["ResponseMetadata"]}
        assert log_lines(again, "before-restart") == lines
        model = again.client("s3").get_object(
            Bucket="restart-bucket", Key="before-restart/output/model.tar.gz"
        )
        assert model["ContentLength"] > 0
    finally:
        again.stop()


def test_sigterm_stops_running_jobs_uploads_their_model_and_saves_state(tmp_path: Path) -> None:
    serve = _start(tmp_path)
    make_bucket(serve, "sigterm-bucket")
    _sleeper(serve, "stopped-by-sigterm", "sigterm-bucket")
    assert serve.stop(signal.SIGTERM) == 0
    assert "smmpi serve: stopped; state saved" in serve.lines
    assert not processes_under("stopped-by-sigterm")
    again = _start(tmp_path)
    try:
        desc = again.client("sagemaker").describe_training_job(TrainingJobName="stopped-by-sigterm")
        assert desc["TrainingJobStatus"] == "Stopped"
        keys = again.client("s3").list_objects_v2(Bucket="sigterm-bucket")["Contents"]
        assert "stopped-by-sigterm/output/model.tar.gz" in [k["Key"] for k in keys]
    finally:
        again.stop()


def test_sigkill_mid_job_leaves_nothing_and_the_next_start_marks_it_failed(
    tmp_path: Path,
) -> None:
    serve = _start(tmp_path)
    make_bucket(serve, "sigkill-bucket")
    request = dry_run_request(serve.env, "finished-first", "sigkill-bucket")
    put_source(serve, request, demo_source())
    serve.client("sagemaker").create_training_job(**request)
    assert wait_end(serve, "finished-first")["TrainingJobStatus"] == "Completed"
    _sleeper(serve, "killed-with-serve", "sigkill-bucket")
    serve.stop(signal.SIGKILL)
    deadline = time.monotonic() + 15
    while processes_under("killed-with-serve") and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not processes_under("killed-with-serve")
    assert not processes_under("smmpi.serve.forkserver " + str(tmp_path))
    state = str(tmp_path / "state")
    assert state not in Path("/proc/self/mountinfo").read_text()
    again = _start(tmp_path)
    try:
        sm = again.client("sagemaker")
        killed = sm.describe_training_job(TrainingJobName="killed-with-serve")
        assert killed["TrainingJobStatus"] == "Failed"
        assert "smmpi serve stopped while the job was running" in killed["FailureReason"]
        assert sm.describe_training_job(TrainingJobName="finished-first")["TrainingJobStatus"] == (
            "Completed"
        )
        assert list((tmp_path / "state" / "runs").iterdir()) == []
    finally:
        again.stop()


NOBODY = """
import sys, boto3
from botocore.exceptions import ClientError
try:
    open(sys.argv[2]).read()
    print("READ THE KEYS")
except OSError as err:
    print("cannot read keys:", err.strerror)
sm = boto3.client("sagemaker", endpoint_url=sys.argv[1], region_name="us-west-2",
                  aws_access_key_id="AKIAIOSFODNN7EXAMPLE", aws_secret_access_key="x" * 40)
try:
    sm.create_training_job(TrainingJobName="from-nobody", RoleArn="arn:aws:iam::1:role/r",
                           OutputDataConfig={"S3OutputPath": "s3://b/"})
    print("CREATED")
except ClientError as err:
    print("refused:", err.response["Error"]["Code"])
"""


@pytest.fixture(scope="module")
def boto3_for_nobody() -> Iterator[str]:
    """User 65534's own Python with boto3 (the checkout and its venv may be root's only)."""
    yield from (str(venv / "bin" / "python") for venv in nobody_venv(BOTO3))


def test_another_user_cannot_create_a_job(
    serve: ServeProcess, tmp_path: Path, boto3_for_nobody: str
) -> None:
    done = subprocess.run(
        ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
         boto3_for_nobody, "-c", NOBODY, serve.url, str(serve.state / "credentials.json")],
        capture_output=True, text=True, timeout=60,
        env={"PATH": os.environ["PATH"], "HOME": "/tmp"},
    )  # fmt: skip
    assert done.stdout.splitlines() == [
        "cannot read keys: Permission denied",
        "refused: UnrecognizedClientException",
    ], done.stderr
    with pytest.raises(ClientError):
        serve.client("sagemaker").describe_training_job(TrainingJobName="from-nobody")
