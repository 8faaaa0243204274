"""status, jobs, stop, logs and fetch against a real moto server, through the real CLI.

Training jobs and their CloudWatch streams are written here with boto3 in
SageMaker's shapes (one stream per host, ``<job>/algo-k-<epoch>``, seed 004's
toolkit lines and ``[1,r]<stdout>:`` tags, including ranks sharing a line), so
these tests do not depend on the submit command.
"""

from __future__ import annotations

import dataclasses
import io
import json
import tarfile
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber

from smmpi import jobs
from smmpi.errors import BadInput, SmmpiError
from smmpi.logs import FailureScan
from tests.conftest import MotoServer, smmpi

SECRET = "testing-secret-do-not-print"
JOB = "smmpi-demo-2026-11-21-19-56-11-281"
BUCKET = "smmpi-test-bucket"

# Seed 004's worker and master toolkit lines, then the program's tagged output
# (all ranks' output arrives through mpirun on algo-1).
ALGO2 = """\
2021-05-11 19:59:14,421 sagemaker-training-toolkit INFO     Starting MPI run as worker node.
2021-05-11 19:59:14,423 sagemaker-training-toolkit INFO     Cannot connect to host algo-1
2021-05-11 19:59:15,542 sagemaker-training-toolkit INFO     Can connect to host algo-1
2021-05-11 19:59:15,553 sagemaker-training-toolkit INFO     Waiting for MPI process to finish.
2021-05-11 19:59:49,782 sagemaker-training-toolkit INFO     MPI process finished."""
ALGO3 = ALGO2.replace("14,421", "14,959")
ALGO1 = """\
2021-05-11 19:59:15,074 sagemaker-training-toolkit INFO     Starting MPI run as worker node.
2021-05-11 19:59:15,074 sagemaker-training-toolkit INFO     Creating SSH daemon.
2021-05-11 19:59:16,198 sagemaker-training-toolkit INFO     Can connect to host algo-2
2021-05-11 19:59:16,315 sagemaker-training-toolkit INFO     Can connect to host algo-3
2021-05-11 19:59:16,332 sagemaker-training-toolkit INFO     Invoking user script
[1,1]<stdout>:Hello I am rank 1
[1,0]<stdout>:Number of MPI processes that will talk to each other:  6
[1,0]<stdout>:point to point
[1,1]<stdout>:I received some data: [1,1]<stdout>:[0 1 2]
[1,0]<stdout>:==================================================
[1,0]<stdout>:Broadcasting from rank 0
[1,3]<stdout>:Data at rank 3 [1,2]<stdout>:Data at rank 2 [1,2]<stdout>:[0 1 2 3 4 5 6 7 8 9]
[1,3]<stdout>:[0 1 2 3 4 5 6 7 8 9]
[1,1]<stdout>:Data at rank 1 [1,0]<stdout>:Data at rank 0 [1,1]<stdout>:[0 1 2 3 4 5 6 7 8 9]
[1,0]<stdout>:[0 1 2 3 4 5 6 7 8 9]
[1,4]<stdout>:Data at rank 4 [1,5]<stdout>:Data at rank 5 [1,4]<stdout>:[0 1 2 3 4 5 6 7 8 9]
[1,5]<stdout>:[0 1 2 3 4 5 6 7 8 9]
[1,0]<stdout>:I am rank 0, my avg is: [2.5 2.5 2.5 2.5 2.5 2.5 2.5 2.5 2.5 2.5]
[1,2]<stdout>:I am rank 2, my avg is: [2.5 2.5 2.5 2.5 2.5 2.5 2.5 2.5 2.5 2.5]
[1,3]<stdout>:I am rank 3, my avg is: [2.5 2.5 2.5 2.5 2.5 2.5 2.5 2.5 2.5 2.5]
2021-05-11 19:59:19,754 sagemaker-training-toolkit INFO     Reporting training SUCCESS"""
ARR = "[0 1 2 3 4 5 6 7 8 9]"
AVG = "my avg is: [2.5 2.5 2.5 2.5 2.5 2.5 2.5 2.5 2.5 2.5]"


