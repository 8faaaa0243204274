"""Supervision: a failed rank named, a hang ended with every stack, nothing left behind."""

from __future__ import annotations

import signal
import subprocess
import time
import uuid
from pathlib import Path

from tests.helpers import BIN, no_run_dirs, processes_left, processes_with, smmpi, write


def test_failing_rank_is_named(run_env: dict[str, str], tmp_path: Path) -> None:
    script = write(
        tmp_path / "seed_bug.py",
        (
            "from mpi4py import MPI\nimport numpy as np\n"
            "comm = MPI.COMM_WORLD\n"
            "if comm.Get_rank() == 3:\n    np.float\n"
            "comm.Barrier()\n"
        ),
    )
    start = time.monotonic()
    r = smmpi(["run", str(script), "--instances", "3", "--ppn", "2"], run_env)
    elapsed = time.monotonic() - start
    assert r.returncode == 1
    last = r.stderr.strip().splitlines()[-1]
    assert last.startswith(
        "smmpi: rank 3 (algo-2) failed: AttributeError: module 'numpy' has no attribute 'float'"
    ), last
    assert elapsed < 30, elapsed
    assert processes_left(str(script)) == []


def test_rank_exit_code_is_named(run_env: dict[str, str], tmp_path: Path) -> None:
    script = write(
        tmp_path / "exits.py",
        (
            "import sys\nfrom mpi4py import MPI\n"
            "sys.exit(3 if MPI.COMM_WORLD.Get_rank() == 1 else 0)\n"
        ),
    )
    r = smmpi(["run", str(script), "--instances", "2", "--ppn", "1"], run_env)
    assert r.returncode == 1
    # mpi4py turns the SystemExit into MPI_Abort(3) at exit, and Open MPI's notice says so
    # when it is not lost; the program called sys.exit, and the rank's records say that
    assert r.stderr.strip().splitlines()[-1] == "smmpi: rank 1 (algo-2) failed: exit code 3"


HANG = (
    "from mpi4py import MPI\nimport numpy as np\n"
    "comm = MPI.COMM_WORLD\n"
    "def wait_for_left_neighbour():\n"
    "    buf = np.empty(1)\n"
    "    comm.Recv(buf, source=(comm.Get_rank() - 1) % comm.Get_size())\n"
    "wait_for_left_neighbour()\n"
)


def test_timeout_prints_every_stack_and_leaves_nothing(
    run_env: dict[str, str], tmp_path: Path
) -> None:
    script = write(tmp_path / f"deadlock_marker_t_{uuid.uuid4().hex[:8]}.py", HANG)
    start = time.monotonic()
    # 6 s: time enough for four ranks to reach the Recv even when the machine is loaded
    r = smmpi(["run", str(script), "--instances", "2", "--ppn", "2", "--timeout", "6"], run_env)
    elapsed = time.monotonic() - start
    assert r.returncode == 124, r.stderr
    assert elapsed < 30
    err = r.stderr
    for rank in range(4):
        header = f"--- rank {rank} (algo-{rank // 2 + 1}) ---"
        assert header in err
        section = err.split(header, 1)[1].split("--- rank", 1)[0]
        assert "in wait_for_left_neighbour" in section, section
        assert "<frozen runpy>" not in section
    assert err.strip().splitlines()[-1] == "smmpi: timed out after 6 s"
    assert processes_left(script.name) == []
    assert no_run_dirs(Path(run_env["TMPDIR"]))


def test_interrupt_stops_everything(run_env: dict[str, str], tmp_path: Path) -> None:
    script = write(tmp_path / f"deadlock_marker_i_{uuid.uuid4().hex[:8]}.py", HANG)
    proc = subprocess.Popen(
        [str(BIN / "smmpi"), "run", str(script), "-N", "2", "-n", "2"],
        env=run_env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 30
    while len(processes_with(script.name)) < 5 and time.monotonic() < deadline:
        time.sleep(0.1)  # smmpi itself + 4 ranks
    assert len(processes_with(script.name)) >= 5
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, err
    assert "interrupted" in err.strip().splitlines()[-1]
    assert processes_left(script.name) == []
