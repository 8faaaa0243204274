"""Exact mode's sshd: one per instance on port 22, per-run keys, mpirun through ssh."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.helpers import base_env, processes_left, smmpi, write

PROBE = Path(__file__).with_name("probe_sshd.py")


def _snapshot(folder: str) -> dict[str, str]:
    """Each file's digest under ``folder`` (this machine's /root/.ssh, /etc/ssh)."""
    out: dict[str, str] = {}
    for root, _, files in os.walk(folder):
        for name in files:
            path = os.path.join(root, name)
            with open(path, "rb") as f:
                out[path] = hashlib.sha256(f.read()).hexdigest()
    return out


def _machine_environment_path() -> bool:
    """This machine's /etc/environment sets PATH (Debian's is empty; Ubuntu's sets it)."""
    path = Path("/etc/environment")
    lines = path.read_text().splitlines() if path.is_file() else []
    return any(line.startswith("PATH=") for line in lines)


def _env(tmp_path: Path) -> dict[str, str]:
    env = base_env(tmp_path)
    (tmp_path / "tmp").mkdir()
    env.pop("SMMPI_ISOLATION", None)
    # exact mode without the toolkit: sshd on every instance, the container's mpirun line
    return {**env, "TMPDIR": str(tmp_path / "tmp"), "SMMPI_TOOLKIT_VENV": "none"}


def _views(stdout: str) -> dict[int, dict[str, Any]]:
    views = [
        json.loads(line.split("PROBE ", 1)[1]) for line in stdout.splitlines() if "PROBE " in line
    ]
    return {int(v["rank"]): v for v in views}


def test_each_instance_runs_sshd_and_mpirun_reaches_workers_through_it(tmp_path: Path) -> None:
    env = _env(tmp_path)
    before = {d: _snapshot(d) for d in ("/root/.ssh", "/etc/ssh")}
    done = smmpi(["run", str(PROBE), "-N", "3", "-n", "1", "--exact", "--keep"], env)
    assert done.returncode == 0, done.stderr
    assert "smmpi: exact mode: a real sshd on port 22 of every instance" in done.stderr
    views = _views(done.stdout)
    assert sorted(views) == [0, 1, 2]
    for rank, view in views.items():
        assert view["host"] == f"algo-{rank + 1}"
        assert "sshd" in view["processes"] and view["listens"] is True
        assert {"id_ed25519", "authorized_keys", "config"} <= set(view["ssh"])
        assert view["host_keys"] == ["ssh_host_ed25519_key", "ssh_host_ed25519_key.pub"]
        # a worker's /etc/environment holds its environment (ssh sessions get it), as the
        # toolkit's worker writes it; algo-1's is this machine's, as the toolkit leaves it
        assert view["environment_path"] is (rank > 0 or _machine_environment_path())
    assert len({v["authorized"] for v in views.values()}) == 1  # one key pair per run
    machine_host_key = Path("/etc/ssh/ssh_host_ed25519_key.pub")
    if machine_host_key.exists():
        assert views[0]["host_key"] != hashlib.sha256(machine_host_key.read_bytes()).hexdigest()
    run_dir = next((tmp_path / "tmp").glob("smmpi-run-*"))
    record = json.loads((run_dir / "command.json").read_text())
    assert "plm_rsh_agent" not in record["argv"] and "mpirun" in record["argv"]
    for host in ("algo-2", "algo-3"):  # Open MPI logged in to each worker with root's key
        log = (run_dir / ".smmpi" / f"sshd-{host}.log").read_text()
        assert "Accepted publickey for root from 198.18.0.1" in log, log
    assert "Accepted" not in (run_dir / ".smmpi" / "sshd-algo-1.log").read_text()
    assert not (run_dir / "agent").exists() and not (run_dir / ".sockets").exists()
    assert list((run_dir / ".smmpi" / "ssh").iterdir()) == []  # the keys were never on disk
    assert processes_left(str(tmp_path)) == []  # no sshd, orted or rank is left
    assert {d: _snapshot(d) for d in before} == before


def test_a_failed_rank_on_a_worker_is_named(tmp_path: Path) -> None:
    env = _env(tmp_path)
    program = write(
        tmp_path / "fails.py",
        "from mpi4py import MPI\n"
        "if MPI.COMM_WORLD.Get_rank() == 3:\n"
        "    raise ValueError('broken on rank three')\n"
        "MPI.COMM_WORLD.Barrier()\n",
    )
    done = smmpi(["run", str(program), "-N", "2", "-n", "2", "--exact"], env)
    assert done.returncode != 0
    assert "smmpi: rank 3 (algo-2) failed: ValueError: broken on rank three" in done.stderr
    assert processes_left(str(tmp_path)) == []
    assert list((tmp_path / "tmp").iterdir()) == []


def test_exact_with_processes_mode_is_refused(tmp_path: Path) -> None:
    env = _env(tmp_path)
    done = smmpi(["run", "demo", "-N", "2", "--exact", "--isolation", "processes"], env)
    assert done.returncode == 2
    assert done.stderr.strip().count("\n") == 0 and "--exact" in done.stderr, done.stderr
    assert list((tmp_path / "tmp").iterdir()) == []


def test_exact_without_sshd_is_refused_in_one_line(tmp_path: Path) -> None:
    env = _env(tmp_path)
    code = (
        "import sys; from smmpi.instances.hosts import sshd; "
        "sshd.SSHD = '/nonexistent/sbin/sshd'; "
        "from smmpi.cli import main; sys.argv[0] = 'smmpi'; main()"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, "run", "demo", "-N", "2", "--exact"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert (
        len(lines) == 1 and "/nonexistent/sbin/sshd not found: install openssh-server" in lines[0]
    )
    assert list((tmp_path / "tmp").iterdir()) == []


def test_submit_exact_needs_local(tmp_path: Path) -> None:
    env = _env(tmp_path)
    done = smmpi(["submit", "demo", "-N", "2", "-n", "2", "--exact", "--dry-run"], env)
    assert done.returncode == 2
    assert "invalid --exact" in done.stderr and "only with --local" in done.stderr