def create_job(
    moto: MotoServer, name: str = JOB, tagged: bool = True, count: int = 3, ppn: int = 2
) -> None:
    sm = moto.boto3_client("sagemaker")
    sm.create_training_job(
        TrainingJobName=name,
        AlgorithmSpecification={
            "TrainingImage": "763104351884.dkr.ecr.us-west-2.amazonaws.com/"
            "tensorflow-training:2.14-cpu-py310",
            "TrainingInputMode": "File",
        },
        RoleArn="arn:aws:iam::123456789012:role/smmpi-ExecutionRole",
        OutputDataConfig={"S3OutputPath": f"s3://{BUCKET}/jobs"},
        ResourceConfig={
            "InstanceType": "ml.c5.2xlarge",
            "InstanceCount": count,
            "VolumeSizeInGB": 30,
        },
        StoppingCondition={"MaxRuntimeInSeconds": 3600},
        HyperParameters={
            "sagemaker_mpi_enabled": "true",
            "sagemaker_mpi_num_of_processes_per_host": str(ppn),
        },
        Tags=[{"Key": "smmpi:managed", "Value": "true"}] if tagged else [],
    )


def write_streams(moto: MotoServer, streams: dict[str, str], name: str = JOB) -> None:
    logs = moto.boto3_client("logs")
    group = jobs.LOG_GROUP
    if not logs.describe_log_groups(logGroupNamePrefix=group)["logGroups"]:
        logs.create_log_group(logGroupName=group)
    now = int(time.time() * 1000)
    for host, text in streams.items():
        stream = f"{name}/{host}-1620763140"
        existing = logs.describe_log_streams(logGroupName=group, logStreamNamePrefix=stream)
        if not existing["logStreams"]:
            logs.create_log_stream(logGroupName=group, logStreamName=stream)
        events = [
            {"timestamp": now + i, "message": line} for i, line in enumerate(text.splitlines())
        ]
        logs.put_log_events(logGroupName=group, logStreamName=stream, logEvents=events)


def seed_job(moto: MotoServer) -> None:
    create_job(moto)
    write_streams(moto, {"algo-1": ALGO1, "algo-2": ALGO2, "algo-3": ALGO3})


def cli_env(env: dict[str, str], moto: MotoServer) -> dict[str, str]:
    return {**env, **moto.aws_env()}


def run(args: list[str], env: dict[str, str]) -> Any:
    done = smmpi(args, env)
    assert SECRET not in done.stdout + done.stderr
    assert "Traceback" not in done.stderr, done.stderr
    return done


# ---------------------------------------------------------------- logs


def test_logs_demux_groups_each_rank_including_shared_lines(
    moto_server: MotoServer, env: dict[str, str]
) -> None:
    seed_job(moto_server)
    done = run(["logs", JOB], cli_env(env, moto_server))
    assert done.returncode == 0, done.stderr
    blocks: dict[str, list[str]] = {}
    current = ""
    for line in done.stdout.splitlines():
        if line.startswith("==> "):
            current = line
            blocks[current] = []
        else:
            blocks[current].append(line)
    assert list(blocks) == [
        "==> rank 0 (algo-1) <==",
        "==> rank 1 (algo-1) <==",
        "==> rank 2 (algo-2) <==",
        "==> rank 3 (algo-2) <==",
        "==> rank 4 (algo-3) <==",
        "==> rank 5 (algo-3) <==",
    ]
    assert blocks["==> rank 1 (algo-1) <=="] == [
        "Hello I am rank 1",
        "I received some data: [0 1 2]",
        f"Data at rank 1 {ARR}",
    ]
    assert blocks["==> rank 2 (algo-2) <=="] == [f"Data at rank 2 {ARR}", f"I am rank 2, {AVG}"]
    assert blocks["==> rank 3 (algo-2) <=="] == [f"Data at rank 3 {ARR}", f"I am rank 3, {AVG}"]
    assert blocks["==> rank 5 (algo-3) <=="] == [f"Data at rank 5 {ARR}"]
    assert blocks["==> rank 0 (algo-1) <=="][-2:] == [
        f"Data at rank 0 {ARR}",
        f"I am rank 0, {AVG}",
    ]
    assert "sagemaker-training-toolkit" not in done.stdout


