"""``smmpi_runtime.runtime()`` inside a SLURM job: the node's name and each rank's local rank."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.helpers import ROOT, base_env
from tests.slurm.cluster_helpers import MPIRUN

PROBE = """
import json
from mpi4py import MPI
from smmpi_runtime import runtime
rt = runtime()
every = MPI.COMM_WORLD.gather([rt.rank, rt.host, rt.local_rank, rt.local_size], root=0)
if rt.rank == 0:
    print(json.dumps(every), flush=True)
"""


class _Comm:
    def __init__(self, rank: int, size: int) -> None:
        self.rank, self.size = rank, size

    def Get_rank(self) -> int:
        return self.rank

    def Get_size(self) -> int:
        return self.size


def test_srun_task_takes_node_and_local_rank_from_slurm(monkeypatch: pytest.MonkeyPatch) -> None:
    """A task srun started (no Open MPI variables): SLURM's node name and local id."""
    monkeypatch.syspath_prepend(str(ROOT / "entry_points"))
    from smmpi_runtime import runtime

    for name in ("SM_HOSTS", "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("SLURMD_NODENAME", "node3")
    monkeypatch.setenv("SLURM_LOCALID", "1")
    monkeypatch.setenv("SLURM_NTASKS_PER_NODE", "2")
    rt = runtime(_Comm(5, 6))
    assert (rt.host, rt.local_rank, rt.local_size) == ("node3", 1, 2)


def test_mpirun_inside_a_job_prefers_open_mpi_local_rank(tmp_path: Path) -> None:
    """Under mpirun in a job every rank has SLURM_LOCALID=0: Open MPI's local rank wins."""
    env = {**base_env(tmp_path), "SLURMD_NODENAME": "node7", "SLURM_LOCALID": "0"}
    env["PYTHONPATH"] = str(ROOT / "entry_points")
    done = subprocess.run(
        [MPIRUN, "--oversubscribe", "-np", "2", "python", "-c", PROBE],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    ranks = json.loads(done.stdout.strip().splitlines()[-1])
    assert ranks == [[0, "node7", 0, 2], [1, "node7", 1, 2]]
