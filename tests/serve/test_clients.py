"""Clients nobody here wrote, against ``smmpi serve``: the AWS CLI, and smmpi's own commands."""

from __future__ import annotations

import json
import subprocess
import tarfile
import time
from pathlib import Path

import pytest

from tests.helpers import BIN
from tests.serve.serving import ServeProcess, dry_run_request, put_source, script_source

pytestmark = pytest.mark.aws

TRAIN = """
import os, sys, time
from mpi4py import MPI
rank = MPI.COMM_WORLD.Get_rank()
host = os.environ.get("SM_CURRENT_HOST")
print(f"hello from rank {rank}", flush=True)
os.makedirs("/opt/ml/model", exist_ok=True)
open(f"/opt/ml/model/rank-{rank}.txt", "w").write(str(rank))
if "--sleep" in sys.argv:
    print("sleeping", flush=True)
    time.sleep(600)
MPI.COMM_WORLD.Barrier()
"""


def _env(serve: ServeProcess, env: dict[str, str]) -> dict[str, str]:
    return {**env, **serve.exports}


def _run(
    args: list[str], env: dict[str, str], timeout: float = 300
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, env=env, capture_output=True, text=True, timeout=timeout)


def test_the_aws_cli_lists_describes_and_stops(
    serve: ServeProcess, bucket: str, job_name: str, env: dict[str, str]
) -> None:
    request = dry_run_request(serve.env, job_name, bucket)
    request["HyperParameters"]["sagemaker_program"] = json.dumps("train.py")
    request["HyperParameters"]["sleep"] = '""'
    put_source(serve, request, script_source(TRAIN))
    serve.client("sagemaker").create_training_job(**request)
    cli = _env(serve, env)
    aws = str(BIN / "aws")
    listed = _run([aws, "sagemaker", "list-training-jobs", "--name-contains", job_name], cli)
    assert listed.returncode == 0, listed.stderr
    assert [s["TrainingJobName"] for s in json.loads(listed.stdout)["TrainingJobSummaries"]] == [
        job_name
    ]
    deadline = time.monotonic() + 120
    while True:
        described = _run(
            [aws, "sagemaker", "describe-training-job", "--training-job-name", job_name], cli
        )
        assert described.returncode == 0, described.stderr
        if json.loads(described.stdout)["SecondaryStatus"] == "Training":
            break
        assert time.monotonic() < deadline
        time.sleep(0.3)
    stopped = _run([aws, "sagemaker", "stop-training-job", "--training-job-name", job_name], cli)
    assert stopped.returncode == 0, stopped.stderr
    describe = [aws, "sagemaker", "describe-training-job", "--training-job-name", job_name]
    final = json.loads(_run(describe, cli).stdout)
    while final["TrainingJobStatus"] == "Stopping":  # the CLI's waiter polls every 120 s
        assert time.monotonic() < deadline + 60
        time.sleep(0.5)
        final = json.loads(_run(describe, cli).stdout)
    assert final["TrainingJobStatus"] == "Stopped"
    missing = _run(
        [aws, "sagemaker", "describe-training-job", "--training-job-name", "nope-x"], cli
    )
    assert missing.returncode == 255
    assert (
        "ValidationException" in missing.stderr and "Requested resource not found" in missing.stderr
    )


def test_smmpi_deploys_submits_waits_reads_logs_fetches_and_reruns_here(
    serve: ServeProcess, env: dict[str, str], tmp_path: Path
) -> None:
    cli = _env(serve, env)
    smmpi = str(BIN / "smmpi")
    deployed = _run([smmpi, "infra", "deploy"], cli)
    assert deployed.returncode == 0, deployed.stderr
    assert "saved role and bucket" in deployed.stdout + deployed.stderr
    train = tmp_path / "train.py"
    train.write_text(TRAIN)
    submitted = _run([smmpi, "submit", str(train), "--instances", "2", "--ppn", "2", "--wait"], cli)
    assert submitted.returncode == 0, submitted.stderr
    name = submitted.stdout.strip().splitlines()[-1]
    for rank in range(4):
        assert f"[{rank}] hello from rank {rank}" in submitted.stdout
    status = _run([smmpi, "status", name], cli)
    assert "Completed" in status.stdout and "2 per host, 4 in all" in status.stdout
    assert name in _run([smmpi, "jobs"], cli).stdout
    rank3 = _run([smmpi, "logs", name, "--rank", "3"], cli)
    assert rank3.returncode == 0 and "hello from rank 3" in rank3.stdout, rank3.stderr
    assert "hello from rank 0" not in rank3.stdout
    host2 = _run([smmpi, "logs", name, "--host", "algo-2"], cli)
    assert "hello from rank 2" in host2.stdout and "hello from rank 1" not in host2.stdout
    fetched = _run([smmpi, "fetch", name, "--to", str(tmp_path / "got")], cli)
    assert fetched.returncode == 0, fetched.stderr
    assert sorted(p.name for p in (tmp_path / "got" / "model").iterdir()) == [
        f"rank-{r}.txt" for r in range(4)
    ]
    again = _run([smmpi, "run", "--from-job", name], cli)
    assert again.returncode == 0, again.stderr
    assert "hello from rank 3" in again.stdout + again.stderr


