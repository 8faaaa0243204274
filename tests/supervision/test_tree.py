"""The process tree of a local run: the reaper and the ranks it records, reached, dumped and
ended by :class:`Supervisor`; SIGTERM ending a run as Ctrl-C does."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from smmpi.supervision.tree import Supervisor, sigterm_interrupts

#: A rank as the rank hook arms it: its pid recorded, its stack dumped on SIGUSR1.
RANK = (
    "import faulthandler, os, signal, sys, time\n"
    "folder, rank = sys.argv[1], sys.argv[2]\n"
    "dump = open(os.path.join(folder, f'rank-{rank}.stack'), 'w')\n"
    "faulthandler.register(signal.SIGUSR1, file=dump, all_threads=True, chain=False)\n"
    "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"  # only SIGKILL ends it
    "def wait_here():\n"
    "    while True:\n"
    "        time.sleep(0.05)\n"
    "with open(os.path.join(folder, f'rank-{rank}.pid'), 'w') as f:\n"
    "    f.write(str(os.getpid()))\n"
    "wait_here()\n"
)
#: A reaper that ignores SIGTERM, as one stuck ending its run would.
STUBBORN = "import signal, time\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\ntime.sleep(300)\n"


def _ranks(folder: Path, count: int) -> list[subprocess.Popen[bytes]]:
    """Ranks in sessions of their own (as a rank may leave mpirun's group), once recorded."""
    procs = [
        subprocess.Popen([sys.executable, "-c", RANK, str(folder), str(r)], start_new_session=True)
        for r in range(count)
    ]
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        pids = [folder / f"rank-{r}.pid" for r in range(count)]
        if all(p.exists() and p.read_text() for p in pids):
            return procs
        time.sleep(0.05)
    raise AssertionError("the ranks did not start")


@contextlib.contextmanager
def _ended(*procs: subprocess.Popen[bytes]) -> Iterator[None]:
    """Every process of the test is killed and reaped at its end, however it ends."""
    try:
        yield
    finally:
        for proc in procs:
            with contextlib.suppress(OSError):
                proc.kill()
            proc.wait()


def _reaper(code: str = "import time; time.sleep(300)") -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-c", code], start_new_session=True)


def test_the_reapers_end_is_seen_as_it_happens_and_after(tmp_path: Path) -> None:
    reaper = _reaper()
    with _ended(reaper):
        supervisor = Supervisor(reaper, tmp_path)
        assert not supervisor.ended_within(0.2)
        reaper.kill()
        assert supervisor.ended_within(60)
        assert reaper.returncode == -signal.SIGKILL
        assert supervisor.ended_within(0)  # reaped already: no pidfd to open


def test_rank_pids_are_read_and_translated_out_of_a_pid_namespace(tmp_path: Path) -> None:
    (tmp_path / "rank-0.pid").write_text("7\n")
    (tmp_path / "rank-1.pid").write_text("8")
    (tmp_path / "rank-2.pid").write_text("")  # being written
    (tmp_path / "rank-x.pid").write_text("9")
    reaper = _reaper()
    with _ended(reaper):
        assert Supervisor(reaper, tmp_path).rank_pids() == {0: 7, 1: 8}
        seen: list[int] = []

        def translate(pid: int) -> dict[int, int]:
            seen.append(pid)
            return {7: 4007}  # rank 1's process has ended: not in the namespace

        assert Supervisor(reaper, tmp_path, translate).rank_pids() == {0: 4007}
        assert seen == [reaper.pid]


def test_every_ranks_stack_is_dumped(tmp_path: Path) -> None:
    reaper = _reaper()
    ranks = _ranks(tmp_path, 2)
    with _ended(reaper, *ranks):
        stacks = Supervisor(reaper, tmp_path).dump_stacks(wait=60)
        assert set(stacks) == {0, 1}
        for text in stacks.values():
            assert "in wait_here" in text and "Current thread" in text


def test_kill_all_forces_a_stuck_reaper_and_the_ranks_that_left_its_group(
    tmp_path: Path,
) -> None:
    reaper = _reaper(STUBBORN)
    ranks = _ranks(tmp_path, 2)
    with _ended(reaper, *ranks):
        Supervisor(reaper, tmp_path).kill_all(grace=0.5)
        assert reaper.returncode == -signal.SIGKILL
        for rank in ranks:
            assert rank.wait(timeout=60) == -signal.SIGKILL


def test_sigterm_is_a_keyboard_interrupt_only_while_the_run_is_watched() -> None:
    before = signal.getsignal(signal.SIGTERM)
    with pytest.raises(KeyboardInterrupt), sigterm_interrupts():
        os.kill(os.getpid(), signal.SIGTERM)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:  # the handler runs between two bytecodes
            time.sleep(0.01)
    assert signal.getsignal(signal.SIGTERM) == before


def test_sigterm_is_left_alone_outside_the_main_thread() -> None:
    before = signal.getsignal(signal.SIGTERM)
    inside: list[object] = []

    def watch() -> None:
        with sigterm_interrupts():
            inside.append(signal.getsignal(signal.SIGTERM))

    thread = threading.Thread(target=watch)
    thread.start()
    thread.join(timeout=60)
    assert inside == [before]
