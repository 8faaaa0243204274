"""boto3 against a real ``smmpi serve``: requests from ``submit --dry-run --json`` run for real."""

from __future__ import annotations

import io
import json
import subprocess
import tarfile
import time
from datetime import timedelta
from pathlib import Path

import pytest
from botocore.exceptions import ClientError

from smmpi.causes import summary, with_line
from smmpi.ops.status import status_of
from tests.helpers import BIN
from tests.serve.serving import (
    ServeProcess,
    demo_source,
    dry_run_request,
    log_lines,
    put_source,
    script_source,
    wait_end,
)

pytestmark = pytest.mark.aws


def test_a_dry_run_request_runs_logs_per_rank_and_uploads_its_model(
    serve: ServeProcess, bucket: str, job_name: str
) -> None:
    request = dry_run_request(serve.env, job_name, bucket, "--instances", "2", "--ppn", "2")
    put_source(serve, request, demo_source())
    arn = serve.client("sagemaker").create_training_job(**request)["TrainingJobArn"]
    assert arn.endswith(f":training-job/{job_name.lower()}")
    desc = wait_end(serve, job_name)
    assert desc["TrainingJobStatus"] == "Completed", desc.get("FailureReason")
    steps = [t["Status"] for t in desc["SecondaryStatusTransitions"]]
    assert steps == ["Starting", "Downloading", "Training", "Uploading", "Completed"]
    assert desc["SecondaryStatusTransitions"][0]["StatusMessage"] == (
        "Preparing the instances for training"
    )
    assert desc["TrainingStartTime"] <= desc["TrainingEndTime"]
    assert desc["BillableTimeInSeconds"] >= 1
    assert desc["HyperParameters"] == request["HyperParameters"]
    assert desc["ResourceConfig"] == request["ResourceConfig"]
    model = desc["ModelArtifacts"]["S3ModelArtifacts"]
    assert model == f"s3://{bucket}/{job_name}/output/model.tar.gz"
    keys = {o["Key"] for o in serve.client("s3").list_objects_v2(Bucket=bucket)["Contents"]}
    assert {f"{job_name}/output/model.tar.gz", f"{job_name}/output/output.tar.gz"} <= keys
    streams = log_lines(serve, job_name)
    assert sorted(s.rsplit("-", 1)[0] for s in streams) == [
        f"{job_name}/algo-1",
        f"{job_name}/algo-2",
    ]
    algo1 = next(lines for s, lines in streams.items() if "/algo-1-" in s)
    for rank, host in ((0, 1), (1, 1), (2, 2), (3, 2)):
        assert any(f"rank {rank} (algo-{host})" in line for line in algo1), algo1
    assert any(line.startswith("[1,mpirank:0,algo-1]<stdout>:") for line in algo1)


FAILING = """
import os, sys
from mpi4py import MPI
rank = MPI.COMM_WORLD.Get_rank()
print(f"rank {rank} says hello", flush=True)
if rank == 1:
    raise ValueError("rank one gives up")
MPI.COMM_WORLD.Barrier()
"""

WRITES_FAILURE = """
from mpi4py import MPI
if MPI.COMM_WORLD.Get_rank() == 0:
    with open("/opt/ml/output/failure", "w") as f:
        f.write("my own reason: " + "x" * 2000)
    raise SystemExit(3)
MPI.COMM_WORLD.Barrier()
"""


def _script_job(serve: ServeProcess, bucket: str, name: str, text: str, *args: str) -> None:
    request = dry_run_request(serve.env, name, bucket, "--instances", "2", "--ppn", "1", *args)
    request["HyperParameters"]["sagemaker_program"] = json.dumps("train.py")
    put_source(serve, request, script_source(text))
    serve.client("sagemaker").create_training_job(**request)


def _without_message(reason: str) -> tuple[str, str, str]:
    """A FailureReason without its ErrorMessage (mpirun's output, which varies): the text
    before it, the command without its cut (where the 1024 characters end depends on the
    message's length) and the text after the command."""
    head, _, rest = reason.partition('ErrorMessage "')
    after = rest[rest.index('"\nCommand "') + len('"\nCommand "') :]
    command, _, end = after.partition('", exit code')
    return head, command.removesuffix("..."), end


def _same_but_message(one: str, other: str) -> bool:
    """Two FailureReasons alike but for their ErrorMessage and where their command is cut."""
    (head, command, end), (head2, command2, end2) = _without_message(one), _without_message(other)
    shorter, longer = sorted((command, command2), key=len)
    return (head, end) == (head2, end2) and longer.startswith(shorter) and len(shorter) > 40


