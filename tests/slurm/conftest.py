"""The SLURM tests: one real cluster (3 nodes x 2 CPUs) for the folder, one test at a time;
a test that only waits (``side_by_side``: a job over its time limit) runs in `make test`'s
parallel pass, on a cluster of its own in its worker.

SLURM's tests run wherever Debian's SLURM is installed (`make slurm`); elsewhere they are
left out with one line in the summary (they are the folder's
``machine`` tests: one at a time), and CI (``SMMPI_TEST_REQUIRE_SLURM=1``) fails
instead. Each test that needs the cluster starts it through the real CLI, once.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers import base_env, smmpi
from tests.slurm.cluster_helpers import Cluster, installed

HERE = Path(__file__).parent
_LEFT_OUT: list[str] = []


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    ours = [i for i in items if HERE in i.path.parents and _needs_slurm(i)]
    missing = installed()
    if not ours or missing is None:
        return
    if os.environ.get("SMMPI_TEST_REQUIRE_SLURM") == "1":
        raise pytest.UsageError(f"SMMPI_TEST_REQUIRE_SLURM=1 but {missing} (make slurm)")
    config.hook.pytest_deselected(items=ours)
    items[:] = [i for i in items if i not in ours]
    _LEFT_OUT.append(f"{len(ours)} SLURM tests left out: {missing} (make slurm)")


def _needs_slurm(item: pytest.Item) -> bool:
    """A test of the real cluster: the folder's ``machine`` tests, and those that only wait on
    a cluster of their own (``cluster`` among their fixtures)."""
    return bool(item.get_closest_marker("machine")) or "cluster" in getattr(
        item, "fixturenames", ()
    )


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    for line in _LEFT_OUT:
        terminalreporter.write_line(line)


@pytest.fixture(scope="package")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    """A cluster up for this folder's tests; down once they have run."""
    home = tmp_path_factory.mktemp("slurm-home")
    folder = Path(tempfile.mkdtemp(prefix="smmpi-sl-", dir="/tmp"))  # short: socket paths
    # the cluster goes with this session, however it ends
    env = {**base_env(home), "SMMPI_SLURM_DIR": str(folder), "SMMPI_SLURM_OWNER": str(os.getpid())}
    started = smmpi(["slurm", "up", "--nodes", "3", "--cpus", "2"], env, timeout=120)
    assert started.returncode == 0, started.stderr
    config = Path(env["SMMPI_CONFIG"])
    saved = json.loads(config.read_text())
    saved["slurm_profiles"]["local"]["activate"] = sys.prefix  # the venv: python, mpi4py, MPI
    config.write_text(json.dumps(saved))
    try:
        yield Cluster(folder, env, home)
    finally:
        stopped = smmpi(["slurm", "down"], env, timeout=120)
        shutil.rmtree(folder, ignore_errors=True)
    assert stopped.returncode == 0, stopped.stderr