def test_logs_one_rank(moto_server: MotoServer, env: dict[str, str]) -> None:
    seed_job(moto_server)
    done = run(["logs", JOB, "--rank", "4"], cli_env(env, moto_server))
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [f"Data at rank 4 {ARR}"]
    done = run(["logs", JOB, "--rank", "9"], cli_env(env, moto_server))
    assert done.returncode == 0
    assert done.stdout == ""
    assert "no output from rank 9; ranks seen: [0, 1, 2, 3, 4, 5]" in done.stderr


def test_logs_one_host_shows_its_whole_stream(moto_server: MotoServer, env: dict[str, str]) -> None:
    seed_job(moto_server)
    done = run(["logs", JOB, "--host", "algo-2"], cli_env(env, moto_server))
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ALGO2.splitlines()
    done = run(["logs", JOB, "--host", "algo-1", "--rank", "3"], cli_env(env, moto_server))
    assert done.stdout.splitlines() == [f"Data at rank 3 {ARR}", f"I am rank 3, {AVG}"]
    done = run(["logs", JOB, "--host", "algo-7"], cli_env(env, moto_server))
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        "smmpi: invalid host: 'algo-7'; allowed: algo-1, algo-2, algo-3"
    ]


def test_logs_follow_of_a_finished_job_prints_every_line_once(
    moto_server: MotoServer, env: dict[str, str]
) -> None:
    seed_job(moto_server)
    done = run(["logs", JOB, "--follow"], cli_env(env, moto_server))
    assert done.returncode == 0, done.stderr
    out = done.stdout.splitlines()
    assert f"[2] Data at rank 2 {ARR}" in out
    assert out.count(f"[3] Data at rank 3 {ARR}") == 1
    assert (
        "[algo-2] 2021-05-11 19:59:15,553 sagemaker-training-toolkit INFO     "
        "Waiting for MPI process to finish." in out
    )
    assert done.stderr.strip().endswith(f"{JOB} Completed")


def test_follow_polls_until_the_job_ends(moto_server: MotoServer) -> None:
    """Lines written while the job runs arrive in order, each once, then polling stops."""
    logs = moto_server.boto3_client("logs")
    write_streams(moto_server, {"algo-1": "[1,1]<stdout>:half [1,0]<stdout>:step 1"})
    states = iter(["InProgress", "InProgress", "Completed"])

    class FakeSageMaker:
        def describe_training_job(self, TrainingJobName: str) -> dict[str, Any]:
            return {
                "TrainingJobName": TrainingJobName,
                "TrainingJobStatus": next(states),
                "ResourceConfig": {"InstanceType": "ml.c5.xlarge", "InstanceCount": 1},
            }

    more = iter(["[1,0]<stdout>:step 2\n[1,1]<stdout>:done", "[1,0]<stdout>:step 3"])
    emitted: list[list[str]] = []
    sleeps: list[float] = []

    def sleep(seconds: float) -> None:
        sleeps.append(seconds)
        write_streams(moto_server, {"algo-1": next(more)})

    final = jobs.follow(
        FakeSageMaker(),
        logs,
        JOB,
        lambda lines: emitted.append([ln.render() for ln in lines]),
        interval=0.5,
        sleep=sleep,
    )
    assert final.status == "Completed"
    assert sleeps == [0.5, 0.5]
    assert emitted == [["[0] step 1"], ["[0] step 2", "[1] half done"], ["[0] step 3"]]


