"""The local jobs smmpi keeps: a killed job's record, and who may read it.

A real ``smmpi submit --local`` is killed with SIGKILL while its ranks run:
its record must not stay InProgress forever. Every folder smmpi keeps is
0700 and every file in it 0600, and older, looser ones are tightened when
smmpi finds them (a folder smmpi did not create is left alone).
"""

from __future__ import annotations

import json
import os
import queue
import signal
import stat
import subprocess
import threading
import time
from pathlib import Path

from tests.helpers import BIN, MotoServer, smmpi

SLEEPER = """\
import time
from mpi4py import MPI

print("rank", MPI.COMM_WORLD.Get_rank(), "is running", flush=True)
time.sleep(300)
"""


def _lines(proc: subprocess.Popen[str]) -> queue.Queue[str]:
    """The process's stdout, line by line, read in a thread (so waits keep a deadline)."""
    got: queue.Queue[str] = queue.Queue()

    def pump() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            got.put(line)

    threading.Thread(target=pump, daemon=True).start()
    return got


def _wait_for(got: queue.Queue[str], needle: str, seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            if needle in got.get(timeout=0.5):
                return
        except queue.Empty:
            continue
    raise AssertionError(f"no {needle!r} within {seconds} s")


def _listed(env: dict[str, str]) -> dict[str, str]:
    done = smmpi(["local-jobs", "list", "--json"], env)
    assert done.returncode == 0, done.stderr
    return {job["name"]: job["status"] for job in json.loads(done.stdout)}


def test_a_sigkilled_local_job_is_recorded_as_killed_and_can_be_pruned(
    fault_env: dict[str, str], tmp_path: Path
) -> None:
    script = tmp_path / "sleeper.py"
    script.write_text(SLEEPER)
    args = ["submit", str(script), "-N", "1", "-n", "2", "--local", "--job-name", "killed-job"]
    proc = subprocess.Popen(
        [str(BIN / "smmpi"), *args],
        env=fault_env,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        _wait_for(_lines(proc), "is running", 120)
        assert _listed(fault_env) == {"killed-job": "InProgress"}  # its owner is alive
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
    folder = Path(fault_env["SMMPI_LOCAL_JOBS"]) / "killed-job"
    record = json.loads((folder / "describe.json").read_text())
    assert record["TrainingJobStatus"] == "InProgress"  # nobody could say otherwise yet
    assert _listed(fault_env) == {"killed-job": "Failed"}
    record = json.loads((folder / "describe.json").read_text())
    assert record["TrainingJobStatus"] == "Failed"
    assert record["FailureReason"] == "the local run was killed"
    pruned = smmpi(["local-jobs", "prune", "--keep", "0"], fault_env)
    assert pruned.returncode == 0, pruned.stderr
    assert not folder.exists()


def test_an_owner_whose_pid_was_reused_is_dead(env: dict[str, str], tmp_path: Path) -> None:
    """The marker names this test's own pid, with another start time: a reused pid."""
    root = tmp_path / "jobs"
    folder = root / "reused-pid"
    folder.mkdir(parents=True)
    (folder / ".smmpi-local-job").write_text(f"{os.getpid()} 1\n")
    (folder / "describe.json").write_text(json.dumps({"TrainingJobStatus": "InProgress"}))
    env = {**env, "SMMPI_LOCAL_JOBS": str(root)}
    assert _listed(env) == {"reused-pid": "Failed"}


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.lstat().st_mode)


def _private(folder: Path) -> list[str]:
    """What, in a local job's folder, another user could read (empty when all is private)."""
    loose = [str(folder)] if _mode(folder) != 0o700 else []
    for path in [*folder.iterdir(), *(folder / "logs").iterdir()]:
        want = 0o700 if path.is_dir() else 0o600
        if _mode(path) != want:
            loose.append(f"{path} {oct(_mode(path))}")
    return loose


def test_local_jobs_are_private_and_old_ones_are_tightened(
    env: dict[str, str], tmp_path: Path
) -> None:
    done = smmpi(["submit", "demo", "-N", "1", "-n", "2", "--local", "--job-name", "mine"], env)
    assert done.returncode == 0, done.stderr
    home = Path(env["HOME"]) / ".smmpi"
    folder = home / "local-jobs" / "mine"
    assert (folder / "model.tar.gz").is_file() and list((folder / "logs").iterdir())
    assert [oct(_mode(p)) for p in (home, home / "local-jobs")] == ["0o700", "0o700"]
    assert _private(folder) == []
    # a folder as an older smmpi left it, and one that smmpi did not make
    for path in [
        home,
        home / "local-jobs",
        folder,
        *folder.iterdir(),
        *(folder / "logs").iterdir(),
    ]:
        path.chmod(0o755 if path.is_dir() else 0o644)
    other = home / "local-jobs" / "not-smmpis"
    other.mkdir(mode=0o755)
    (other / "notes.txt").write_text("mine\n")
    assert _listed(env) == {"mine": "Completed"}
    assert [oct(_mode(p)) for p in (home, home / "local-jobs")] == ["0o700", "0o700"]
    assert _private(folder) == []
    assert _mode(other) == 0o755 and _mode(other / "notes.txt") == 0o644


def test_the_config_infra_deploy_writes_is_private(
    env: dict[str, str], tmp_path: Path, moto_server: MotoServer
) -> None:
    aws = {k: v for k, v in env.items() if k != "SMMPI_CONFIG"}
    aws.update(moto_server.aws_env(), XDG_CONFIG_HOME=str(tmp_path / "xdg"))
    done = smmpi(["infra", "deploy"], aws)
    assert done.returncode == 0, done.stderr
    saved = tmp_path / "xdg" / "smmpi" / "config.json"
    assert json.loads(saved.read_text())["bucket"]
    assert (oct(_mode(saved.parent)), oct(_mode(saved))) == ("0o700", "0o600")
