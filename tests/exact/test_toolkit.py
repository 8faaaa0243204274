"""Exact mode with the real sagemaker-training toolkit: `train` on every instance, end to end.

Each run costs the toolkit's own 30 s sleep after mpirun (a success) or its failure path; the
suite runs two jobs.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from tests.helpers import ROOT, base_env, processes_left, smmpi, write

VENV = os.environ.get("SMMPI_TOOLKIT_VENV", str(ROOT / ".venv-toolkit"))


def _env(tmp_path: Path) -> dict[str, str]:
    env = base_env(tmp_path)
    (tmp_path / "tmp").mkdir()
    env.pop("SMMPI_ISOLATION", None)
    return {**env, "TMPDIR": str(tmp_path / "tmp"), "SMMPI_TOOLKIT_VENV": VENV}


def _algo_1(tmp_path: Path) -> Path:
    return next((tmp_path / "tmp").glob("smmpi-run-*")) / "algo-1" / "opt" / "ml"


def test_the_toolkits_train_runs_the_demo_on_every_instance(tmp_path: Path) -> None:
    done = smmpi(
        ["run", "demo", "-N", "2", "-n", "2", "--exact", "--keep"], _env(tmp_path), timeout=300
    )
    assert done.returncode == 0, done.stderr
    first = done.stderr.splitlines()[1]
    assert first.startswith("smmpi: exact mode: every instance runs the container's start")
    assert "the toolkit's own waits add about 30-60 s" in first
    assert "demo: all 4 ranks verified their results" in done.stdout
    # the toolkit's own steps, on both instances: the worker waited for algo-1's sshd and
    # for orted, algo-1 wrote the status file on algo-2 through ssh
    assert "MPI Master online, creating SSH daemon." in done.stderr
    assert "Orted process exited" in done.stderr
    assert "args=['ssh', 'algo-2', 'touch', '/tmp/done.algo-1'], returncode=0" in done.stderr
    assert done.stderr.count("Reporting training SUCCESS") == 2
    assert (_algo_1(tmp_path) / "output" / "success").is_file()
    cache = Path(tmp_path / "home" / ".smmpi" / "toolkits")
    assert stat.S_IMODE(cache.stat().st_mode) == 0o700
    assert processes_left(str(tmp_path)) == []
    assert "stray" not in done.stderr  # the instances' sshd ends with them, as a container's


def test_a_failed_rank_is_named_on_top_of_the_toolkits_failure(tmp_path: Path) -> None:
    program = write(
        tmp_path / "fails.py",
        "from mpi4py import MPI\n"
        "if MPI.COMM_WORLD.Get_rank() == 3:\n"
        "    raise ValueError('broken on rank three')\n"
        "MPI.COMM_WORLD.Barrier()\n",
    )
    argv = ["run", str(program), "-N", "2", "-n", "2", "--exact", "--keep"]
    done = smmpi(argv, _env(tmp_path), timeout=300)
    assert done.returncode != 0
    assert "sagemaker-training-toolkit ERROR    Reporting training FAILURE" in done.stderr
    assert done.stderr.strip().splitlines()[-2:][0].startswith("smmpi: rank 3 (algo-2) failed")
    failure = (_algo_1(tmp_path) / "output" / "failure").read_text()
    assert failure.startswith("ExecuteUserScriptError:\nExitCode 1\n"), failure
    assert "broken on rank three" in failure
    assert processes_left(str(tmp_path)) == []


def test_a_toolkit_venv_without_the_toolkit_is_refused_before_anything_runs(
    tmp_path: Path,
) -> None:
    env = {**_env(tmp_path), "SMMPI_TOOLKIT_VENV": str(tmp_path)}
    done = smmpi(["run", "demo", "-N", "2", "-n", "2", "--exact"], env)
    assert done.returncode == 2
    assert done.stderr.strip() == (
        f"smmpi: invalid SMMPI_TOOLKIT_VENV: '{tmp_path}'; "
        "allowed: a venv with sagemaker-training installed"
    )
    assert list((tmp_path / "tmp").iterdir()) == []
