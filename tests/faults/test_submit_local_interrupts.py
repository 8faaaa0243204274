"""Ctrl-C and SIGTERM at each stage of ``smmpi submit --local`` (both APIs).

An interrupt before the ranks run leaves nothing of the job: no local-jobs folder, no
temporary folder, no process (exit 130, one line). One while the ranks run stops them and
the job is recorded Stopped. One while a finished job's artifacts are packed waits for the
record to be whole. The ``fault_env`` fixture checks that no process, namespace or mount
outlives the run.
"""

from __future__ import annotations

import json
import signal
import subprocess
import tarfile
from pathlib import Path

import pytest

from tests.helpers import BIN, until_ready, wait_until

HEAVY = "import time\nfrom mpi4py import MPI\ntime.sleep(300)\n"
READY = "import time\nfrom mpi4py import MPI\nprint('ready', flush=True)\ntime.sleep(300)\n"
MODEL = (
    "import os\nfrom mpi4py import MPI\n"
    "if MPI.COMM_WORLD.Get_rank() == 0:\n"
    "    with open('/opt/ml/model/weights.bin', 'wb') as f:\n"
    "        f.write(os.urandom(48 * 1024 * 1024))\n"
    "MPI.COMM_WORLD.Barrier()\n"
)
SIGNALS = [signal.SIGTERM, signal.SIGINT]
NOTHING_KEPT = "smmpi: interrupted before the job's ranks started; nothing of it was kept"


def _program(tmp_path: Path, body: str, weights: int = 0) -> Path:
    folder = tmp_path / "prog"
    folder.mkdir()
    (folder / "job.py").write_text(body, encoding="utf-8")
    if weights:  # a large code folder: laying it out on every host takes a while
        (folder / "weights.bin").write_bytes(b"\0" * weights)
    return folder / "job.py"


