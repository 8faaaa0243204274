"""ModelTrainer's MPI driver, found out by running it: the world its mpirun line starts.

The line is the one the SDK's own ``mpi_driver.py`` builds for the request (``submit --api
model-trainer --dry-run``), run on isolated hosts algo-1..algo-N under Open MPI 4.1 with the
documented substitutions only. Without smmpi's ``-np N*n`` the driver's ``-np <per host>``
starts n ranks, all on algo-1; with it, the whole world.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from smmpi.instances.hosts import launch
from smmpi.instances.hosts.argv import isolated_argv
from smmpi.runners.plan import plan
from smmpi.spec import MPIJob
from tests.helpers import BIN
from tests.instances.hosts.conftest import make_pod
from tests.instances.hosts.footprint import Machine

WORLD = (
    "import socket\n"
    "from mpi4py import MPI\n"
    "c = MPI.COMM_WORLD\n"
    "print(f'rank {c.rank} of {c.size} on {socket.gethostname()}', flush=True)\n"
)
ENV = {
    "PATH": f"{BIN}:/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin",
    "LC_ALL": "C",
    "OMPI_ALLOW_RUN_AS_ROOT": "1",
    "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
}


def _without_smmpis_np(line: list[str]) -> list[str]:
    """The driver's line as the SDK alone would build it: the last ``-np`` pair removed."""
    at = len(line) - 1 - line[::-1].index("-np")
    assert line.index("-np") < at, "smmpi's -np must come after the driver's"
    return line[:at] + line[at + 2 :]


def _ranks(run_dir: Path, instances: int, line: list[str]) -> list[str]:
    pod = make_pod(run_dir, instances)
    for tree in pod.opt_ml:
        (tree / "code" / "world.py").write_text(WORLD)
    argv = isolated_argv(line, sys.executable, str(launch.agent_path(pod)))
    proc = launch.start(
        pod, argv, ENV, "/opt/ml/code", stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    out, err = proc.communicate(timeout=180)
    assert proc.returncode == 0, err.decode()[-2000:]
    return sorted(ln.split(":", 1)[1] for ln in out.decode().splitlines() if "rank " in ln)


@pytest.mark.parametrize(("instances", "ppn"), [(1, 2), (2, 1), (2, 2), (3, 2)])
def test_the_drivers_line_and_smmpis_fix(
    instances: int, ppn: int, tmp_path: Path, run_dir: Path, machine: Machine
) -> None:
    script = tmp_path / "world.py"
    script.write_text(WORLD)
    job = MPIJob(str(script), instances=instances, ppn=ppn, api="model-trainer")
    line = plan(job).mpirun
    assert line[-3:] == ["-m", "mpi4py", "world.py"]
    hosts = [f"algo-{k}" for k in range(1, instances + 1)]
    sdk_alone = _ranks(run_dir / "sdk", instances, _without_smmpis_np(line))
    assert sdk_alone == [f"rank {r} of {ppn} on algo-1" for r in range(ppn)]
    fixed = _ranks(run_dir / "fixed", instances, line)
    world = instances * ppn
    assert fixed == sorted(f"rank {r} of {world} on {hosts[r // ppn]}" for r in range(world))
    assert not os.listdir(run_dir / "fixed" / "algo-1" / "opt" / "ml" / "model")
