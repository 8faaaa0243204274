"""A setup.py in the source dir: installed and run as a module, as the toolkit does."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.helpers import smmpi
from tests.oracle import matrix

TRAIN = """\
import sys
from mpi4py import MPI
print("MOD", __spec__.name if __spec__ else None, MPI.COMM_WORLD.Get_rank())
"""


def test_setup_py_code_is_installed_and_run_as_a_module(
    tmp_path: Path, env: dict[str, str], differential: dict[str, Any]
) -> None:
    src = tmp_path / "src"
    src.mkdir()
    (src / "train.py").write_text(TRAIN, encoding="utf-8")
    (src / "setup.py").write_text(matrix.SETUP_PY, encoding="utf-8")
    jobs = tmp_path / "jobs"
    args = ["submit", str(src / "train.py"), "--source-dir", str(src), "-N", "2", "-n", "1"]
    args += ["--framework", "pytorch"]
    done = smmpi([*args, "--local", "--job-name", "pkg"], {**env, "SMMPI_LOCAL_JOBS": str(jobs)})
    assert done.returncode == 0, done.stderr
    assert sorted(ln.split(">:", 1)[1] for ln in done.stdout.splitlines() if "MOD" in ln) == [
        "MOD train 0",
        "MOD train 1",
    ]
    assert (jobs / "pkg" / "site-packages" / "trainpkg-1.0.dist-info").is_dir()
    assert "setup.py: installing the code" in done.stderr
    # the dry run's container line is the toolkit's: -m mpi4py -m train
    plan = smmpi([*args, "--dry-run", "--json"], env)
    assert plan.returncode == 0, plan.stderr
    mpirun = json.loads(plan.stdout)["mpirun"]
    toolkit = differential["answer"]["cases"]["pt-3x2-setup-py"]["algo-1"]["command"]
    assert mpirun[-4:] == toolkit[-4:] == ["-m", "mpi4py", "-m", "train"]
