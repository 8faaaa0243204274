"""A job's fork server (smmpi.serve.forkserver) and serve's side of it (smmpi.serve.forked)."""

from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from smmpi.serve.forked import ForkServer
from tests.helpers import base_env


def _parent(pid: int) -> int:
    with open(f"/proc/{pid}/status") as status:
        return int(next(line.split()[1] for line in status if line.startswith("PPid:")))


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/status") as status:
            return not any(line.startswith("State:\tZ") for line in status)
    except FileNotFoundError:
        return False


def _forkserver_of(pid: str, work: Path) -> bool:
    try:
        words = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return False
    return b"smmpi.serve.forkserver" in words and str(work).encode() in words


@pytest.fixture
def server(tmp_path: Path) -> Iterator[ForkServer]:
    started = ForkServer(tmp_path, base_env(tmp_path))
    yield started
    started.close()


def test_one_server_forks_each_job_its_own_worker_with_its_own_output(
    server: ForkServer, tmp_path: Path
) -> None:
    workers = []
    for k in range(2):  # a spec that is not there: the worker ends at once, saying why
        worker = server.fork(tmp_path / f"missing-{k}.json", {"SMMPI_TEST_MARK": str(k)})
        assert _parent(worker.pid) == server.pid
        assert worker.wait(timeout=60) == 1
        said = worker.stderr.read().decode()
        assert "FileNotFoundError" in said and f"missing-{k}.json" in said, said
        assert worker.stdout.read() == b""
        workers.append(worker.pid)
    assert workers[0] != workers[1]
    assert server.proc.poll() is None  # it waits for the next job


def test_a_worker_is_stopped_by_its_signal_and_ended_with_its_server(
    server: ForkServer, tmp_path: Path
) -> None:
    fifo = tmp_path / "spec.json"
    os.mkfifo(fifo)  # the worker waits for its spec until a writer comes: none does
    worker = server.fork(fifo, {})
    with pytest.raises(subprocess.TimeoutExpired):
        worker.wait(timeout=0.5)
    worker.send_signal(signal.SIGTERM)  # serve's stop: Ctrl-C in the worker
    assert worker.wait(timeout=60) == 1
    assert "KeyboardInterrupt" in worker.stderr.read().decode()
    waiting = server.fork(fifo, {})
    assert _alive(waiting.pid)
    server.close()  # serve ends it (a pool's end, serve's stop or death): its worker goes too
    assert server.proc.returncode == 0
    assert not _alive(waiting.pid)
    assert waiting.poll() == -signal.SIGKILL


def test_a_server_that_cannot_start_says_why(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    shadow = tmp_path / "shadow" / "smmpi"
    shadow.mkdir(parents=True)
    (shadow / "__init__.py").write_text("")  # an smmpi without serve: no fork server
    monkeypatch.chdir(shadow.parent)  # `python -m` looks here first
    env = {**base_env(tmp_path), "PYTHONPATH": str(shadow.parent)}
    with pytest.raises(OSError, match=r"could not be prepared: .*No module named 'smmpi\.serve'"):
        ForkServer(tmp_path, env)
    assert not [
        pid for pid in os.listdir("/proc") if pid.isdigit() and _forkserver_of(pid, tmp_path)
    ]
