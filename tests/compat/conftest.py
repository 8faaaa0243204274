"""Real programs nobody here wrote: the installed mpi4py's own sdist (its test/ and demo/).

The sdist is fetched once with pip (``pip download --no-binary NAME --no-deps``: the package's
own sdist, with wheels for what pip needs to read its metadata) and kept under the pytest
cache, so reruns do not fetch it again. Under pytest-xdist (``pytest -n 4 tests/compat``) one
worker fetches and unpacks it, the others wait for it (a lock).
"""

from __future__ import annotations

import contextlib
import fcntl
import importlib.metadata
import subprocess
import sys
import tarfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers import base_env

ROOT = Path(__file__).resolve().parents[2]


@contextlib.contextmanager
def locked(path: Path) -> Iterator[None]:
    """Held by one process at a time (of any worker): ``path`` is the lock file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def fetch_sdist(name: str, version: str, cache: Path) -> Path:
    """``name==version``'s sdist, unpacked under ``cache`` (downloaded once, by one worker)."""
    with locked(cache / f".{name}.lock"):
        return _fetch_sdist(name, version, cache)


def _fetch_sdist(name: str, version: str, cache: Path) -> Path:
    folder = cache / f"{name}-{version}"
    if (folder / "PKG-INFO").is_file():
        return folder
    pip = [sys.executable, "-m", "pip", "download", "--no-binary", name, "--no-deps", "-q"]
    subprocess.run(
        [*pip, f"{name}=={version}", "-d", str(cache)],
        check=True,
        timeout=600,
    )
    archive = cache / f"{name}-{version}.tar.gz"
    with tarfile.open(archive) as tar:
        tar.extractall(cache, filter="data")
    return folder


@pytest.fixture(scope="session")
def mpi4py_source() -> Path:
    """The installed mpi4py's own sdist: its test suite and demos, as released."""
    version = importlib.metadata.version("mpi4py")
    return fetch_sdist("mpi4py", version, ROOT / ".pytest_cache" / "compat")


@pytest.fixture
def compat_env(tmp_path: Path) -> dict[str, str]:
    env = base_env(tmp_path)
    env.pop("SMMPI_ISOLATION", None)
    env["TMPDIR"] = str(tmp_path)
    return env


def plain_mpirun(np: int) -> list[str]:
    """Plain Open MPI, as a user runs it here: every rank on this machine."""
    return ["mpirun", "--oversubscribe", "--tag-output", "-np", str(np)]