def test_logs_name_the_failed_rank(moto_server: MotoServer, env: dict[str, str]) -> None:
    create_job(moto_server)
    write_streams(
        moto_server,
        {
            "algo-1": "\n".join(
                [
                    "[1,0]<stdout>:working",
                    "[1,3]<stderr>:Traceback (most recent call last):",
                    '[1,3]<stderr>:  File "demo.py", line 3, in <module>',
                    "[1,3]<stderr>:ZeroDivisionError: division by zero",
                    "MPI_ABORT was invoked on rank 3 in communicator MPI_COMM_WORLD",
                ]
            )
        },
    )
    done = run(["logs", JOB], cli_env(env, moto_server))
    assert done.returncode == 0
    assert "<stderr> ZeroDivisionError: division by zero" in done.stdout.splitlines()
    assert "smmpi: rank 3 failed: ZeroDivisionError: division by zero" in done.stderr


def test_logs_before_any_stream_exists(moto_server: MotoServer, env: dict[str, str]) -> None:
    create_job(moto_server)
    done = run(["logs", JOB], cli_env(env, moto_server))
    assert done.returncode == 0
    assert done.stdout == ""
    assert done.stderr.startswith(f"smmpi: no logs yet for {JOB}")


# ---------------------------------------------------------------- status, jobs, stop


def test_status(moto_server: MotoServer, env: dict[str, str]) -> None:
    create_job(moto_server)
    done = run(["status", JOB], cli_env(env, moto_server))
    assert done.returncode == 0, done.stderr
    rows = {line.split()[0]: line.split(None, 1)[1] for line in done.stdout.splitlines()}
    assert rows["job"] == JOB
    assert rows["status"] == "Completed"
    assert "progress" not in rows
    assert rows["instances"] == "3 x ml.c5.2xlarge"
    assert rows["processes"] == "2 per host, 6 in all"
    assert rows["model"] == f"s3://{BUCKET}/jobs/{JOB}/output/model.tar.gz"
    as_json = json.loads(run(["status", JOB, "--json"], cli_env(env, moto_server)).stdout)
    assert as_json["status"] == "Completed"
    assert as_json["instance_count"] == 3
    assert as_json["processes_per_host"] == 2


def test_jobs_lists_only_smmpi_jobs(moto_server: MotoServer, env: dict[str, str]) -> None:
    create_job(moto_server, "smmpi-one")
    create_job(moto_server, "made-by-someone-else", tagged=False)
    create_job(moto_server, "smmpi-two")
    done = run(["jobs"], cli_env(env, moto_server))
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].split() == ["JOB", "STATUS", "CREATED", "TOOK"]
    assert sorted(line.split()[0] for line in lines[1:]) == ["smmpi-one", "smmpi-two"]
    listed = json.loads(run(["jobs", "--json", "--limit", "1"], cli_env(env, moto_server)).stdout)
    assert len(listed) == 1
    assert listed[0]["name"] in {"smmpi-one", "smmpi-two"}


def test_jobs_when_there_are_none(moto_server: MotoServer, env: dict[str, str]) -> None:
    create_job(moto_server, "made-by-someone-else", tagged=False)
    done = run(["jobs"], cli_env(env, moto_server))
    assert done.returncode == 0
    assert done.stdout == ""
    assert "no jobs submitted by smmpi" in done.stderr


def test_stop_of_a_finished_job_changes_nothing(
    moto_server: MotoServer, env: dict[str, str]
) -> None:
    create_job(moto_server)
    done = run(["stop", JOB], cli_env(env, moto_server))
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"{JOB} already Completed; nothing to stop"


def _stubbed_sagemaker() -> tuple[Any, Stubber]:
    sm = boto3.client(
        "sagemaker", region_name="us-west-2", aws_access_key_id="x", aws_secret_access_key="y"
    )
    return sm, Stubber(sm)


