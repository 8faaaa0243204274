"""A rank killed by SIGKILL (the kernel's OOM killer, ``kill -9``) is the failing rank.

mpirun sends the others SIGTERM, then SIGKILL, once one rank has failed: those are
collateral. A SIGKILL that came before any other rank ended is the failure, and a rank
that turned mpirun's SIGTERM into an exit code of its own is not blamed for it. Each case
runs the real ``smmpi`` CLI (real ``mpirun``) in both isolation modes; the OOM cases run it
in a memory cgroup of their own (as root, the tests' user), where the kernel's OOM killer ends
the rank that asks for too much.
"""

from __future__ import annotations

import contextlib
import subprocess
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from smmpi.causes import say
from tests.helpers import BIN, smmpi

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


# rank 1 takes memory until the kernel's OOM killer ends it (its memory cgroup's limit)
HOG = """\
import time
from mpi4py import MPI
comm = MPI.COMM_WORLD
comm.Barrier()
if comm.Get_rank() == 1:
    hog = [b"x" * (32 << 20) for _ in range(256)]
while True:
    time.sleep(0.1)
"""


@contextlib.contextmanager
def _memory_cgroup(limit: int) -> Iterator[Path]:
    """A memory cgroup of this test's own, under this process's, holding at most ``limit``
    bytes (cgroup v1 or v2); removed afterwards."""
    own = Path("/proc/self/cgroup").read_text(encoding="ascii").splitlines()
    rows = [line.split(":", 2) for line in own]
    v1 = next((p for _, c, p in rows if "memory" in c.split(",")), None)
    if v1 is not None:
        group = Path("/sys/fs/cgroup/memory") / v1.strip("/") / f"smmpi-test-{uuid.uuid4().hex}"
        limit_file = "memory.limit_in_bytes"
    else:
        v2 = next(p for _, c, p in rows if not c)
        group = Path("/sys/fs/cgroup") / v2.strip("/") / f"smmpi-test-{uuid.uuid4().hex}"
        limit_file = "memory.max"
    group.mkdir()
    try:
        (group / limit_file).write_text(str(limit), encoding="ascii")
        yield group
    finally:
        deadline = time.monotonic() + 60
        while (group / "cgroup.procs").read_text(encoding="ascii").strip():
            assert time.monotonic() < deadline, "the test's cgroup kept a process"
            time.sleep(0.1)
        group.rmdir()


@pytest.mark.parametrize("isolation", ["hosts", "processes"])
def test_a_rank_the_oom_killer_ended_is_named_out_of_memory_for_certain(
    isolation: str, fault_env: dict[str, str], tmp_path: Path
) -> None:
    """smmpi runs in a memory cgroup of 768 MiB; rank 1 asks for 8 GiB. Before: "killed by
    signal 9 (SIGKILL)", or another rank blamed."""
    folder = tmp_path / "prog"
    folder.mkdir()
    prog = folder / "hog.py"
    prog.write_text(HOG, encoding="utf-8")
    args = ["-N", "1", "-n", "2", "--isolation", isolation, "--timeout", "120"]
    with _memory_cgroup(768 << 20) as group:
        enter = f'echo $$ > {group / "cgroup.procs"} && exec "$0" "$@"'
        r = subprocess.run(
            ["sh", "-c", enter, str(BIN / "smmpi"), "run", str(prog), *args],
            env=fault_env,
            capture_output=True,
            text=True,
            timeout=300,
        )
    assert r.returncode == 1, r.stderr
    last = r.stderr.strip().splitlines()[-1]
    assert last == f"smmpi: rank 1 (algo-1) {say('oom-kill')}", r.stderr
