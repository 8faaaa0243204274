"""Pods on real namespaces: a run folder with one /opt/ml tree per emulated instance."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from smmpi.runners.hosts.launch import Pod
from tests.runners.hosts.footprint import Machine

ENV = {"PATH": "/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin", "LC_ALL": "C"}


def make_pod(root: Path, count: int) -> Pod:
    hosts = tuple(f"algo-{k}" for k in range(1, count + 1))
    trees = []
    for host in hosts:
        tree = root / host / "opt" / "ml"
        for sub in ("code", "model", "output/data", "input/data"):
            (tree / sub).mkdir(parents=True)
        trees.append(tree)
    return Pod(hosts, tuple(trees), root)


@pytest.fixture
def run_dir() -> Iterator[Path]:
    """A run folder under /tmp (so an unprivileged user can be given it, too)."""
    folder = Path(tempfile.mkdtemp(prefix="smmpi-hosts-test-"))
    folder.chmod(0o755)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def machine() -> Iterator[Machine]:
    """The machine before the test; after it, the same links, mounts and /opt."""
    before = Machine.now()
    yield before
    after = Machine.now()
    assert after == before


NOBODY = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]


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
