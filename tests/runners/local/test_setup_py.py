"""A setup.py in --source-dir installs where the container's ``pip install .`` does: in algo-1,
without this shell's credentials, into the job's site-packages. (That it installs in the venv
`make demo` builds from a fresh clone is tests/test_setup.py's, which builds that venv anyway.)"""

from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest

from smmpi.errors import SmmpiError
from smmpi.runners.local.installs import Place
from smmpi.runners.local.requirements import install_package
from tests.helpers import smmpi
from tests.oracle.matrix import TRAIN_MODULE, package_source


def _algo_1(tmp_path: Path, src: Path) -> Place:
    """A run folder whose algo-1 has ``src`` as its code; installs there in processes mode."""
    run_dir = tmp_path / "run"
    shutil.copytree(src, run_dir / "algo-1" / "opt" / "ml" / "code")
    return Place("processes", run_dir, "algo-1", {"PATH": os.environ["PATH"]})


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
        assert install_package(
            _algo_1(tmp_path, package_source(tmp_path)), jobs, print, str(python)
        )
        return
    with pytest.raises(SmmpiError) as err:
        install_package(_algo_1(tmp_path, package_source(tmp_path)), jobs, print, str(python))
    assert (
        str(err.value)
        == "installing the code's setup.py failed: error: invalid command 'bdist_wheel'"
    )


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


RECORDING_SETUP_PY = """\
import os, socket, tempfile
from setuptools import setup

for path in ("/tmp/{token}-literal", os.path.join(tempfile.gettempdir(), "{token}")):
    with open(path, "w") as f:
        f.write("written by setup.py")
info = {{"host": socket.gethostname(), "env": dict(os.environ), "tmp": tempfile.gettempdir()}}
with open("buildinfo.py", "w") as f:
    f.write("INFO = " + repr(info) + "\\n")
setup(name="trainpkg", version="1.0", py_modules=["train", "buildinfo"])
"""


@pytest.mark.own_mode
@pytest.mark.parametrize("isolation", ["hosts", "processes"])
def test_setup_py_runs_in_algo_1_without_credentials(
    tmp_path: Path, env: dict[str, str], isolation: str
) -> None:
    """The code's setup.py runs where the container runs it: in algo-1 (its hostname, its own
    /tmp), with no AWS_* variable of this shell; processes mode gives it the instance's clean
    environment and a TMPDIR of its own. What it recorded goes into the job's site-packages."""
    token = f"smmpi-setup-py-{os.getpid()}-{isolation}"
    src = tmp_path / "src"
    src.mkdir()
    (src / "train.py").write_text(TRAIN_MODULE, encoding="utf-8")
    (src / "setup.py").write_text(RECORDING_SETUP_PY.format(token=token), encoding="utf-8")
    jobs = tmp_path / "jobs"
    secret = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYSETUPPYKEY"
    run_env = {**env, "SMMPI_LOCAL_JOBS": str(jobs), "AWS_SECRET_ACCESS_KEY": secret}
    run_env |= {"AWS_ACCESS_KEY_ID": "AKIASETUPPYEXAMPLE", "AWS_SESSION_TOKEN": "setup-py-token"}
    args = ["submit", str(src / "train.py"), "--source-dir", str(src), "-N", "2", "-n", "1"]
    args += ["--framework", "pytorch", "--local", "--job-name", "pkg", "--isolation", isolation]
    try:
        done = smmpi(args, run_env, timeout=300)
        assert done.returncode == 0, done.stderr
        assert secret not in done.stdout + done.stderr
        info = (jobs / "pkg" / "site-packages" / "buildinfo.py").read_text(encoding="utf-8")
        seen: dict[str, Any] = ast.literal_eval(info.removeprefix("INFO = "))
        assert [k for k in seen["env"] if k.startswith("AWS_")] == []
        assert secret not in info
        machine_tmp = Path(tempfile.gettempdir()) / token
        assert not machine_tmp.exists()  # its TMPDIR was the instance's own
        if isolation == "hosts":
            assert seen["host"] == "algo-1"
            assert not Path(f"/tmp/{token}-literal").exists()  # /tmp, too, was algo-1's own
        else:
            assert seen["tmp"].startswith(str(jobs / "pkg"))
    finally:
        if isolation == "processes":  # processes mode has this machine's /tmp (it says so)
            Path(f"/tmp/{token}-literal").unlink(missing_ok=True)
