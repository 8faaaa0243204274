"""A rank killed by SIGKILL (the kernel's OOM killer, ``kill -9``) is the failing rank.

mpirun sends the others SIGTERM, then SIGKILL, once one rank has failed: those are
collateral. A SIGKILL that came before any other rank ended is the failure, and a rank
that turned mpirun's SIGTERM into an exit code of its own is not blamed for it. Each case
runs the real ``smmpi`` CLI (real ``mpirun``) in both isolation modes.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from smmpi.causes import say
from tests.helpers import smmpi

# rank 0 turns mpirun's SIGTERM into exit code 3 (as programs that clean up on SIGTERM do);
# rank 1 is killed by SIGKILL once both have set up
PROGRAM = """\
import os, signal, sys, time
from mpi4py import MPI
comm = MPI.COMM_WORLD
rank = comm.Get_rank()
signal.signal(signal.SIGTERM, lambda *_: sys.exit(3))
comm.Barrier()
if rank == 1:
    os.kill(os.getpid(), signal.SIGKILL)
while True:
    time.sleep(0.1)
"""


@pytest.mark.parametrize("isolation", ["hosts", "processes"])
def test_a_rank_killed_by_sigkill_is_named_not_the_rank_mpirun_stopped(
    isolation: str, fault_env: dict[str, str], tmp_path: Path
) -> None:
    """Blamed before: rank 0, "exit code 3", its own answer to mpirun's SIGTERM."""
    folder = tmp_path / "prog"
    folder.mkdir()
    prog = folder / "killed.py"
    prog.write_text(PROGRAM, encoding="utf-8")
    args = ["run", str(prog), "-N", "1", "-n", "2", "--isolation", isolation, "--timeout", "90"]
    r = smmpi(args, fault_env, timeout=180)
    assert r.returncode == 1, r.stderr
    last = r.stderr.strip().splitlines()[-1]
    # where the instance's memory cgroup is readable and counted no OOM kill, or is not
    # readable: the table's hedged words; an OOM kill here would make the other row's
    assert last == f"smmpi: rank 1 (algo-1) {say('sigkill')}", r.stderr