def test_stop_of_a_running_job_requests_the_stop() -> None:
    """moto cannot hold a job InProgress, so the request is checked on a stubbed client."""
    sm, stub = _stubbed_sagemaker()
    described = {
        "TrainingJobName": JOB,
        "TrainingJobArn": "arn:x",
        "TrainingJobStatus": "InProgress",
        "SecondaryStatus": "Training",
        "CreationTime": 0,
        "AlgorithmSpecification": {"TrainingInputMode": "File"},
        "ResourceConfig": {"VolumeSizeInGB": 30},
        "StoppingCondition": {},
        "ModelArtifacts": {"S3ModelArtifacts": "s3://b/k"},
    }
    stub.add_response("describe_training_job", described, {"TrainingJobName": JOB})
    stub.add_response("stop_training_job", {}, {"TrainingJobName": JOB})
    with stub:
        message = jobs.stop(sm, JOB)
    stub.assert_no_pending_responses()
    assert message.startswith(f"{JOB}: stop requested (was InProgress)")


def test_stop_of_a_stopping_job_sends_nothing() -> None:
    sm, stub = _stubbed_sagemaker()
    stub.add_response(
        "describe_training_job",
        {
            "TrainingJobName": JOB,
            "TrainingJobArn": "arn:x",
            "TrainingJobStatus": "Stopping",
            "SecondaryStatus": "Stopping",
            "CreationTime": 0,
            "AlgorithmSpecification": {"TrainingInputMode": "File"},
            "ResourceConfig": {"VolumeSizeInGB": 30},
            "StoppingCondition": {},
            "ModelArtifacts": {"S3ModelArtifacts": "s3://b/k"},
        },
        {"TrainingJobName": JOB},
    )
    with stub:
        assert jobs.stop(sm, JOB) == f"{JOB} is already stopping"
    stub.assert_no_pending_responses()


def test_real_sagemaker_not_found_message_is_an_unknown_job() -> None:
    sm, stub = _stubbed_sagemaker()
    stub.add_client_error(
        "describe_training_job", "ValidationException", "Requested resource not found.", 400
    )
    with stub, pytest.raises(jobs.UnknownJob) as err:
        jobs.describe(sm, "nope")
    assert err.value.exit_code == 2
    assert str(err.value) == "unknown job: 'nope': no such training job in us-west-2"


# ---------------------------------------------------------------- fetch


