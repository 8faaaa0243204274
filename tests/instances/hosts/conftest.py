"""Pods on real namespaces: a run folder with one /opt/ml tree per emulated instance."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from smmpi.instances.hosts.launch import Pod
from tests.instances.hosts.footprint import Machine
from tests.nobody import nobody_venv

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
    """A run folder under /tmp (so an unprivileged user can be given it, too: not a pytest-xdist
    worker's own TMPDIR, which only root may enter)."""
    shared = os.environ.get("SMMPI_TESTS_SHARED_TMP") or None
    folder = Path(tempfile.mkdtemp(prefix="smmpi-hosts-test-", dir=shared))
    folder.chmod(0o755)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def machine(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Machine]:
    """The machine before the test; after it, the same links, mounts and /opt (the mounts of
    other test sessions' pytest folders aside)."""
    own = tmp_path_factory.getbasetemp()
    before = Machine.now(own)
    yield before
    after = Machine.now(own)
    assert after == before


@pytest.fixture(scope="session")
def nobody_python() -> Iterator[str]:
    """The interpreter of user 65534's own venv with smmpi installed (see tests/nobody.py)."""
    yield from (str(venv / "bin" / "python") for venv in nobody_venv())
