"""The world-size check: a world other than the job's N x n ends the run with one line, exit 1.

``-np`` is refused when a job is specified; the local runner given a request directly (the
Python API under the CLI) lets it through, as a container whose MPI driver builds a short
``mpirun`` line would. Real mpirun, both modes.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

MODES = ("hosts", "processes")
DRIVER = """\
import json, sys
from smmpi import api
from smmpi.archives import pack
from smmpi.catalog import resolve
from smmpi.runners.local.job import run
from smmpi.runners.local.throwaway import ending_lines
from smmpi.toolkit.offline import request_from_program

program = resolve(sys.argv[1])
request = request_from_program(program, int(sys.argv[2]), int(sys.argv[3]))
request["HyperParameters"]["sagemaker_mpi_custom_mpi_options"] = json.dumps(sys.argv[4])
chosen = api.options(timeout=120, keep=False, throwaway=True, args=("--model_dir", "x"))
job = run(request, pack(program.files(), "ENTRY"), chosen)
for line in ending_lines(job, int(sys.argv[2]), None, False):
    chosen.progress(line)
sys.exit(job.exit_code)
"""
PROGRAM = "from mpi4py import MPI\nMPI.COMM_WORLD.Barrier()\nprint('size', MPI.COMM_WORLD.size)\n"


def _drive(
    env: dict[str, str], mode: str, tmp_path: Path, n: int, ppn: int, mpi_options: str
) -> subprocess.CompletedProcess[str]:
    prog = tmp_path / "prog" / "world.py"
    prog.parent.mkdir(exist_ok=True)
    prog.write_text(PROGRAM, encoding="utf-8")
    return subprocess.run(
        [sys.executable, "-c", DRIVER, str(prog), str(n), str(ppn), mpi_options],
        env={**env, "SMMPI_ISOLATION": mode},
        capture_output=True,
        text=True,
        timeout=200,
    )


def test_a_short_world_is_one_line_exit_1(fault_env: dict[str, str], tmp_path: Path) -> None:
    """Isolated hosts run the container's own mpirun line, ``-np 2`` included (processes
    mode starts n ranks per app context whatever ``-np`` says)."""
    r = _drive(fault_env, "hosts", tmp_path, 2, 2, "-np 2")
    assert r.returncode == 1, (r.stdout, r.stderr)
    assert r.stdout.count("size 2") == 2, r.stdout  # the ranks themselves saw a world of 2
    last = r.stderr.strip().splitlines()[-1]
    assert last == (
        "smmpi: the job asked for 2 x 2 = 4 ranks, but the container started 2 "
        "(algo-1 only; none on algo-2): its mpirun options '-np 2' change the world"
    ), r.stderr


@pytest.mark.parametrize("mode", MODES)
def test_the_whole_world_passes(fault_env: dict[str, str], tmp_path: Path, mode: str) -> None:
    r = _drive(fault_env, mode, tmp_path, 2, 2, "")
    assert r.returncode == 0, (r.stdout, r.stderr)
    assert r.stdout.count("size 4") == 4, r.stdout
