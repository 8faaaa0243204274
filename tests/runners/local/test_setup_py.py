"""A setup.py in --source-dir installs in the environment `make demo` builds, as the container's
``pip install .`` does: a fresh venv (``python -m venv``) with ``pip install -e '.[aws]'``."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from smmpi.errors import SmmpiError
from smmpi.runners.local.requirements import install_package
from tests.helpers import ROOT, smmpi
from tests.oracle import matrix

TRAIN = """\
from mpi4py import MPI
print("MOD", __spec__.name if __spec__ else None, MPI.COMM_WORLD.Get_rank())
"""


def _source(tmp_path: Path) -> Path:
    src = tmp_path / "src"
    src.mkdir()
    (src / "train.py").write_text(TRAIN, encoding="utf-8")
    (src / "setup.py").write_text(matrix.SETUP_PY, encoding="utf-8")
    return src


def _venv(where: Path) -> Path:
    subprocess.run([sys.executable, "-m", "venv", str(where)], check=True, timeout=300)
    return where / "bin" / "python"


def test_a_bare_venvs_setuptools_failure_is_named(tmp_path: Path) -> None:
    """``python -m venv`` alone gives setuptools without ``wheel`` (before 70.1 it cannot build
    a wheel): the one line says so, not pip's "hint: See above for details"."""
    python = _venv(tmp_path / "bare")
    old = subprocess.run(
        [str(python), "-c", "import setuptools; print(setuptools.__version__)"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    jobs = tmp_path / "job"
    jobs.mkdir()
    if tuple(int(p) for p in old.split(".")[:2]) >= (70, 1):  # a newer Python's own bundle
        assert install_package(_source(tmp_path), jobs, lambda _: None, str(python))
        return
    with pytest.raises(SmmpiError) as err:
        install_package(_source(tmp_path), jobs, lambda _: None, str(python))
    assert (
        str(err.value)
        == "installing the code's setup.py failed: error: invalid command 'bdist_wheel'"
    )


def test_setup_py_installs_in_the_venv_make_demo_builds(
    tmp_path: Path, env: dict[str, str]
) -> None:
    python = _venv(tmp_path / "demo")
    pip = subprocess.run(
        [str(python), "-m", "pip", "install", "--quiet", "-e", f"{ROOT}[aws]"],
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert pip.returncode == 0, pip.stderr
    src = _source(tmp_path)
    jobs = tmp_path / "jobs"
    run_env = {**env, "SMMPI_LOCAL_JOBS": str(jobs), "PATH": f"{python.parent}:{env['PATH']}"}
    args = [str(python.parent / "smmpi"), "submit", str(src / "train.py"), "--source-dir", str(src)]
    args += ["-N", "2", "-n", "1", "--framework", "pytorch", "--local", "--job-name", "pkg"]
    done = subprocess.run(args, env=run_env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert sorted(ln.split(">:", 1)[1] for ln in done.stdout.splitlines() if "MOD" in ln) == [
        "MOD train 0",
        "MOD train 1",
    ]
    assert (jobs / "pkg" / "site-packages" / "trainpkg-1.0.dist-info").is_dir()


def test_a_local_runs_error_is_one_line_without_the_sdks_link(
    tmp_path: Path, env: dict[str, str]
) -> None:
    """An error of the local run inside the SDK's fit (here: a job name in use) is smmpi's one
    line, without the link to the SDK's troubleshooting guide the SDK logs for any error."""
    jobs = tmp_path / "jobs"
    (jobs / "taken").mkdir(parents=True)
    args = ["submit", "demo", "-N", "1", "-n", "1", "--local", "--job-name", "taken"]
    done = smmpi(args, {**env, "SMMPI_LOCAL_JOBS": str(jobs)})
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        f"smmpi: invalid job_name: 'taken'; allowed: a name no local job has yet ({jobs / 'taken'} "
        "exists: pick another --job-name, or remove it with `smmpi local-jobs prune`)"
    ]
