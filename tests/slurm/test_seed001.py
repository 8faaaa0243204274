"""Seed 001's job script, unchanged, on the test cluster: SLURM allocates the nodes,
``module load mpi/OpenMPI`` puts Open MPI on PATH, ``mpiexec -n 6 python demo.py`` runs.

Debian's environment-modules is not installed here, so ``module`` is a small shell function
(in the file bash reads through ``BASH_ENV``) that loads the one modulefile the test provides:
``mpi/OpenMPI``, which puts this venv's Open MPI and Python first on PATH.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

from tests.helpers import ROOT
from tests.slurm.cluster_helpers import Cluster

pytestmark = pytest.mark.machine

JOB_SCRIPT = """#!/bin/bash
#SBATCH --nodes 3
#SBATCH --ntasks-per-node 2
#SBATCH --cpus-per-task 1
#SBATCH --time 30
#SBATCH --output seed001-%j.out
module load mpi/OpenMPI
mpiexec -n 6 python demo.py
"""

MODULES = """module() {
  if [ "$1" = load ] && [ -f "$MODULEPATH/$2" ]; then . "$MODULEPATH/$2"
  else echo "module: cannot $*" >&2; return 1; fi
}
"""


def test_seed_001_job_script_runs_unchanged(cluster: Cluster, tmp_path: Path) -> None:
    work = cluster.shared / "seed001"
    work.mkdir()
    for path in (ROOT / "entry_points").glob("*.py"):  # demo.py and the modules it imports
        shutil.copy(path, work / path.name)
    modules = cluster.shared / "modulefiles"
    (modules / "mpi").mkdir(parents=True)
    (modules / "mpi" / "OpenMPI").write_text(f'export PATH="{Path(sys.prefix)}/bin:$PATH"\n')
    (modules / "init.sh").write_text(MODULES)
    (work / "job.sh").write_text(JOB_SCRIPT)
    env = {**cluster.env, "BASH_ENV": str(modules / "init.sh"), "MODULEPATH": str(modules)}
    env["PATH"] = "/usr/local/bin:/usr/bin:/bin"  # Open MPI and mpi4py come from the module
    submitted = cluster.command("sbatch", "--parsable", "job.sh", cwd=work, env=env)
    assert submitted.returncode == 0, submitted.stderr
    job_id = submitted.stdout.strip()
    assert cluster.wait_state(job_id, ("COMPLETED", "FAILED", "CANCELLED")) == "COMPLETED"
    out = (work / f"seed001-{job_id}.out").read_text()
    assert "Number of MPI processes that will talk to each other: 6" in out, out
    for rank, node in ((0, "node1"), (3, "node2"), (5, "node3")):  # mpiexec placed them by node
        assert f"rank {rank} ({node}):" in out, out
