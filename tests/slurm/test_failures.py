"""A failed rank of a SLURM job is named by rank, node and cause, in the words local runs use."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from smmpi.causes import say
from smmpi.mpi_output import PITFALLS
from tests.helpers import smmpi
from tests.slurm.cluster_helpers import Cluster

pytestmark = pytest.mark.machine

# Seed 004's bug: numpy 1.24 removed np.float; only rank 3 reaches it
SEED_004_BUG = """
import numpy as np
from mpi4py import MPI
comm = MPI.COMM_WORLD
comm.Barrier()
if comm.Get_rank() == 3:
    value = np.float(comm.Get_rank())
comm.Barrier()
"""

ABORT = """
from mpi4py import MPI
comm = MPI.COMM_WORLD
comm.Barrier()
if comm.Get_rank() == 4:
    comm.Abort(7)
comm.Barrier()
"""

# named as a local run names it: the rank's exception, then the pitfall's cause and fix
NP_FLOAT = next(p for p in PITFALLS if p.key == "numpy-alias").note_for({"alias": "float"})
EXCEPTION = "failed: AttributeError: module 'numpy' has no attribute 'float'."
LINE_004 = "rank 3 (node2) " + say("pitfall", phrase=EXCEPTION, note=NP_FLOAT)


def _with_launch(cluster: Cluster, tmp_path: Path, launch: str) -> dict[str, str]:
    config = json.loads(Path(cluster.env["SMMPI_CONFIG"]).read_text())
    config["slurm_profiles"]["local"]["launch"] = launch
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    return {**cluster.env, "SMMPI_CONFIG": str(path)}


@pytest.mark.parametrize("launch", ["srun", "mpirun"])
def test_seed_004_bug_is_named_by_rank_and_node(
    cluster: Cluster, tmp_path: Path, launch: str
) -> None:
    program = tmp_path / "train.py"
    program.write_text(SEED_004_BUG)
    env = _with_launch(cluster, tmp_path, launch)
    name = f"smmpi-np-float-{launch}"
    args = ["submit", str(program), "-N", "3", "--ppn", "2", "--backend", "slurm"]
    done = smmpi([*args, "--profile", "local", "--job-name", name], env, timeout=300)
    assert done.returncode == 1, done.stderr
    job_id = done.stdout.strip()
    assert done.stderr.splitlines()[-1] == f"smmpi: job {job_id} FAILED: {LINE_004}"
    status = smmpi(["status", job_id, "--backend", "slurm", "--profile", "local"], env)
    assert status.returncode == 0, status.stderr
    assert status.stdout.splitlines()[-1] == f"failure: {LINE_004}"


def test_mpi_abort_is_named(cluster: Cluster, tmp_path: Path) -> None:
    program = tmp_path / "abort.py"
    program.write_text(ABORT)
    args = ["submit", str(program), "-N", "3", "--ppn", "2", "--backend", "slurm"]
    done = smmpi([*args, "--profile", "local", "--job-name", "smmpi-abort"], cluster.env)
    assert done.returncode == 1, done.stderr
    line = done.stderr.splitlines()[-1]
    assert line.endswith("FAILED: rank 4 (node3) failed: exit code 7 (MPI_Abort)"), line