def _start(program: Path, env: dict[str, str], *args: str) -> subprocess.Popen[str]:
    argv = [str(BIN / "smmpi"), "submit", str(program), "--source-dir", str(program.parent)]
    return subprocess.Popen(
        [*argv, *args, "--local"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _ended(proc: subprocess.Popen[str], signum: int) -> tuple[str, str]:
    proc.send_signal(signum)
    out, err = proc.communicate(timeout=240)
    assert proc.returncode == 130, err[-3000:]
    return out, err


def _nothing_kept(proc: subprocess.Popen[str], signum: int, env: dict[str, str]) -> None:
    """Interrupted before its ranks ran: one line, no job folder, no temporary folder."""
    _, err = _ended(proc, signum)
    assert _last(err) == NOTHING_KEPT, err[-3000:]
    assert _jobs(env) == []
    assert not any(Path(env["TMPDIR"]).iterdir())  # the SDK's channels' copies too


def _last(text: str) -> str:
    return text.strip().splitlines()[-1]


def _jobs(env: dict[str, str]) -> list[Path]:
    root = Path(env["SMMPI_LOCAL_JOBS"])
    return sorted(root.iterdir()) if root.is_dir() else []


def _record(folder: Path) -> dict[str, object]:
    data: dict[str, object] = json.loads((folder / "describe.json").read_text(encoding="utf-8"))
    return data


@pytest.mark.parametrize("signum", SIGNALS)
def test_an_interrupt_while_the_hosts_are_laid_out_leaves_nothing(
    signum: int, fault_env: dict[str, str], tmp_path: Path
) -> None:
    prog = _program(tmp_path, HEAVY, weights=64 * 1024 * 1024)
    proc = _start(prog, fault_env, "-N", "16", "-n", "1", "--job-name", "laid-out")
    hosts = Path(fault_env["SMMPI_LOCAL_JOBS"]) / "laid-out" / "hosts"
    wait_until(hosts.exists, proc, "host trees")
    _nothing_kept(proc, signum, fault_env)


@pytest.mark.parametrize("signum", SIGNALS)
def test_an_interrupt_as_the_jobs_folder_is_made_leaves_nothing(
    signum: int, fault_env: dict[str, str], tmp_path: Path
) -> None:
    """The earliest sign of the job on disk (its folder), whatever step it has reached since."""
    prog = _program(tmp_path, HEAVY, weights=8 * 1024 * 1024)
    proc = _start(prog, fault_env, "-N", "4", "-n", "1", "--job-name", "made")
    folder = Path(fault_env["SMMPI_LOCAL_JOBS"]) / "made"
    wait_until(folder.exists, proc, "the job's folder")
    _nothing_kept(proc, signum, fault_env)


@pytest.mark.parametrize("signum", SIGNALS)
def test_an_interrupt_while_the_ranks_run_records_the_job_stopped(
    signum: int, fault_env: dict[str, str], tmp_path: Path
) -> None:
    prog = _program(tmp_path, READY)
    proc = _start(prog, fault_env, "-N", "2", "-n", "2", "--job-name", "running")
    until_ready(proc, 4)
    _, err = _ended(proc, signum)
    assert _last(err) == "smmpi: interrupted; every rank was stopped", err[-3000:]
    (folder,) = _jobs(fault_env)
    record = _record(folder)
    assert record["TrainingJobStatus"] == "Stopped"
    assert "FailureReason" not in record  # as SageMaker (and serve) describe a stopped job
    assert (folder / "output.tar.gz").is_file() and (folder / "model.tar.gz").is_file()
    listed = subprocess.run(
        [str(BIN / "smmpi"), "local-jobs", "list", "--json"],
        env=fault_env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert [(j["name"], j["status"]) for j in json.loads(listed.stdout)] == [("running", "Stopped")]


def test_an_interrupt_while_the_model_is_packed_waits_for_a_whole_record(
    fault_env: dict[str, str], tmp_path: Path
) -> None:
    prog = _program(tmp_path, MODEL)
    proc = _start(prog, fault_env, "-N", "1", "-n", "2", "--job-name", "packed")
    folder = Path(fault_env["SMMPI_LOCAL_JOBS"]) / "packed"
    wait_until((folder / "model.tar.gz").exists, proc, "model.tar.gz")
    _, err = _ended(proc, signal.SIGTERM)
    assert _last(err) == f"smmpi: interrupted; local job packed had ended: Completed ({folder})"
    record = _record(folder)
    assert record["TrainingJobStatus"] == "Completed"
    with tarfile.open(folder / "model.tar.gz") as tar:  # whole, not cut off
        (member,) = tar.getmembers()
        data = tar.extractfile(member)
        assert member.name == "weights.bin" and data is not None
        assert len(data.read()) == 48 * 1024 * 1024


@pytest.mark.parametrize("signum", SIGNALS)
def test_model_trainer_an_interrupt_while_laid_out_leaves_nothing(
    signum: int, fault_env: dict[str, str], tmp_path: Path
) -> None:
    fault_env.pop("SMMPI_ISOLATION", None)  # a ModelTrainer request runs on isolated hosts
    prog = _program(tmp_path, HEAVY, weights=64 * 1024 * 1024)
    proc = _start(prog, fault_env, "-N", "8", "-n", "1", "--api", "model-trainer")
    root = Path(fault_env["SMMPI_LOCAL_JOBS"])
    wait_until(lambda: any(root.glob("*/hosts")), proc, "host trees")
    _nothing_kept(proc, signum, fault_env)


def test_model_trainer_an_interrupt_while_the_ranks_run_records_the_job_stopped(
    fault_env: dict[str, str], tmp_path: Path
) -> None:
    fault_env.pop("SMMPI_ISOLATION", None)
    prog = _program(tmp_path, READY)
    proc = _start(prog, fault_env, "-N", "2", "-n", "1", "--api", "model-trainer")
    until_ready(proc, 2)
    _, err = _ended(proc, signal.SIGTERM)
    assert _last(err) == "smmpi: interrupted; every rank was stopped", err[-3000:]
    (folder,) = _jobs(fault_env)
    assert _record(folder)["TrainingJobStatus"] == "Stopped"
    assert not any(Path(fault_env["TMPDIR"]).iterdir())
