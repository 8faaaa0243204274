"""Fault injection: the real `smmpi` CLI runs small faulty programs; nothing may outlive a run.

Every test's environment carries a unique ``SMMPI_FAULT_MARK`` and a private ``TMPDIR``; the
``fault_env`` fixture fails the test if, afterwards, any process carrying the mark (mpirun, a rank,
a rank's child in its own session) is still alive (and then kills it), a run folder is left in the
``TMPDIR``, a process of this test session holds a namespace that none held before (each session
has a cgroup of its own, see footprint.py), or the machine has a network link or mount that it did
not have before (other sessions' pytest folders aside).
"""

from __future__ import annotations

import contextlib
import os
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from tests.instances.hosts.footprint import (
    Machine,
    namespaces_in_use,
    new_namespaces,
    who_holds,
)

MARK = "SMMPI_FAULT_MARK"


def marked(mark: str) -> list[psutil.Process]:
    """Live processes whose environment carries ``mark`` (zombies excluded)."""
    found = []
    for proc in psutil.process_iter():
        with contextlib.suppress(psutil.Error):
            if proc.pid == os.getpid() or proc.status() == psutil.STATUS_ZOMBIE:
                continue
            if proc.environ().get(MARK) == mark:
                found.append(proc)
    return found


def leftovers(mark: str, wait: float = 10.0) -> list[str]:
    """Processes of the run still alive after ``wait`` seconds (a deadline, not a timing check)."""
    deadline = time.monotonic() + wait
    procs = marked(mark)
    while procs and time.monotonic() < deadline:
        time.sleep(0.2)
        procs = marked(mark)
    described = []
    for proc in procs:
        with contextlib.suppress(psutil.Error):
            described.append(f"{proc.pid} {' '.join(proc.cmdline())}")
    return described


def kill_marked(mark: str) -> None:
    for proc in marked(mark):
        with contextlib.suppress(psutil.Error):
            proc.kill()


@pytest.fixture
def fault_env(
    env: dict[str, str], tmp_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[dict[str, str]]:
    """The clean CLI environment, a private TMPDIR and local-jobs folder, and a process mark."""
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    mark = uuid.uuid4().hex
    env.update(
        TMPDIR=str(tmp),
        SMMPI_LOCAL_JOBS=str(tmp_path / "local-jobs"),
        **{MARK: mark},
    )
    own = tmp_path_factory.getbasetemp()
    machine, namespaces = Machine.now(own), namespaces_in_use()
    try:
        yield env
        left = leftovers(mark)
        assert not left, f"processes outlived the run: {left}"
        assert not list(tmp.glob("smmpi-run-*")), "a run folder outlived the run"
        new = new_namespaces(namespaces)
        assert not new, f"namespaces outlived the run: {who_holds(new)}"
        assert Machine.now(own) == machine, "links, mounts or /opt changed"
    finally:
        kill_marked(mark)
