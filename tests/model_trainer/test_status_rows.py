"""``smmpi status`` and ``logs --rank`` of ModelTrainer jobs: their processes per host.

A ModelTrainer request carries no MPI hyperparameter: its driver reads the processes per
host from the ``sm_drivers`` channel's ``distributed.json``. ``status`` reads it there (the
request is the SDK's, unchanged) and shows the same "processes" row as for an estimator
job, and ``logs --rank`` refuses ranks beyond N x n: for a job submitted to a real moto
server over HTTP, to ``smmpi serve``, and in a local job's record.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import ROLE, MotoServer, make_bucket, run_checked, smmpi, write
from tests.model_trainer.test_local_driver import WORLD, env_for
from tests.serve.serving import ServeProcess
from tests.serve.serving import make_bucket as make_serve_bucket

ARGS = ["-N", "2", "-n", "2", "--api", "model-trainer", "--role", ROLE]
ROW = "processes  2 per host, 4 in all"


def _rows(text: str) -> dict[str, str]:
    return {k: v.strip() for k, _, v in (ln.partition("  ") for ln in text.splitlines())}


def _check_rows_and_ranks(name: str, env: dict[str, str]) -> None:
    shown = run_checked(["status", name], env)
    assert shown.returncode == 0, shown.stderr
    assert ROW in shown.stdout.splitlines(), shown.stdout
    as_json = json.loads(run_checked(["status", name, "--json"], env).stdout)
    assert as_json["processes_per_host"] == 2 and as_json["instance_count"] == 2
    beyond = run_checked(["logs", name, "--rank", "4"], env)
    assert beyond.returncode == 2, beyond.stderr
    assert beyond.stderr.strip() == (
        f"smmpi: invalid rank: 4; allowed: 0 to 3 ({name} runs 4 ranks)"
    ), beyond.stderr
    assert beyond.stdout == ""
    last = run_checked(["logs", name, "--rank", "3"], env)
    assert last.returncode == 0, last.stderr


def _submitted(moto_server: MotoServer, aws: dict[str, str]) -> str:
    """A 2 x 2 ModelTrainer job submitted online (to the moto server): its name."""
    make_bucket(moto_server, "smmpi-rows")
    done = run_checked(["submit", "demo", *ARGS, "--bucket", "smmpi-rows", "--no-wait"], aws)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


@pytest.mark.aws
def test_a_job_submitted_online_has_the_processes_row(
    moto_server: MotoServer, aws: dict[str, str]
) -> None:
    _check_rows_and_ranks(_submitted(moto_server, aws), aws)


@pytest.mark.aws
def test_an_unreadable_drivers_channel_shows_no_row_and_refuses_nothing(
    moto_server: MotoServer, aws: dict[str, str]
) -> None:
    """The driver's config gone from S3: status still answers (no row), any rank is looked for."""
    name = _submitted(moto_server, aws)
    s3 = moto_server.boto3_client("s3")
    keys = [o["Key"] for o in s3.list_objects_v2(Bucket="smmpi-rows")["Contents"]]
    (config,) = [k for k in keys if k.endswith("/sm_drivers/distributed.json")]
    s3.delete_object(Bucket="smmpi-rows", Key=config)
    shown = run_checked(["status", name], aws)
    assert shown.returncode == 0, shown.stderr
    assert "processes" not in _rows(shown.stdout) and _rows(shown.stdout)["job"] == name
    assert (
        json.loads(run_checked(["status", name, "--json"], aws).stdout)["processes_per_host"]
        is None
    )
    anyone = run_checked(["logs", name, "--rank", "9"], aws)
    assert anyone.returncode == 0, anyone.stderr


@pytest.mark.aws
def test_a_job_run_by_serve_has_the_processes_row(
    serve: ServeProcess, tmp_path: Path, guard: dict[str, str]
) -> None:
    make_serve_bucket(serve, "mt-rows")
    env = {**serve.env, **guard}
    program = write(tmp_path / "world.py", WORLD)
    argv = ["submit", str(program), *ARGS, "--bucket", "mt-rows", "--base-job-name", "mt-rows"]
    done = run_checked(argv, env)
    assert done.returncode == 0, done.stderr[-4000:]
    name = done.stdout.strip().splitlines()[-1]
    _check_rows_and_ranks(name, env)
    logs = run_checked(["logs", name], env)  # each rank's lines under its own host
    assert "==> rank 3 (algo-2) <==" in logs.stdout, logs.stdout


def test_a_local_jobs_record_has_the_processes_row(tmp_path: Path) -> None:
    from smmpi.ops.status import status_of
    from smmpi.runners.local.sdk import describe_response

    env = env_for(tmp_path)
    program = write(tmp_path / "world.py", WORLD)
    argv = ["submit", str(program), "-N", "2", "-n", "2", "--api", "model-trainer"]
    done = smmpi([*argv, "--local", "--json"], env, timeout=400)
    assert done.returncode == 0, done.stderr[-4000:]
    record: dict[str, Any] = json.loads(done.stdout)
    assert record["LocalProcessesPerHost"] == 2
    assert "HyperParameters" in record and not any(
        k.startswith("sagemaker_mpi") for k in record["HyperParameters"]
    )
    kept = json.loads((Path(env["HOME"]) / ".smmpi/local-jobs" / record["TrainingJobName"] /
                       "describe.json").read_text(encoding="utf-8"))  # fmt: skip
    assert ROW in status_of(describe_response(kept)).lines()