def test_a_failing_rank_is_the_failure_reason(
    serve: ServeProcess, bucket: str, job_name: str, tmp_path: Path
) -> None:
    _script_job(serve, bucket, job_name, FAILING)
    desc = wait_end(serve, job_name)
    assert desc["TrainingJobStatus"] == "Failed"
    assert desc["SecondaryStatus"] == "Failed"
    reason = desc["FailureReason"]
    assert reason.startswith("AlgorithmError: ExecuteUserScriptError:\nExitCode 1\n"), reason
    assert "mpirun --host algo-1,algo-2 -np 2" in reason
    line = "rank 1 (algo-2) failed: ValueError: rank one gives up"
    assert reason.endswith(f", exit code: 1\nsmmpi: {line}"), reason
    assert len(reason) <= 1024
    # one failure, one FailureReason: submit --local of the same program records the same
    # text (its ErrorMessage is mpirun's output, which varies from run to run), and smmpi
    # status sums either up by smmpi's line
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "train.py").write_text(FAILING, encoding="utf-8")
    env = {**serve.env, "SMMPI_LOCAL_JOBS": str(tmp_path / "jobs")}
    local = subprocess.run(
        [BIN / "smmpi", "submit", tmp_path / "src" / "train.py", "--local", "-N", "2", "-n", "1"],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert local.returncode == 1 and local.stderr.splitlines()[-1] == f"smmpi: {line}", local
    record = json.loads(next((tmp_path / "jobs").glob("*/describe.json")).read_text())
    recorded = record["FailureReason"]
    assert _same_but_message(recorded, reason), (recorded, reason)
    status = subprocess.run(
        [str(BIN / "smmpi"), "status", job_name],
        env=serve.env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    # what smmpi status shows of the record (its times are text in describe.json)
    local_status = "\n".join(
        status_of({k: v for k, v in record.items() if "Time" not in k}).lines()
    )
    for shown in (status.stdout, local_status):
        assert ["failure", line] in [row.split(None, 1) for row in shown.splitlines()], shown
    lines = [line for ls in log_lines(serve, job_name).values() for line in ls]
    assert any("rank 1 says hello" in line for line in lines)


def test_a_programs_own_failure_file_is_the_reason_then_smmpis_line(
    serve: ServeProcess, bucket: str, job_name: str
) -> None:
    _script_job(serve, bucket, job_name, WRITES_FAILURE)
    desc = wait_end(serve, job_name)
    assert desc["TrainingJobStatus"] == "Failed"
    line = "rank 0 (algo-1) failed: exit code 3"
    assert desc["FailureReason"] == with_line("my own reason: " + "x" * 2000, line)
    assert len(desc["FailureReason"]) == 1024 and summary(desc["FailureReason"]) == line


SLEEPER = """
import time, os
from mpi4py import MPI
os.makedirs("/opt/ml/model", exist_ok=True)
open(f"/opt/ml/model/rank-{MPI.COMM_WORLD.Get_rank()}.txt", "w").write("partial")
print("sleeping", flush=True)
time.sleep(600)
"""


def test_stop_training_job_stops_it_and_still_uploads_the_model(
    serve: ServeProcess, bucket: str, job_name: str
) -> None:
    _script_job(serve, bucket, job_name, SLEEPER)
    sm = serve.client("sagemaker")
    deadline = time.monotonic() + 120
    while not any("sleeping" in line for ls in log_lines(serve, job_name).values() for line in ls):
        assert time.monotonic() < deadline, "the job never printed"
        time.sleep(0.2)
    sm.stop_training_job(TrainingJobName=job_name)
    assert sm.describe_training_job(TrainingJobName=job_name)["TrainingJobStatus"] in (
        "Stopping",
        "Stopped",
    )
    sm.get_waiter("training_job_completed_or_stopped").wait(
        TrainingJobName=job_name, WaiterConfig={"Delay": 1, "MaxAttempts": 60}
    )
    desc = sm.describe_training_job(TrainingJobName=job_name)
    assert desc["TrainingJobStatus"] == "Stopped"
    assert [t["Status"] for t in desc["SecondaryStatusTransitions"]][-2:] == ["Stopping", "Stopped"]
    body = serve.client("s3").get_object(Bucket=bucket, Key=f"{job_name}/output/model.tar.gz")
    with tarfile.open(fileobj=io.BytesIO(body["Body"].read())) as tar:
        assert sorted(tar.getnames()) == ["rank-0.txt", "rank-1.txt"]
    with pytest.raises(ClientError) as err:
        sm.stop_training_job(TrainingJobName=job_name)
    assert err.value.response["Error"]["Code"] == "ValidationException"


def test_max_runtime_stops_the_job_as_max_runtime_exceeded(
    serve: ServeProcess, bucket: str, job_name: str
) -> None:
    _script_job(serve, bucket, job_name, SLEEPER, "--max-run", "3")
    desc = wait_end(serve, job_name)
    assert desc["TrainingJobStatus"] == "Stopped"
    assert desc["SecondaryStatus"] == "MaxRuntimeExceeded"


def test_what_cannot_run_here_fails_at_once_saying_so(
    serve: ServeProcess, bucket: str, job_name: str
) -> None:
    request = dry_run_request(serve.env, job_name, bucket)
    request["AlgorithmSpecification"]["TrainingInputMode"] = "Pipe"
    serve.client("sagemaker").create_training_job(**request)
    desc = wait_end(serve, job_name, timeout=10)
    assert desc["TrainingJobStatus"] == "Failed"
    assert desc["FailureReason"] == "smmpi serve runs File input mode only, not Pipe"


def test_names_are_unique_and_unknown_jobs_are_not_found(
    serve: ServeProcess, bucket: str, job_name: str
) -> None:
    sm = serve.client("sagemaker")
    request = dry_run_request(serve.env, job_name, bucket)
    request["AlgorithmSpecification"]["TrainingImage"] = "123.dkr.ecr.us-west-2.amazonaws.com/x:1"
    sm.create_training_job(**request)
    with pytest.raises(ClientError) as err:
        sm.create_training_job(**request)
    assert err.value.response["Error"]["Code"] == "ResourceInUse"
    for call in (sm.describe_training_job, sm.stop_training_job):
        with pytest.raises(ClientError) as err:
            call(TrainingJobName=f"{job_name}-nope")
        assert err.value.response["Error"] == {
            "Code": "ValidationException",
            "Message": "Requested resource not found",
        }
    assert "TensorFlow and PyTorch" in wait_end(serve, job_name, 10)["FailureReason"]


def test_list_filters_sorts_pages_and_tags(serve: ServeProcess, bucket: str, job_name: str) -> None:
    sm = serve.client("sagemaker")
    names = [f"{job_name}-l{i}" for i in range(5)]
    for name in names:
        request = dry_run_request(serve.env, name, bucket)
        request["AlgorithmSpecification"]["TrainingInputMode"] = "FastFile"
        sm.create_training_job(**request)
    pages = sm.get_paginator("list_training_jobs").paginate(
        NameContains=job_name,
        SortBy="Name",
        SortOrder="Descending",
        PaginationConfig={"PageSize": 2},
    )
    listed = [s["TrainingJobName"] for page in pages for s in page["TrainingJobSummaries"]]
    assert listed == sorted(names, reverse=True)
    first = sm.describe_training_job(TrainingJobName=names[0])
    created = first["CreationTime"]

    def listed_with(**filters: object) -> list[str]:
        page = sm.list_training_jobs(NameContains=job_name, MaxResults=100, **filters)
        return sorted(s["TrainingJobName"] for s in page["TrainingJobSummaries"])

    assert listed_with(CreationTimeAfter=created - timedelta(seconds=2)) == names
    assert listed_with(CreationTimeBefore=created - timedelta(seconds=2)) == []
    assert listed_with(LastModifiedTimeAfter=created + timedelta(hours=1)) == []
    assert listed_with(LastModifiedTimeBefore=created + timedelta(hours=1)) == names
    failed = sm.list_training_jobs(NameContains=job_name, StatusEquals="Completed")
    assert failed["TrainingJobSummaries"] == []
    arn = first["TrainingJobArn"]
    sm.add_tags(ResourceArn=arn, Tags=[{"Key": "team", "Value": "mpi"}])
    assert {"Key": "team", "Value": "mpi"} in sm.list_tags(ResourceArn=arn)["Tags"]
    sm.delete_tags(ResourceArn=arn, TagKeys=["team"])
    assert {"Key": "team", "Value": "mpi"} not in sm.list_tags(ResourceArn=arn)["Tags"]


CHECKPOINTED = """
import os
from mpi4py import MPI
rank = MPI.COMM_WORLD.Get_rank()
data = sorted(os.path.relpath(os.path.join(d, f), "/opt/ml/input/data/train")
              for d, _, fs in os.walk("/opt/ml/input/data/train") for f in fs)
print(f"rank {rank} sees {data}", flush=True)
old = "/opt/ml/checkpoints/step.txt"
step = int(open(old).read()) if os.path.exists(old) else 0
print(f"rank {rank} resumes at step {step}", flush=True)
MPI.COMM_WORLD.Barrier()
if rank == 0:
    os.makedirs("/opt/ml/checkpoints", exist_ok=True)
    open(old, "w").write(str(step + 5))
"""


def test_channels_come_from_s3_and_checkpoints_carry_over_to_the_next_job(
    serve: ServeProcess, bucket: str, job_name: str
) -> None:
    s3 = serve.client("s3")
    for key in ("data/train/a.csv", "data/train/deep/b.csv"):
        s3.put_object(Bucket=bucket, Key=key, Body=b"1,2\n")
    checkpoints = {"S3Uri": f"s3://{bucket}/checkpoints/run-1", "LocalPath": "/opt/ml/checkpoints"}
    channel = {
        "ChannelName": "train",
        "DataSource": {
            "S3DataSource": {
                "S3DataType": "S3Prefix",
                "S3Uri": f"s3://{bucket}/data/train",
                "S3DataDistributionType": "FullyReplicated",
            }
        },
    }
    for run, expected_step in ((1, 0), (2, 5)):
        name = f"{job_name}-{run}"
        request = dry_run_request(serve.env, name, bucket, "--instances", "2", "--ppn", "1")
        request["HyperParameters"]["sagemaker_program"] = json.dumps("train.py")
        request |= {"InputDataConfig": [channel], "CheckpointConfig": checkpoints}
        put_source(serve, request, script_source(CHECKPOINTED))
        serve.client("sagemaker").create_training_job(**request)
        desc = wait_end(serve, name)
        assert desc["TrainingJobStatus"] == "Completed", desc.get("FailureReason")
        assert desc["CheckpointConfig"] == checkpoints
        lines = [x for ls in log_lines(serve, name).values() for x in ls]
        for rank in (0, 1):
            assert any(f"rank {rank} sees ['a.csv', 'deep/b.csv']" in x for x in lines), lines
            assert any(f"rank {rank} resumes at step {expected_step}" in x for x in lines), lines
    saved = s3.get_object(Bucket=bucket, Key="checkpoints/run-1/step.txt")["Body"].read()
    assert saved == b"10"


def test_s3_keys_of_every_spelling_are_signed_stored_and_listed(
    serve: ServeProcess, bucket: str
) -> None:
    s3 = serve.client("s3")
    keys = ["a b/c+d.txt", "ü/ñ/数据.bin", "%41/x=y&z", "dir/../up.txt", "~tilde/*star*", "e'q\"s"]
    for i, key in enumerate(keys):
        s3.put_object(Bucket=bucket, Key=key, Body=f"body {i}".encode())
    for i, key in enumerate(keys):
        assert s3.get_object(Bucket=bucket, Key=key)["Body"].read() == f"body {i}".encode()
    listed = s3.list_objects_v2(Bucket=bucket, Prefix="a b/")["Contents"]
    assert [o["Key"] for o in listed] == ["a b/c+d.txt"]
    s3.delete_object(Bucket=bucket, Key="a b/c+d.txt")
    remaining = {o["Key"] for o in s3.list_objects_v2(Bucket=bucket)["Contents"]}
    assert remaining == set(keys) - {"a b/c+d.txt"}


def test_parallel_one_keeps_the_next_job_in_starting(
    serve: ServeProcess, bucket: str, job_name: str
) -> None:
    first, second = f"{job_name}-a", f"{job_name}-b"
    _script_job(serve, bucket, first, SLEEPER)
    _script_job(serve, bucket, second, SLEEPER)
    sm = serve.client("sagemaker")
    deadline = time.monotonic() + 120
    while sm.describe_training_job(TrainingJobName=first)["SecondaryStatus"] != "Training":
        assert time.monotonic() < deadline
        time.sleep(0.2)
    time.sleep(1)
    waiting = sm.describe_training_job(TrainingJobName=second)
    assert waiting["SecondaryStatus"] == "Starting"
    assert waiting["SecondaryStatusTransitions"][-1]["StatusMessage"] == (
        "Preparing the instances for training"
    )
    sm.stop_training_job(TrainingJobName=second)
    sm.stop_training_job(TrainingJobName=first)
    assert wait_end(serve, second)["TrainingJobStatus"] == "Stopped"
    assert wait_end(serve, first)["TrainingJobStatus"] == "Stopped"


PEEKS = """
import os
from mpi4py import MPI
secret = os.environ.get("SERVE_SECRET_TO_FIND", "")
found = sorted(k for k, v in os.environ.items() if k.startswith("AWS_") or (secret and secret in v))
print(f"rank {MPI.COMM_WORLD.Get_rank()} sees credentials: {found}", flush=True)
"""


def test_the_ranks_get_none_of_serves_credentials(
    serve: ServeProcess, bucket: str, job_name: str
) -> None:
    _script_job(serve, bucket, job_name, PEEKS)
    desc = wait_end(serve, job_name)
    assert desc["TrainingJobStatus"] == "Completed", desc.get("FailureReason")
    lines = [x for ls in log_lines(serve, job_name).values() for x in ls]
    for rank in (0, 1):
        assert any(f"rank {rank} sees credentials: []" in x for x in lines), lines
    secret = serve.exports["AWS_SECRET_ACCESS_KEY"]
    assert not any(secret in x for x in lines)


SHARDS = """
import os
from mpi4py import MPI
files = sorted(os.listdir("/opt/ml/input/data/train"))
print(f"rank {MPI.COMM_WORLD.Get_rank()} on {os.uname().nodename} has {files}", flush=True)
"""


def test_sharded_by_s3_key_gives_each_instance_its_share(
    serve: ServeProcess, bucket: str, job_name: str
) -> None:
    s3 = serve.client("s3")
    for i in range(5):
        s3.put_object(Bucket=bucket, Key=f"shards/part-{i}.csv", Body=b"x")
    request = dry_run_request(serve.env, job_name, bucket, "--instances", "2", "--ppn", "1")
    request["HyperParameters"]["sagemaker_program"] = json.dumps("train.py")
    request["InputDataConfig"] = [
        {
            "ChannelName": "train",
            "DataSource": {
                "S3DataSource": {
                    "S3DataType": "S3Prefix",
                    "S3Uri": f"s3://{bucket}/shards/",
                    "S3DataDistributionType": "ShardedByS3Key",
                }
            },
        }
    ]
    put_source(serve, request, script_source(SHARDS))
    serve.client("sagemaker").create_training_job(**request)
    desc = wait_end(serve, job_name)
    assert desc["TrainingJobStatus"] == "Completed", desc.get("FailureReason")
    lines = [x for ls in log_lines(serve, job_name).values() for x in ls]
    assert any(
        "rank 0 on algo-1 has ['part-0.csv', 'part-2.csv', 'part-4.csv']" in x for x in lines
    )
    assert any("rank 1 on algo-2 has ['part-1.csv', 'part-3.csv']" in x for x in lines), lines


def test_a_hyperparameter_the_tensorflow_shell_breaks_on_fails_the_job(
    serve: ServeProcess, bucket: str, job_name: str
) -> None:
    """As on SageMaker, where the TensorFlow images' toolkit runs the mpirun line through
    /bin/sh and a quote in a hyperparameter ends the job before any rank starts."""
    request = dry_run_request(serve.env, job_name, bucket, "--framework", "tensorflow")
    request["HyperParameters"]["msg"] = json.dumps("it's")
    put_source(serve, request, demo_source())
    serve.client("sagemaker").create_training_job(**request)
    desc = wait_end(serve, job_name)
    assert desc["TrainingJobStatus"] == "Failed"
    assert "hyperparameter msg" in desc["FailureReason"]
    assert "/bin/sh" in desc["FailureReason"]


def test_a_requests_own_np_is_the_world_the_job_completes_with(
    serve: ServeProcess, bucket: str, job_name: str
) -> None:
    """A boto3 request that names sagemaker_mpi_num_processes=3 on 2 x 2: the toolkit's mpirun
    runs ``-np 3`` over ``--host algo-1:2,algo-2:2`` and the job completes with 3 ranks."""
    request = dry_run_request(serve.env, job_name, bucket, "--instances", "2", "--ppn", "2")
    request["HyperParameters"]["sagemaker_mpi_num_processes"] = "3"
    put_source(serve, request, demo_source())
    serve.client("sagemaker").create_training_job(**request)
    desc = wait_end(serve, job_name)
    assert desc["TrainingJobStatus"] == "Completed", desc.get("FailureReason")
    lines = [line for ls in log_lines(serve, job_name).values() for line in ls]
    assert any("demo: all 3 ranks verified their results" in line for line in lines), lines
    assert any("rank 2 (algo-2)" in line for line in lines)
    assert not any("rank 3 (" in line for line in lines)