def _tar_gz(files: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def test_fetch_downloads_and_extracts_both_archives(
    moto_server: MotoServer, env: dict[str, str], tmp_path: Path
) -> None:
    create_job(moto_server)
    s3 = moto_server.boto3_client("s3")
    s3.create_bucket(Bucket=BUCKET, CreateBucketConfiguration={"LocationConstraint": "us-west-2"})
    prefix = f"jobs/{JOB}/output"
    s3.put_object(
        Bucket=BUCKET,
        Key=f"{prefix}/model.tar.gz",
        Body=_tar_gz({"weights.npy": b"w" * 10, "sub/config.json": b"{}"}),
    )
    s3.put_object(
        Bucket=BUCKET,
        Key=f"{prefix}/output.tar.gz",
        Body=_tar_gz({"data/rank-0.txt": b"rank 0 done\n"}),
    )
    dest = tmp_path / "artifacts"
    done = run(["fetch", JOB, "--to", str(dest)], cli_env(env, moto_server))
    assert done.returncode == 0, done.stderr
    assert (dest / "model" / "weights.npy").read_bytes() == b"w" * 10
    assert (dest / "model" / "sub" / "config.json").read_text() == "{}"
    assert (dest / "output" / "data" / "rank-0.txt").read_text() == "rank 0 done\n"
    assert not list(dest.glob("*.tar.gz"))
    assert done.stdout.splitlines() == [
        f"model: 2 file(s) in {dest / 'model'}",
        f"output: 1 file(s) in {dest / 'output'}",
    ]


def test_fetch_default_dir_and_a_missing_archive(
    moto_server: MotoServer, env: dict[str, str], tmp_path: Path
) -> None:
    create_job(moto_server)
    s3 = moto_server.boto3_client("s3")
    s3.create_bucket(Bucket=BUCKET, CreateBucketConfiguration={"LocationConstraint": "us-west-2"})
    s3.put_object(
        Bucket=BUCKET, Key=f"jobs/{JOB}/output/output.tar.gz", Body=_tar_gz({"log.txt": b"x"})
    )
    done = smmpi(["fetch", JOB], cli_env(env, moto_server), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / JOB / "output" / "log.txt").read_text() == "x"
    assert f"model: no archive at s3://{BUCKET}/jobs/{JOB}/output/model.tar.gz" in done.stderr


def test_fetch_with_nothing_to_fetch_fails(
    moto_server: MotoServer, env: dict[str, str], tmp_path: Path
) -> None:
    create_job(moto_server)
    moto_server.boto3_client("s3").create_bucket(
        Bucket=BUCKET, CreateBucketConfiguration={"LocationConstraint": "us-west-2"}
    )
    done = run(["fetch", JOB, "--to", str(tmp_path / "d")], cli_env(env, moto_server))
    assert done.returncode == 1
    assert done.stderr.strip().splitlines() == [
        f"smmpi: {JOB} (Completed) has no model or output archive at "
        f"s3://{BUCKET}/jobs/{JOB}/output/model.tar.gz, "
        f"s3://{BUCKET}/jobs/{JOB}/output/output.tar.gz"
    ]


def test_fetch_refuses_archive_members_outside_the_directory(tmp_path: Path) -> None:
    archive = tmp_path / "model.tar.gz"
    archive.write_bytes(_tar_gz({"../escaped.txt": b"x"}))
    with pytest.raises(SmmpiError, match=r"refusing unsafe member '\.\./escaped\.txt'"):
        jobs._extract(archive, tmp_path / "model")
    assert not (tmp_path / "escaped.txt").exists()


# ---------------------------------------------------------------- bad input


@pytest.mark.parametrize("command", [["status"], ["stop"], ["logs"], ["fetch"]])
@pytest.mark.parametrize("name", ["bad_name", "a.b", "x" * 64, "trailing-", "_leading"])
def test_bad_job_name_is_one_line_exit_2(
    command: list[str], name: str, env: dict[str, str]
) -> None:
    done = run([*command, name], env)  # no AWS at all: the name is refused first
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        f"smmpi: invalid job name: {name!r}; allowed: {jobs.JOB_NAME_RULE}"
    ]


