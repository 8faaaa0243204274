"""SageMaker's MPI pitfalls, provoked for real: smmpi's last line names the cause and the fix.

Each case runs the real ``smmpi run`` (real mpirun, several ranks) in isolated hosts and
in processes mode, whatever ``SMMPI_ISOLATION`` the suite runs in.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.helpers import smmpi

MODES = ("hosts", "processes")
WIN = """\
import numpy as np
from mpi4py import MPI
comm = MPI.COMM_WORLD
buf = np.zeros(4)
win = MPI.Win.Create(buf, disp_unit=buf.itemsize, comm=comm)
win.Fence()
win.Put(np.full(1, float(comm.rank + 1)), (comm.rank + 1) % comm.size, target=comm.rank)
win.Fence()
win.Free()
print("window", comm.rank, buf.tolist())
"""


def _run(
    env: dict[str, str], mode: str, folder: Path, text: str, *args: str
) -> subprocess.CompletedProcess[str]:
    folder.mkdir(exist_ok=True)
    prog = folder / "prog.py"
    prog.write_text(text, encoding="utf-8")
    return smmpi(
        ["run", str(prog), "-N", "2", "-n", "2", "--timeout", "120", *args],
        {**env, "SMMPI_ISOLATION": mode},
        timeout=200,
    )


def _last_line(r: subprocess.CompletedProcess[str]) -> str:
    lines = r.stderr.strip().splitlines()
    return lines[-1] if lines else ""


@pytest.mark.parametrize("mode", MODES)
def test_model_dir_refused_by_argparse(
    fault_env: dict[str, str], tmp_path: Path, mode: str
) -> None:
    text = "import argparse\nargparse.ArgumentParser().parse_args()\nfrom mpi4py import MPI\n"
    r = _run(fault_env, mode, tmp_path / "prog", text)
    line = _last_line(r)
    assert r.returncode == 1, r.stderr
    assert line.startswith("smmpi: rank "), line
    assert "the TensorFlow estimator (the default framework) adds --model_dir" in line, line
    assert "parse_known_args(), accept --model_dir, or use --framework pytorch" in line, line
    fixed = _run(fault_env, mode, tmp_path / "prog", text, "--framework", "pytorch")
    assert fixed.returncode == 0, fixed.stderr


@pytest.mark.parametrize("mode", MODES)
def test_one_sided_with_thread_multiple(
    fault_env: dict[str, str], tmp_path: Path, mode: str
) -> None:
    r = _run(fault_env, mode, tmp_path / "prog", WIN, "--framework", "pytorch")
    line = _last_line(r)
    assert r.returncode == 1, r.stderr
    assert "MPI_ERR_WIN" in line, line
    assert "btl_vader_single_copy_mechanism none" in line, line
    assert "MPI4PY_RC_THREAD_LEVEL=serialized" in line, line
    # The fix, as the line says it, works here (the job's environment, through --pass-env)
    fixed = _run(
        {**fault_env, "MPI4PY_RC_THREAD_LEVEL": "serialized"},
        mode,
        tmp_path / "prog",
        WIN,
        "--framework",
        "pytorch",
        "--pass-env",
        "MPI4PY_RC_THREAD_LEVEL",
    )
    assert fixed.returncode == 0, fixed.stderr
    assert sorted(x.split(">:", 1)[-1] for x in fixed.stdout.splitlines() if "window" in x) == [
        "window 0 [0.0, 0.0, 0.0, 4.0]",
        "window 1 [1.0, 0.0, 0.0, 0.0]",
        "window 2 [0.0, 2.0, 0.0, 0.0]",
        "window 3 [0.0, 0.0, 3.0, 0.0]",
    ]
    # ... and so does the program's own mpi4py.rc.thread_level
    in_program = 'import mpi4py\nmpi4py.rc.thread_level = "serialized"\n' + WIN
    fixed = _run(fault_env, mode, tmp_path / "prog", in_program, "--framework", "pytorch")
    assert fixed.returncode == 0, fixed.stderr


@pytest.mark.parametrize("mode", MODES)
def test_spawn_names_ranks_as_the_fix(fault_env: dict[str, str], tmp_path: Path, mode: str) -> None:
    text = (
        "import sys\nfrom mpi4py import MPI\n"
        "if MPI.COMM_WORLD.rank == 0:\n"
        "    MPI.COMM_SELF.Spawn(sys.executable, ['-c', 'pass'], 1)\n"
        "MPI.COMM_WORLD.Barrier()\n"
    )
    r = _run(fault_env, mode, tmp_path / "prog", text, "--framework", "pytorch")
    line = _last_line(r)
    assert r.returncode == 1, r.stderr
    assert "dynamic processes have no free slots, as on SageMaker" in line, line
    assert "run the workers as ranks instead" in line, line


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(("alias", "sized"), [("float", "np.float64"), ("object", "np.float64")])
def test_numpy_removed_alias(
    fault_env: dict[str, str], tmp_path: Path, mode: str, alias: str, sized: str
) -> None:
    text = f"import numpy as np\nfrom mpi4py import MPI\nx = np.zeros(3, dtype=np.{alias})\n"
    r = _run(fault_env, mode, tmp_path / "prog", text, "--framework", "pytorch")
    line = _last_line(r)
    assert r.returncode == 1, r.stderr
    assert f"AttributeError: module 'numpy' has no attribute '{alias}'" in line, line
    assert f"np.{alias} was removed in NumPy 1.24" in line, line
    assert f"replace np.{alias} with {alias}" in line, line
    assert sized in line, line


@pytest.mark.parametrize("mode", MODES)
def test_a_crash_after_a_handled_pitfall_is_not_blamed_on_it(
    fault_env: dict[str, str], tmp_path: Path, mode: str
) -> None:
    """A program that caught MPI_ERR_WIN and then crashed: the crash is named, not the pitfall."""
    text = (
        "import os, signal\nimport numpy as np\nfrom mpi4py import MPI\n"
        "try:\n    MPI.Win.Create(np.zeros(4), comm=MPI.COMM_WORLD)\n"
        "except MPI.Exception as err:\n    print('caught', err.Get_error_class() == MPI.ERR_WIN)\n"
        "MPI.COMM_WORLD.Barrier()\n"
        "if MPI.COMM_WORLD.rank == 1:\n    os.kill(os.getpid(), signal.SIGSEGV)\n"
        "MPI.COMM_WORLD.Barrier()\n"
    )
    r = _run(fault_env, mode, tmp_path / "prog", text, "--framework", "pytorch")
    assert r.returncode == 1, r.stderr
    assert r.stdout.count("caught True") == 4, r.stdout
    line = _last_line(r)
    assert line.endswith("failed: killed by signal 11 (SIGSEGV)"), line


MPI_IO = """\
import tempfile
from mpi4py import MPI
comm = MPI.COMM_WORLD
path = tempfile.gettempdir() + "/shared.bin"
fh = MPI.File.Open(comm, path, MPI.MODE_CREATE | MPI.MODE_WRONLY)
fh.Write_at_all(comm.rank * 4, bytearray(4))
fh.Close()
print("wrote", comm.rank)
"""


def test_mpi_io_on_each_instances_own_tmp_is_named_at_the_timeout(
    fault_env: dict[str, str], tmp_path: Path
) -> None:
    """Each isolated instance has its own /tmp, as each container does: a collective open
    there hangs, and the timeout's last line names where the ranks were, the cause and the fix.
    Processes mode shares this machine's /tmp, so the same program completes there."""
    folder = tmp_path / "prog"
    folder.mkdir()
    (folder / "prog.py").write_text(MPI_IO, encoding="utf-8")
    argv = ["run", str(folder / "prog.py"), "-N", "2", "-n", "1", "--timeout", "10"]
    r = smmpi(argv, {**fault_env, "SMMPI_ISOLATION": "hosts"}, timeout=200)
    line = _last_line(r)
    assert r.returncode == 124, r.stderr
    assert line.startswith("smmpi: timed out after 10 s; ranks 0 (algo-1), 1 (algo-2) were in "
                           "`fh = MPI.File.Open(comm, path, "), line  # fmt: skip
    assert "every instance has its own /tmp" in line and "(FSx for Lustre, EFS)" in line, line
    shared = smmpi(argv, {**fault_env, "SMMPI_ISOLATION": "processes"}, timeout=200)
    assert shared.returncode == 0, shared.stderr
    assert "wrote 0" in shared.stdout and "wrote 1" in shared.stdout


def test_an_open_mpi_launcher_setting_in_the_job_environment_is_named(
    fault_env: dict[str, str], tmp_path: Path
) -> None:
    """algo-1's mpirun reads the container's environment: OMPI_MCA_plm=isolated there makes
    it place every rank on algo-1, which has n slots of the N x n ("not enough slots")."""
    text = "from mpi4py import MPI\nprint('rank', MPI.COMM_WORLD.rank)\n"
    r = _run(fault_env, "hosts", tmp_path / "prog", text, "--env", "OMPI_MCA_plm=isolated")
    line = _last_line(r)
    assert r.returncode == 1, r.stderr
    assert line.startswith("smmpi: mpirun exited with code 1 (Open MPI started every rank on"), line
    assert "leave OMPI_MCA_plm and the other launcher settings out of the job's environment" in line
    assert _run(fault_env, "hosts", tmp_path / "prog", text).returncode == 0
