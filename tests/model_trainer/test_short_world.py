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
from smmpi.runners.local.trainer import run_trainer_request
from smmpi.sdk.model_trainer import capture_offline
from smmpi.spec import MPIJob
from tests.helpers import processes_left, write
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
    job_run = run_trainer_request(request, captured.channels, run)
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