@pytest.mark.parametrize("command", [["status"], ["stop"], ["logs"], ["fetch"], ["logs", "-f"]])
def test_unknown_job_is_one_line_exit_2(
    command: list[str], moto_server: MotoServer, env: dict[str, str], tmp_path: Path
) -> None:
    create_job(moto_server, "some-other-job")
    done = smmpi([*command, "no-such-job"], cli_env(env, moto_server), cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip().splitlines() == [
        "smmpi: unknown job: 'no-such-job': no such training job in us-west-2"
    ]
    assert not (tmp_path / "no-such-job").exists()


def test_bad_rank_and_host_are_refused(env: dict[str, str]) -> None:
    done = run(["logs", JOB, "--rank", "-1"], env)
    assert done.returncode == 2
    assert done.stderr.strip() == "smmpi: invalid rank: -1; allowed: an integer >= 0"
    done = run(["logs", JOB, "--host", "worker-1"], env)
    assert done.returncode == 2
    assert done.stderr.strip().startswith("smmpi: invalid host: 'worker-1'")


def test_no_credentials_is_one_line(moto_server: MotoServer, env: dict[str, str]) -> None:
    no_keys = {**env, "AWS_ENDPOINT_URL": moto_server.url, "AWS_REGION": "us-west-2"}
    done = run(["status", JOB], no_keys)
    assert done.returncode == 2
    assert len(done.stderr.strip().splitlines()) == 1
    assert done.stderr.startswith("smmpi: no AWS credentials found")


def test_no_region_is_one_line(env: dict[str, str]) -> None:
    done = run(["status", JOB], {**env, "AWS_ACCESS_KEY_ID": "a", "AWS_SECRET_ACCESS_KEY": SECRET})
    assert done.returncode == 2
    assert done.stderr.strip().startswith("smmpi: no AWS region")


def test_check_name_accepts_sagemaker_names() -> None:
    assert jobs.check_name("a") == "a"
    assert jobs.check_name("tensorflow-training-2021-05-11-19-56-11-281")
    assert jobs.check_name("a--b" + "c" * 59)
    with pytest.raises(BadInput):
        jobs.check_name("-leading-hyphen")
    with pytest.raises(BadInput):
        jobs.check_name("a" * 64)


def test_interrupted_follow_leaves_the_job_running(
    moto_server: MotoServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from click.testing import CliRunner

    from smmpi.cli import main

    create_job(moto_server)
    for key, value in moto_server.aws_env().items():
        monkeypatch.setenv(key, value)
    monkeypatch.setenv("SMMPI_CONFIG", str(tmp_path / "config.json"))
    monkeypatch.delenv("SMMPI_REGION", raising=False)

    def interrupted(*args: Any, **kwargs: Any) -> Any:
        raise KeyboardInterrupt

    monkeypatch.setattr(jobs, "follow", interrupted)
    result = CliRunner().invoke(main, ["logs", JOB, "--follow"])
    assert result.exit_code == 130
    assert f"stopped following; {JOB} keeps running (`smmpi stop {JOB}` stops it)" in (
        result.output
    )


def test_status_of_a_running_job_shows_its_phase_and_progress() -> None:
    sm, stub = _stubbed_sagemaker()
    stub.add_response(
        "describe_training_job",
        {
            "TrainingJobName": JOB,
            "TrainingJobArn": "arn:x",
            "TrainingJobStatus": "InProgress",
            "SecondaryStatus": "Downloading",
            "CreationTime": datetime(2026, 1, 1, tzinfo=timezone.utc),
            "AlgorithmSpecification": {"TrainingInputMode": "File"},
            "ResourceConfig": {
                "InstanceType": "ml.c5.2xlarge",
                "InstanceCount": 3,
                "VolumeSizeInGB": 30,
            },
            "StoppingCondition": {},
            "ModelArtifacts": {"S3ModelArtifacts": "s3://b/k"},
            "SecondaryStatusTransitions": [
                {
                    "Status": "Starting",
                    "StartTime": datetime(2026, 1, 1, tzinfo=timezone.utc),
                    "StatusMessage": "Preparing the instances for training",
                },
                {
                    "Status": "Downloading",
                    "StartTime": datetime(2026, 1, 1, 0, 1, tzinfo=timezone.utc),
                    "StatusMessage": "Downloading input data",
                },
            ],
        },
        {"TrainingJobName": JOB},
    )
    with stub:
        st = jobs.job_status(sm, JOB)
    rows = dict(line.split(None, 1) for line in st.lines())
    assert rows["status"] == "InProgress (Downloading)"
    assert rows["progress"] == "Downloading input data"
    assert not st.done
    assert rows["created"] == "2026-01-01T00:00:00+00:00"


def test_failure_summary_names_the_rank_and_sagemakers_reason() -> None:
    scan = FailureScan()
    for line in [
        "[1,2]<stderr>:Traceback (most recent call last):",
        "[1,2]<stderr>:ValueError: bad shard",
        "MPI_ABORT was invoked on rank 2 in communicator MPI_COMM_WORLD",
    ]:
        scan.feed(line)
    failed = jobs.JobStatus(
        name=JOB,
        status="Failed",
        secondary="Failed",
        instance_type="ml.c5.xlarge",
        instance_count=2,
        processes_per_host=2,
        created=None,
        started=None,
        ended=None,
        billable_seconds=None,
        output_path=None,
        model_artifacts=None,
        transitions=(),
        failure_reason="AlgorithmError: ExecuteUserScriptError:\nExitCode 1",
    )
    assert jobs.failure_summary(failed, scan) == [
        "rank 2 failed: ValueError: bad shard",
        f"{JOB} Failed: AlgorithmError: ExecuteUserScriptError:",
    ]
    completed = dataclasses.replace(failed, status="Completed", failure_reason=None)
    assert jobs.failure_summary(completed, FailureScan()) == []
