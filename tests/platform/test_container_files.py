"""What a local job leaves on each instance and in its archives, as the container and SageMaker
leave them: the toolkit's success/failure files, output.tar.gz of output/data, checkpoints."""

from __future__ import annotations

import json
import stat
import tarfile
from pathlib import Path

import pytest

from smmpi.causes import summary
from tests.helpers import smmpi

FAIL = """\
import os
from mpi4py import MPI

rank = MPI.COMM_WORLD.Get_rank()
data = os.environ["SM_OUTPUT_DATA_DIR"]
with open(os.path.join(data, f"r{rank}.txt"), "w") as f:
    f.write("x")
MPI.COMM_WORLD.Barrier()
if rank == 3 and os.environ.get("FAIL") == "1":
    1 / 0
"""
CHECKPOINT = """\
import os, sys
from mpi4py import MPI

rank = MPI.COMM_WORLD.Get_rank()
state = "/opt/ml/checkpoints/step"
step = int(open(state).read()) if os.path.exists(state) else 0
print("START", rank, step)
MPI.COMM_WORLD.Barrier()
if rank == 0:
    with open(state, "w") as f:
        f.write(str(step + 1))
MPI.COMM_WORLD.Barrier()
sys.exit(1 if step == 0 and rank == 0 else 0)  # the first run is interrupted after its checkpoint
"""


def _submit(src: Path, script: str, name: str, env: dict[str, str], *more: str) -> Path:
    (src / "train.py").write_text(script, encoding="utf-8")
    args = ["submit", str(src / "train.py"), "--source-dir", str(src), "--local"]
    args += ["--framework", "pytorch", "--job-name", name, *more]
    done = smmpi(args, env)
    (src.parent / f"{name}.out").write_text(done.stdout + done.stderr, encoding="utf-8")
    return Path(env["SMMPI_LOCAL_JOBS"]) / name


@pytest.fixture
def jobs_env(env: dict[str, str], tmp_path: Path) -> dict[str, str]:
    env["SMMPI_LOCAL_JOBS"] = str(tmp_path / "jobs")
    (tmp_path / "src").mkdir()
    return env


def test_a_failed_job_leaves_the_toolkits_files(jobs_env: dict[str, str], tmp_path: Path) -> None:
    job = _submit(
        tmp_path / "src", FAIL, "fails", {**jobs_env}, "-N", "2", "-n", "2", "--env", "FAIL=1"
    )
    record = json.loads((job / "describe.json").read_text())
    assert record["TrainingJobStatus"] == "Failed"
    # SageMaker's FailureReason, then smmpi's own line naming the rank, as smmpi serve's
    reason = record["FailureReason"]
    assert reason.startswith("AlgorithmError: ExecuteUserScriptError:\nExitCode 1\n"), reason
    assert (summary(reason) or "").startswith("rank 3 (algo-2) failed: ZeroDivisionError")
    algo1, algo2 = (job / "hosts" / h / "opt" / "ml" / "output" for h in ("algo-1", "algo-2"))
    text = (algo1 / "failure").read_text()
    assert text.startswith('ExecuteUserScriptError:\nExitCode 1\nErrorMessage "ZeroDivisionError')
    command = text.split('\nCommand "', 1)[1]
    assert command.startswith("mpirun --host algo-1:2,algo-2:2 -np 4 --allow-run-as-root")
    assert command.endswith(' -m mpi4py train.py"')
    assert not (algo1 / "success").exists()
    # a worker's toolkit ends normally
    assert (algo2 / "success").read_text() == ""
    assert not (algo2 / "failure").exists()
    with tarfile.open(job / "output.tar.gz") as tar:
        assert sorted(tar.getnames()) == [
            "data/r0.txt",
            "data/r1.txt",
            "data/r2.txt",
            "data/r3.txt",
        ]


def test_a_completed_job_writes_success_on_every_instance(
    jobs_env: dict[str, str], tmp_path: Path
) -> None:
    job = _submit(tmp_path / "src", FAIL, "works", jobs_env, "-N", "2", "-n", "2")
    assert json.loads((job / "describe.json").read_text())["TrainingJobStatus"] == "Completed"
    for host in ("algo-1", "algo-2"):
        output = job / "hosts" / host / "opt" / "ml" / "output"
        assert (output / "success").is_file() and not (output / "failure").exists()
    with tarfile.open(job / "output.tar.gz") as tar:
        assert sorted(tar.getnames()) == [
            "data/r0.txt",
            "data/r1.txt",
            "data/r2.txt",
            "data/r3.txt",
        ]


def test_checkpoints_are_restored_for_the_next_run(
    jobs_env: dict[str, str], tmp_path: Path
) -> None:
    # isolated hosts: the literal /opt/ml/checkpoints is each instance's own
    flags = ["-N", "2", "-n", "1", "--spot", "--checkpoint-s3-uri", "s3://bkt/ckpt"]
    flags += ["--isolation", "hosts"]
    seen = []
    for name, status in (("spot-1", "Failed"), ("spot-2", "Completed"), ("spot-3", "Completed")):
        job = _submit(tmp_path / "src", CHECKPOINT, name, jobs_env, *flags)
        record = json.loads((job / "describe.json").read_text())
        assert record["TrainingJobStatus"] == status
        assert record["CheckpointConfig"] == {"S3Uri": "s3://bkt/ckpt"}
        out = (tmp_path / f"{name}.out").read_text()
        seen.append(sorted(ln.split(">:", 1)[1] for ln in out.splitlines() if ">:START" in ln))
        synced = job / "checkpoints"
        assert stat.S_IMODE(synced.stat().st_mode) == 0o700
        assert stat.S_IMODE((synced / "step").stat().st_mode) == 0o600
    # both instances start from what the previous run synced; rank 0's update wins over the
    # restored copy algo-2 left unchanged
    assert seen == [
        ["START 0 0", "START 1 0"],
        ["START 0 1", "START 1 1"],
        ["START 0 2", "START 1 2"],
    ]
    assert (
        Path(jobs_env["SMMPI_LOCAL_JOBS"]) / "spot-3" / "checkpoints" / "step"
    ).read_text() == "3"


def test_no_checkpoint_folder_without_a_checkpoint_config(
    jobs_env: dict[str, str], tmp_path: Path
) -> None:
    job = _submit(tmp_path / "src", FAIL, "plain", jobs_env, "-N", "1", "-n", "1")
    assert not (job / "checkpoints").exists()
    assert not (job / "hosts" / "algo-1" / "opt" / "ml" / "checkpoints").exists()
