"""``smmpi submit --api model-trainer --wait`` against ``smmpi serve``: the request
ModelTrainer built runs its own container start on every instance (the SDK's MPI driver),
and smmpi follows it to its end, its log and its failure reason included."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

import pytest

from tests.helpers import run_checked, write
from tests.model_trainer.test_local_driver import FAILS, WORLD
from tests.serve.serving import (
    ROLE,
    ServeProcess,
    log_lines,
    make_bucket,
    processes_under,
    wait_end,
)

pytestmark = pytest.mark.aws


def _submit(
    serve: ServeProcess, tmp_path: Path, guard: dict[str, str], name: str, text: str, bucket: str
) -> tuple[dict[str, str], list[str]]:
    make_bucket(serve, bucket)
    program = write(tmp_path / name, text)
    env = {**serve.env, **guard}
    argv = ["submit", str(program), "-N", "2", "-n", "2", "--api", "model-trainer"]
    return env, [*argv, "--role", ROLE, "--bucket", bucket, "--base-job-name", "mt-cli"]


def test_a_2x2_job_runs_every_rank_to_completed(
    serve: ServeProcess, tmp_path: Path, guard: dict[str, str]
) -> None:
    env, argv = _submit(serve, tmp_path, guard, "world.py", WORLD, "mt-submit-ok")
    done = run_checked(argv, env)
    assert done.returncode == 0, done.stderr[-4000:]
    name = done.stdout.strip().splitlines()[-1]
    assert name.startswith("mt-cli-")
    last = done.stderr.strip().splitlines()[-1]
    assert re.fullmatch(r"smmpi: \[\d\d:\d\d\] Completed - Training job completed", last), last
    for rank, host in ((0, 1), (1, 1), (2, 2), (3, 2)):  # the job's log, followed by --wait
        assert f"[{rank}] rank {rank} of 4 on algo-{host}" in done.stdout, done.stdout[-4000:]
    status = json.loads(run_checked(["status", name, "--json"], env).stdout)
    assert status["status"] == "Completed"
    logs = run_checked(["logs", name], env)
    assert logs.returncode == 0 and "rank 3 of 4 on algo-2" in logs.stdout, logs.stderr
    one = run_checked(["logs", name, "--rank", "3"], env)  # ranks beyond N x 1 too
    assert one.returncode == 0 and one.stdout.strip() == "rank 3 of 4 on algo-2", one.stderr
    model = run_checked(["fetch", name, "--to", str(tmp_path / "got")], env)
    assert model.returncode == 0, model.stderr
    assert any((tmp_path / "got").iterdir())


def test_the_packaged_demo_2x2_completes_with_every_rank_verified(
    serve: ServeProcess, guard: dict[str, str]
) -> None:
    make_bucket(serve, "mt-submit-demo")
    argv = ["submit", "demo", "-N", "2", "-n", "2", "--api", "model-trainer", "--role", ROLE]
    done = run_checked([*argv, "--bucket", "mt-submit-demo"], {**serve.env, **guard})
    assert done.returncode == 0, done.stderr[-4000:]
    world = "Number of MPI processes that will talk to each other: 4 (2 host(s): algo-1, algo-2)"
    assert f"[0] {world}" in done.stdout, done.stdout[-4000:]
    assert "[0] demo: all 4 ranks verified their results" in done.stdout


def test_a_failed_rank_gives_the_drivers_failure_text(
    serve: ServeProcess, tmp_path: Path, guard: dict[str, str]
) -> None:
    env, argv = _submit(serve, tmp_path, guard, "fails.py", FAILS, "mt-submit-fails")
    done = run_checked(argv, env)
    assert done.returncode == 1, done.stderr[-4000:]
    name = done.stdout.strip().splitlines()[-1]
    desc = serve.client("sagemaker").describe_training_job(TrainingJobName=name)
    assert desc["TrainingJobStatus"] == "Failed"
    reason = desc["FailureReason"]  # algo-1's /opt/ml/output/failure: the driver's own text
    assert "subprocess.CalledProcessError: Command '['mpirun', '--host'" in reason, reason
    assert f"smmpi: job {name} Failed: {reason.splitlines()[0]}" in done.stderr, done.stderr
    assert "rank three is broken" in done.stdout  # the rank's traceback, in the job's log
    assert any("smmpi: rank 3 (algo-2) failed: RuntimeError: rank three is broken" in ln
               for ln in serve.lines)  # fmt: skip


SLEEPS = (
    "import time\n"
    "from mpi4py import MPI\n"
    "print('rank', MPI.COMM_WORLD.Get_rank(), 'ready', flush=True)\n"
    "time.sleep(600)\n"
)


def test_stop_ends_a_running_job_stopped_and_leaves_no_process(
    serve: ServeProcess, tmp_path: Path, guard: dict[str, str]
) -> None:
    """``smmpi stop`` on a ModelTrainer job submitted online: it ends Stopped, with every
    rank's process gone, and ``status`` says so."""
    env, argv = _submit(serve, tmp_path, guard, "sleeps.py", SLEEPS, "mt-submit-stop")
    done = run_checked([*argv, "--no-wait"], env)
    assert done.returncode == 0, done.stderr[-4000:]
    name = done.stdout.strip().splitlines()[-1]
    deadline = time.monotonic() + 300
    while not any("rank 3 ready" in line for lines in log_lines(serve, name).values()
                  for line in lines):  # fmt: skip
        assert time.monotonic() < deadline, log_lines(serve, name)
        time.sleep(0.5)
    stop = run_checked(["stop", name], env)
    assert stop.returncode == 0, stop.stderr
    assert wait_end(serve, name)["TrainingJobStatus"] == "Stopped"
    status = json.loads(run_checked(["status", name, "--json"], env).stdout)
    assert status["status"] == "Stopped"
    assert processes_under("sleeps.py") == []
