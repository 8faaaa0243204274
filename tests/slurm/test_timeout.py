"""A SLURM job over its time limit ends TIMEOUT: smmpi's exit code 124, one line naming it, and
no rank left running.

SLURM's shortest limit is one minute, and slurmctld looks for jobs past their limit every 30 s:
the job ends 65 to 90 s after it starts. The test only waits, so it runs beside others
(``side_by_side``), on a cluster of its own in its worker.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.helpers import processes_left, smmpi
from tests.slurm.cluster_helpers import Cluster

pytestmark = [pytest.mark.slow, pytest.mark.side_by_side]
SLURM = ["--backend", "slurm", "--profile", "local"]

OVERTIME = """
import time
from mpi4py import MPI
comm = MPI.COMM_WORLD
print(f"rank {comm.Get_rank()} started", flush=True)
comm.Barrier()
time.sleep(3600)
"""

LINE = "TIMEOUT: timed out at the job's time limit (--time); SLURM stopped every rank"


def test_a_job_over_its_time_limit_ends_timeout(cluster: Cluster, tmp_path: Path) -> None:
    program = tmp_path / f"overtime_{os.getpid()}.py"  # its ranks' command lines name it
    program.write_text(OVERTIME)
    args = ["submit", str(program), "-N", "3", "--ppn", "2", *SLURM, "--time", "1"]
    done = smmpi([*args, "--job-name", "smmpi-overtime"], cluster.env, timeout=280)
    job_id = done.stdout.strip()
    logs = cluster.shared / "smmpi-overtime" / "logs"
    assert done.returncode == 124, done.stderr + _tails(logs)
    assert done.stderr.splitlines()[-1] == f"smmpi: job {job_id} {LINE}"
    assert f"smmpi: job {job_id} RUNNING on node[1-3]" in done.stderr.splitlines()
    assert (logs / "rank-5-node3.log").read_text() == "5: rank 5 started\n"  # it ran, then ended
    assert cluster.state(job_id) == "TIMEOUT"
    status = smmpi(["status", job_id, *SLURM], cluster.env)
    assert status.returncode == 0, status.stderr
    assert status.stdout.splitlines()[0] == f"job {job_id} (smmpi-overtime): TIMEOUT"
    assert processes_left(program.name, grace=60) == []
    queue = cluster.command("squeue", "--noheader", "--states=all", "--format=%i %T")
    assert f"{job_id} TIMEOUT" in queue.stdout.splitlines(), queue.stdout  # not COMPLETING


def _tails(logs: Path) -> str:
    """Each rank's log's last lines, for a failure's message. Seen once in CI before the batch
    script's srun settings (docs/SLURM.md): rank 0 killed by SIGSEGV in MPI_Init."""
    files = sorted(logs.glob("*.log")) if logs.is_dir() else []
    return "".join(f"\n--- {f.name}:\n" + f.read_text(errors="replace")[-1500:] for f in files)
