"""`smmpi logs`: CloudWatch streams of a moto server, demuxed by rank as local runs are."""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path
from typing import Any

import pytest

from smmpi.causes import say
from smmpi.mpi_output import FailureScan
from smmpi.ops import cloudwatch
from smmpi.ops import status as ops_status
from tests.helpers import MotoServer
from tests.ops.jobs import JOB, cli_env, create_job, run

pytestmark = pytest.mark.aws


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


def write_streams(moto: MotoServer, streams: dict[str, str], name: str = JOB) -> None:
    logs = moto.boto3_client("logs")
    group = cloudwatch.LOG_GROUP
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
    assert done.returncode == 2  # the job runs 6 ranks
    assert done.stdout == ""
    assert done.stderr == f"smmpi: invalid rank: 9; allowed: 0 to 5 ({JOB} runs 6 ranks)\n"


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

    final = cloudwatch.follow(
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


def test_bad_rank_and_host_are_refused(env: dict[str, str]) -> None:
    done = run(["logs", JOB, "--rank", "-1"], env)
    assert done.returncode == 2
    assert done.stderr.strip() == "smmpi: invalid rank: -1; allowed: an integer >= 0"
    done = run(["logs", JOB, "--host", "worker-1"], env)
    assert done.returncode == 2
    assert done.stderr.strip().startswith("smmpi: invalid host: 'worker-1'")


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

    monkeypatch.setattr(cloudwatch, "follow", interrupted)
    result = CliRunner().invoke(main, ["logs", JOB, "--follow"])
    assert result.exit_code == 130
    assert f"stopped following; {JOB} keeps running (`smmpi stop {JOB}` stops it)" in (
        result.output
    )


def test_failure_summary_names_the_rank_and_sagemakers_reason() -> None:
    scan = FailureScan()
    for line in [
        "[1,2]<stderr>:Traceback (most recent call last):",
        "[1,2]<stderr>:ValueError: bad shard",
        "MPI_ABORT was invoked on rank 2 in communicator MPI_COMM_WORLD",
    ]:
        scan.feed(line)
    failed = ops_status.JobStatus(
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
    assert cloudwatch.failure_summary(failed, scan) == [
        "rank 2 failed: ValueError: bad shard",
        f"{JOB} Failed: AlgorithmError: ExecuteUserScriptError: ExitCode 1",
    ]
    # a FailureReason that carries smmpi's line (smmpi serve's) is summed up by that line
    served = dataclasses.replace(
        failed, failure_reason=failed.failure_reason + "\nsmmpi: rank 2 (algo-2) failed: boom"
    )
    assert cloudwatch.failure_summary(served, FailureScan())[-1] == (
        f"{JOB} Failed: rank 2 (algo-2) failed: boom"
    )
    # a rank killed by a signal reads as a local run's line does: the signal's name, and the
    # table's words for SIGKILL (the log cannot tell an OOM kill from kill -9)
    killed = FailureScan()
    killed.feed(
        "mpirun noticed that process rank 1 with PID 0 on node vm exited on signal 9 (Killed)."
    )
    stopped = dataclasses.replace(failed, status="Stopped", failure_reason=None)
    assert cloudwatch.failure_summary(stopped, killed) == [f"rank 1 {say('sigkill')}"]
    completed = dataclasses.replace(failed, status="Completed", failure_reason=None)
    assert cloudwatch.failure_summary(completed, FailureScan()) == []