def test_smmpi_follows_and_stops_a_job_that_runs(
    serve: ServeProcess, env: dict[str, str], tmp_path: Path, bucket: str
) -> None:
    cli = _env(serve, env)
    smmpi = str(BIN / "smmpi")
    train = tmp_path / "train.py"
    train.write_text(TRAIN)
    role = "arn:aws:iam::123456789012:role/serve-tests"
    submitted = _run([smmpi, "submit", str(train), "--instances", "2", "--ppn", "1",
                      "--no-wait", "--role", role, "--bucket", bucket,
                      "--hyperparameter", "sleep="], cli)  # fmt: skip
    assert submitted.returncode == 0, submitted.stderr
    name = submitted.stdout.strip().splitlines()[-1]
    follow = subprocess.Popen([smmpi, "logs", name, "--follow"], env=cli, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)  # fmt: skip
    deadline = time.monotonic() + 120
    while "Training" not in _run([smmpi, "status", name], cli).stdout:
        assert time.monotonic() < deadline
        time.sleep(0.3)
    time.sleep(2)
    stopped = _run([smmpi, "stop", name], cli)
    assert stopped.returncode == 0, stopped.stderr
    out, err = follow.communicate(timeout=120)
    assert "hello from rank 1" in out, out + err
    assert "Stopped" in _run([smmpi, "status", name], cli).stdout
    model = serve.client("s3").get_object(Bucket=bucket, Key=f"{name}/output/model.tar.gz")
    with tarfile.open(fileobj=model["Body"]) as tar:
        assert sorted(tar.getnames()) == ["rank-0.txt", "rank-1.txt"]


RESUMES = """
import os
from mpi4py import MPI
path = "/opt/ml/checkpoints/step.txt"
step = int(open(path).read()) if os.path.exists(path) else 0
print(f"rank {MPI.COMM_WORLD.Get_rank()} resumes at step {step}", flush=True)
MPI.COMM_WORLD.Barrier()
if MPI.COMM_WORLD.Get_rank() == 0:
    os.makedirs("/opt/ml/checkpoints", exist_ok=True)
    open(path, "w").write(str(step + 1))
"""


def test_a_spot_job_with_checkpoints_resumes_where_the_last_one_stopped(
    serve: ServeProcess, env: dict[str, str], tmp_path: Path, bucket: str
) -> None:
    cli = _env(serve, env)
    train = tmp_path / "resume.py"
    train.write_text(RESUMES)
    role = "arn:aws:iam::123456789012:role/serve-tests"
    for expected in (0, 1):
        done = _run([str(BIN / "smmpi"), "submit", str(train), "--instances", "2", "--ppn", "1",
                     "--spot", "--checkpoint-s3-uri", f"s3://{bucket}/ckpt", "--wait",
                     "--role", role, "--bucket", bucket], cli)  # fmt: skip
        assert done.returncode == 0, done.stderr
        assert f"rank 1 resumes at step {expected}" in done.stdout, done.stdout
    name = done.stdout.strip().splitlines()[-1]
    desc = serve.client("sagemaker").describe_training_job(TrainingJobName=name)
    assert desc["EnableManagedSpotTraining"] is True
    step = serve.client("s3").get_object(Bucket=bucket, Key="ckpt/step.txt")["Body"].read()
    assert step == b"2"
