"""The world-size check on ModelTrainer's driver: the SDK's line alone starts a short world.

smmpi adds ``-np N*n`` to ``mpi_additional_options``; here that fix is taken out of the
``sm_drivers`` channel's ``distributed.json`` (the file the driver reads), so the driver's
``-np <processes per host>`` starts ``n`` ranks on algo-1 only, and the run ends with one line.
"""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import TYPE_CHECKING, cast

from smmpi.api import options
from smmpi.causes import summary
from smmpi.ops.status import status_of
from smmpi.runners.local.job import run as run_local
from smmpi.runners.local.sdk import describe_response
from smmpi.sdk.model_trainer import capture_offline
from smmpi.spec import MPIJob
from tests.helpers import base_env, processes_left, smmpi, write
from tests.model_trainer.test_local_driver import WORLD

if TYPE_CHECKING:
    from smmpi.aws.types import Request


def test_the_sdks_own_np_ends_with_one_line_and_exit_1(tmp_path: Path, in_process: Path) -> None:
    program = write(tmp_path / "world.py", WORLD)
    job = MPIJob(str(program), instances=2, ppn=2, api="model-trainer")
    captured = capture_offline(job, tmp_path / "capture")
    distributed = captured.channels["sm_drivers"] / "distributed.json"
    assert json.loads(distributed.read_text())["mpi_additional_options"] == ["-np", "4"]
    distributed.write_text(json.dumps({"process_count_per_node": 2, "mpi_additional_options": []}))
    out, lines = io.StringIO(), list[str]()
    run = options(out=out, err=out, progress=lines.append)
    request = cast("Request", captured.request)
    job_run = run_local(request, b"", run, channels=captured.channels)
    assert job_run.exit_code == 1
    assert sorted(ln for ln in out.getvalue().splitlines() if ">:rank " in ln) == [
        "[1,0]<stdout>:rank 0 of 2 on algo-1",
        "[1,1]<stdout>:rank 1 of 2 on algo-1",
    ]
    line = (
        "the job asked for 2 x 2 = 4 ranks, but the container started 2 (algo-1 only; none on "
        "algo-2): the MPI driver's mpirun has -np 2"
    )
    assert lines[-1] == f"smmpi: {line}"
    # SageMaker's FailureReason (no failure file: the driver's mpirun exited 0), then the line
    assert summary(job_run.record["FailureReason"]) == line
    assert processes_left(str(tmp_path)) == []


FAILS_FIRST = (
    "from mpi4py import MPI\n"
    "if MPI.COMM_WORLD.Get_rank() == 1:\n"
    "    raise RuntimeError('rank one is broken')\n"
    "MPI.COMM_WORLD.Barrier()\n"
)
SHORT = (
    "the SDK's MPI driver runs mpirun -np 2 (its -np is per node), so 2 of 2 x 2 = 4 ranks "
    "started (algo-1 only), as on SageMaker; for all 4, add '-np 4' to "
    "MPI(mpi_additional_options=...)"
)


def test_as_sagemaker_runs_the_drivers_line_and_completes_with_its_ranks(
    tmp_path: Path, in_process: Path
) -> None:
    """``as_sagemaker``: no ``-np`` is added, the driver's ``-np 2`` starts 2 ranks on algo-1,
    and the job completes as on SageMaker, with one line on its world in the record."""
    program = write(tmp_path / "world.py", WORLD)
    job = MPIJob(str(program), instances=2, ppn=2, api="model-trainer", as_sagemaker=True)
    out, lines = io.StringIO(), list[str]()
    done = job.run_local(out=out, err=out, progress=lines.append)
    assert done.exit_code == 0, "\n".join(lines)
    assert done.status == "Completed"
    assert sorted(ln for ln in out.getvalue().splitlines() if ">:rank " in ln) == [
        "[1,0]<stdout>:rank 0 of 2 on algo-1",
        "[1,1]<stdout>:rank 1 of 2 on algo-1",
    ]
    assert (
        "smmpi: note: the SDK's MPI driver's line runs unchanged (as_sagemaker): its '-np 2' is "
        "per node, so the job starts 2 rank(s), as on SageMaker"
    ) in lines
    assert f"smmpi: {SHORT}" in lines
    assert done.record["LocalShortWorld"] == SHORT
    assert "FailureReason" not in done.record
    shown = status_of(describe_response(done.record)).lines()  # the SDK's describe of it
    assert f"world      {SHORT}" in shown, shown
    assert processes_left(str(tmp_path)) == []


def test_a_failed_rank_in_the_drivers_short_world_is_named(
    tmp_path: Path, in_process: Path
) -> None:
    """The short world is no failure of its own: a rank that fails in it is named."""
    program = write(tmp_path / "fails.py", FAILS_FIRST)
    job = MPIJob(str(program), instances=2, ppn=2, api="model-trainer", as_sagemaker=True)
    out, lines = io.StringIO(), list[str]()
    done = job.run_local(out=out, err=out, progress=lines.append)
    assert done.exit_code == 1, "\n".join(lines)
    assert (
        "rank 1 (algo-1) failed: RuntimeError: rank one is broken" in done.record["FailureReason"]
    ), done.record["FailureReason"]
    assert processes_left(str(tmp_path)) == []


def test_the_dry_run_with_as_sagemaker_shows_the_drivers_own_line(tmp_path: Path) -> None:
    """``--as-sagemaker --dry-run --json``: the driver's line keeps its ``-np 2``, no ``-np``
    rides in ``distributed.json``, and ``world_size`` is the ranks it starts."""
    argv = ["submit", "demo", "-N", "2", "-n", "2", "--api", "model-trainer", "--dry-run"]
    env = base_env(tmp_path)
    plain = smmpi([*argv, "--json"], env)
    same = smmpi([*argv, "--json", "--as-sagemaker"], env)
    assert plain.returncode == 0 and same.returncode == 0, plain.stderr + same.stderr
    (before, after) = (json.loads(done.stdout) for done in (plain, same))
    assert [before["world_size"], after["world_size"]] == [4, 2]
    for plan, np in ((before, "4"), (after, "2")):
        line = plan["mpirun"]
        assert [line[i + 1] for i, word in enumerate(line) if word == "-np"][-1] == np
    said = smmpi([*argv, "--as-sagemaker"], env)
    assert (
        "  note         the SDK's MPI driver's line runs unchanged (as_sagemaker): its '-np 2' "
        "is per node, so the job starts 2 rank(s), as on SageMaker"
    ) in said.stdout.splitlines(), said.stdout
