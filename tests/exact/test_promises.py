"""smmpi's promises in exact mode: stacks at --timeout, nothing left, no credentials."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests.helpers import BIN, PipeLines, base_env, processes_left, processes_with, smmpi
from tests.instances.hosts.footprint import namespaces_in_use, new_namespaces


def _env(tmp_path: Path) -> dict[str, str]:
    env = base_env(tmp_path)
    (tmp_path / "tmp").mkdir()
    env.pop("SMMPI_ISOLATION", None)
    jobs = str(tmp_path / "jobs")
    # exact mode without the toolkit: sshd on every instance, the container's mpirun line
    return {
        **env,
        "TMPDIR": str(tmp_path / "tmp"),
        "SMMPI_LOCAL_JOBS": jobs,
        "SMMPI_TOOLKIT_VENV": "none",
    }


@pytest.mark.machine
def test_timeout_dumps_every_ranks_stack(tmp_path: Path) -> None:
    before = namespaces_in_use()
    argv = ["run", "alltoall", "-N", "2", "-n", "2", "--timeout", "8", "--exact", "--", "--unsafe"]
    r = smmpi(argv, _env(tmp_path), timeout=300)
    assert r.returncode == 124, r.stderr
    for rank, host in ((0, "algo-1"), (1, "algo-1"), (2, "algo-2"), (3, "algo-2")):
        section = r.stderr.split(f"--- rank {rank} ({host}) ---\n", 1)[1]
        assert 'File "alltoall.py"' in section.split("---", 1)[0], r.stderr
    assert processes_left(str(tmp_path)) == []
    assert new_namespaces(before) == set()


@pytest.mark.machine
def test_sigkill_of_smmpi_leaves_no_sshd_orted_rank_or_namespace(tmp_path: Path) -> None:
    before = namespaces_in_use()
    script = tmp_path / "hang_for_kill.py"
    script.write_text(
        "import time\nfrom mpi4py import MPI\n"
        "print('started', MPI.COMM_WORLD.Get_rank(), flush=True)\ntime.sleep(600)\n"
    )
    proc = subprocess.Popen(
        [str(BIN / "smmpi"), "run", str(script), "-N", "3", "-n", "1", "--exact"],
        env=_env(tmp_path),
        stdout=subprocess.PIPE,
        stderr=(tmp_path / "stderr").open("wb"),
    )
    try:
        PipeLines(proc).until(
            3,
            "<stdout>:started",
            time.monotonic() + 120,
            lambda: (tmp_path / "stderr").read_text() + _processes_of(str(tmp_path)),
        )
        assert len(_sshd_of_now(str(tmp_path))) == 3  # one sshd listening per instance
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    assert processes_left(str(tmp_path)) == []  # sshd, orted, ranks
    assert processes_left(script.name) == []
    assert new_namespaces(before) == set()


def _processes_of(marker: str) -> str:
    """What runs for this test, for the message of a start that did not finish."""
    return "\n" + "\n".join(processes_with(marker) + processes_with("orted"))


def _sshd_of_now(marker: str) -> list[str]:
    found = []
    for pid in (p for p in os.listdir("/proc") if p.isdigit()):
        try:
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        if cmd.startswith("sshd: /usr/sbin/sshd -D -E " + marker) or (
            cmd.startswith("/usr/sbin/sshd -D -E " + marker)
        ):
            found.append(cmd)
    return found


def test_this_shells_credentials_stay_out_of_the_instances(tmp_path: Path) -> None:
    secret = "testing-secret-do-not-print"
    script = tmp_path / "creds.py"
    script.write_text(
        "import os\nfrom mpi4py import MPI\n"
        "env = open('/etc/environment').read()\n"
        "print('seen', MPI.COMM_WORLD.Get_rank(), os.environ.get('AWS_SECRET_ACCESS_KEY'),"
        " 'AWS_' in env)\n"
    )
    env = _env(tmp_path) | {
        "AWS_SECRET_ACCESS_KEY": secret,
        "AWS_ACCESS_KEY_ID": "testing-AKIDEXAMPLE",
    }
    argv = ["submit", str(script), "-N", "2", "-n", "1", "--local", "--job-name", "creds"]
    role = "arn:aws:iam::123456789012:role/x"
    r = smmpi([*argv, "--exact", "--region", "us-west-2", "--role", role], env)
    assert r.returncode == 0, r.stderr
    assert "smmpi: exact mode" in r.stderr
    assert sorted(ln for ln in r.stdout.splitlines() if "seen" in ln) == [
        "[1,mpirank:0,algo-1]<stdout>:seen 0 None False",
        "[1,mpirank:1,algo-2]<stdout>:seen 1 None False",
    ]
    for path in (tmp_path / "jobs" / "creds").rglob("*"):
        if path.is_file():
            assert secret.encode() not in path.read_bytes(), path
