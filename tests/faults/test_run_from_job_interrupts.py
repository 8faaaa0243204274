"""Ctrl-C and SIGTERM while ``smmpi run --from-job`` lays a submitted job out, and while its
ranks run: SIGTERM ends it as Ctrl-C does (exit 130, one line), and what it made goes."""

from __future__ import annotations

import json
import signal
import subprocess
from pathlib import Path

import pytest

from tests.helpers import BIN, MotoServer, make_bucket, smmpi, until_ready, wait_until

pytestmark = pytest.mark.aws

ROLE = "arn:aws:iam::123456789012:role/smmpi-test"
BUCKET = "smmpi-from-job-interrupts"
WAIT = (
    "import time\n"
    "from mpi4py import MPI\n"
    "print('ready', MPI.COMM_WORLD.rank, flush=True)\n"
    "time.sleep(300)\n"
)
NOTHING_KEPT = "smmpi: interrupted before the job's ranks started; nothing of it was kept"


def _submitted(
    env: dict[str, str], moto: MotoServer, tmp_path: Path, name: str, *, weights: int = 0
) -> None:
    """A job submitted to the moto server (not run there), whose code waits 300 s."""
    make_bucket(moto, BUCKET)
    folder = tmp_path / "prog"
    folder.mkdir()
    (folder / "job.py").write_text(WAIT, encoding="utf-8")
    if weights:  # a large code folder: laying it out on every host takes a while
        (folder / "weights.bin").write_bytes(b"\0" * weights)
    argv = ["submit", str(folder / "job.py"), "--source-dir", str(folder), "-N", "8", "-n", "1"]
    argv += ["--role", ROLE, "--bucket", BUCKET, "--job-name", name, "--no-wait"]
    r = smmpi(argv, env)
    assert r.returncode == 0, r.stderr


def _from_job(env: dict[str, str], name: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [str(BIN / "smmpi"), "run", "--from-job", name],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_an_interrupt_while_the_hosts_are_laid_out_leaves_nothing(
    signum: int, fault_env: dict[str, str], moto_server: MotoServer, tmp_path: Path
) -> None:
    fault_env.update(moto_server.aws_env())
    _submitted(fault_env, moto_server, tmp_path, "laid-out", weights=48 * 1024 * 1024)
    proc = _from_job(fault_env, "laid-out")
    hosts = Path(fault_env["SMMPI_LOCAL_JOBS"]) / "laid-out" / "hosts"
    wait_until(hosts.exists, proc, "host trees")
    proc.send_signal(signum)
    _, err = proc.communicate(timeout=240)
    assert proc.returncode == 130, err[-3000:]
    assert err.strip().splitlines()[-1] == NOTHING_KEPT, err[-3000:]
    assert not Path(fault_env["SMMPI_LOCAL_JOBS"], "laid-out").exists()
    assert not any(Path(fault_env["TMPDIR"]).iterdir())


def test_sigterm_while_the_ranks_run_records_the_job_stopped(
    fault_env: dict[str, str], moto_server: MotoServer, tmp_path: Path
) -> None:
    fault_env.update(moto_server.aws_env())
    _submitted(fault_env, moto_server, tmp_path, "running")
    proc = _from_job(fault_env, "running")
    until_ready(proc, 8)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=240)
    assert proc.returncode == 130, err[-3000:]
    folder = Path(fault_env["SMMPI_LOCAL_JOBS"], "running")
    record = json.loads((folder / "describe.json").read_text(encoding="utf-8"))
    assert record["TrainingJobStatus"] == "Stopped", record
