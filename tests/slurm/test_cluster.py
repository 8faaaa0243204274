"""`smmpi slurm up|down|status`: a real SLURM whose nodes are isolated hosts, leaving nothing."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

from tests.helpers import base_env, smmpi
from tests.instances.hosts.footprint import Machine, namespaces_in_use, new_namespaces
from tests.slurm.cluster_helpers import Cluster, daemons_left

pytestmark = pytest.mark.machine


def test_nodes_are_hosts_of_their_own(cluster: Cluster) -> None:
    """Every node answers srun with its own hostname, network namespace and /tmp."""
    probe = 'echo "$(hostname) $(readlink /proc/self/ns/net) $(ls -d /tmp/* 2>/dev/null | wc -l)"'
    done = cluster.command("srun", "--nodes=3", "--ntasks-per-node=1", "sh", "-c", probe)
    assert done.returncode == 0, done.stderr
    rows = sorted(line.split() for line in done.stdout.splitlines())
    assert [r[0] for r in rows] == ["node1", "node2", "node3"]
    assert len({r[1] for r in rows}) == 3
    assert os.readlink("/proc/self/ns/net") not in {r[1] for r in rows}
    status = smmpi(["slurm", "status"], cluster.env)
    assert status.returncode == 0, status.stderr
    assert "3 nodes x 2 CPUs" in status.stdout and "idle node[1-3]" in status.stdout


def test_up_down_and_up_after_sigkill_leave_nothing(tmp_path: Path) -> None:
    """up, down: no daemon, namespace, link or mount is left; a SIGKILLed cluster's leftovers
    are cleared by the next up, which then starts as usual."""
    folder = Path(tempfile.mkdtemp(prefix="smmpi-sl-", dir="/tmp"))
    env = {**base_env(tmp_path), "SMMPI_SLURM_DIR": str(folder)}
    before, namespaces = Machine.now(), namespaces_in_use()
    try:
        up = smmpi(["slurm", "up", "--nodes", "2", "--cpus", "1"], env)
        assert up.returncode == 0, up.stderr
        assert "2 nodes x 1 CPUs" in up.stdout
        down = smmpi(["slurm", "down"], env)
        assert (down.returncode, down.stdout.strip()) == (0, "SLURM cluster stopped")
        assert daemons_left(folder) == []
        assert new_namespaces(namespaces) == set()
        assert sorted(os.listdir(folder)) == [".smmpi-slurm", "log", "shared"]
        assert smmpi(["slurm", "up", "--nodes", "2", "--cpus", "1"], env).returncode == 0
        keeper = int((folder / "keeper.pid").read_text())
        os.kill(keeper, signal.SIGKILL)
        assert daemons_left(folder) == []
        assert (folder / "munge" / "munge.socket").exists()  # what the killed one left
        again = smmpi(["slurm", "up", "--nodes", "2", "--cpus", "1"], env)
        assert again.returncode == 0, again.stderr
        assert smmpi(["slurm", "down"], env).returncode == 0
        # nothing of either cluster is left: the killed one's socket, state and spool are gone
        assert sorted(os.listdir(folder)) == [".smmpi-slurm", "log", "shared"]
        assert daemons_left(folder) == []
    finally:
        smmpi(["slurm", "down"], env)
        left = daemons_left(folder)
        shutil.rmtree(folder, ignore_errors=True)
    assert left == []
    assert new_namespaces(namespaces) == set()
    assert Machine.now() == before
    status = smmpi(["slurm", "status"], env)
    assert (status.returncode, status.stdout.split()[:3]) == (1, ["SLURM", "cluster", "down"])


@pytest.mark.parametrize(
    ("args", "line"),
    [
        (["--nodes", "0"], "invalid --nodes: 0; allowed: an integer from 1 to 64"),
        (["--cpus", "300"], "invalid --cpus: 300; allowed: an integer from 1 to 256"),
        (["--nodes", "x"], "invalid --nodes: 'x'; allowed: an integer in ASCII digits"),
    ],
)
def test_bad_shape_is_one_line_and_starts_nothing(
    tmp_path: Path, args: list[str], line: str
) -> None:
    folder = tmp_path / "cluster"
    env = {**base_env(tmp_path), "SMMPI_SLURM_DIR": str(folder)}
    started = time.monotonic()
    done = smmpi(["slurm", "up", *args], env)
    assert done.returncode == 2
    assert done.stderr.strip() == f"smmpi: {line}"
    assert not folder.exists()
    assert daemons_left(folder) == [] and time.monotonic() - started < 60


def test_a_cluster_stops_when_its_owner_ends(tmp_path: Path) -> None:
    """With SMMPI_SLURM_OWNER, the cluster goes when that process goes (a killed test session
    leaves no daemon); a value that is not a process id is one line and starts nothing."""
    folder = Path(tempfile.mkdtemp(prefix="smmpi-sl-", dir="/tmp"))
    owner = subprocess.Popen(["sleep", "600"])
    env = {**base_env(tmp_path), "SMMPI_SLURM_DIR": str(folder)}
    try:
        bad = smmpi(["slurm", "up", "--nodes", "1"], {**env, "SMMPI_SLURM_OWNER": "me"})
        assert bad.returncode == 2
        assert bad.stderr.startswith("smmpi: invalid SMMPI_SLURM_OWNER: 'me'; allowed: a process")
        assert os.listdir(folder) == []
        env["SMMPI_SLURM_OWNER"] = str(owner.pid)
        up = smmpi(["slurm", "up", "--nodes", "1", "--cpus", "1"], env)
        assert up.returncode == 0, up.stderr
        owner.kill()
        owner.wait()
        assert daemons_left(folder) == []
        assert smmpi(["slurm", "status"], env).returncode == 1
    finally:
        owner.kill()
        smmpi(["slurm", "down"], env)
        shutil.rmtree(folder, ignore_errors=True)
