"""The process tree of one local run: mpirun under its reaper, and every rank in it.

:class:`Supervisor` reaches every rank (by the pids the ranks record, translated
from an isolated run's PID namespace), dumps their stacks, and ends the whole
tree; :func:`sigterm_interrupts` makes SIGTERM end a run as Ctrl-C does.
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as f:
            return f.read().split(") ", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        try:
            os.kill(pid, 0)
        except OSError:
            return False
        return True


class Supervisor:
    """Owns the mpirun process tree and makes sure none of it outlives the run."""

    def __init__(
        self,
        proc: subprocess.Popen[bytes],
        stack_dir: Path,
        translate: Callable[[int], dict[int, int]] | None = None,
    ) -> None:
        self.proc, self.stack_dir, self.translate = proc, stack_dir, translate

    def ended_within(self, seconds: float) -> bool:
        """Whether the reaper ends within ``seconds``, seen the moment it does
        (``Popen.wait`` with a timeout looks in sleeps of up to 50 ms)."""
        try:
            fd = os.pidfd_open(self.proc.pid)
        except OSError:  # already reaped, or no pidfd here
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(seconds)
            return self.proc.returncode is not None
        try:
            select.select([fd], [], [], seconds)
        finally:
            os.close(fd)
        return self.proc.poll() is not None

    def rank_pids(self) -> dict[int, int]:
        pids: dict[int, int] = {}
        for f in self.stack_dir.glob("rank-*.pid"):
            with contextlib.suppress(ValueError, OSError):
                pids[int(f.stem.split("-", 1)[1])] = int(f.read_text().strip())
        if self.translate is not None:  # ranks recorded their pids inside a PID namespace
            here = self.translate(self.proc.pid)
            return {rank: here[pid] for rank, pid in pids.items() if pid in here}
        return pids

    def dump_stacks(self, wait: float = 2.0) -> dict[int, str]:
        pids = self.rank_pids()
        for pid in pids.values():
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGUSR1)

        def read() -> dict[int, str]:
            files = {r: self.stack_dir / f"rank-{r}.stack" for r in pids}
            return {r: f.read_text(errors="replace") for r, f in files.items() if f.exists()}

        deadline = time.monotonic() + wait
        stacks = read()
        while time.monotonic() < deadline and not all(stacks.get(r) for r in pids):
            time.sleep(0.05)
            stacks = read()
        time.sleep(0.1)  # let the last frames of a dump in progress land
        return read()

    def kill_all(self, grace: float = 10.0) -> None:
        """Ask the reaper to end the run (mpirun, ranks, their children); force it if it must."""
        with contextlib.suppress(OSError):
            self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(OSError):
                os.killpg(self.proc.pid, signal.SIGKILL)
        self.reap_ranks()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=grace)

    def reap_ranks(self, grace: float = 2.0) -> None:
        """Kill any rank that is still alive (a rank may have left mpirun's process group)."""
        pids = [pid for pid in self.rank_pids().values() if _alive(pid)]
        deadline = time.monotonic() + grace
        while pids and time.monotonic() < deadline:
            time.sleep(0.05)
            pids = [pid for pid in pids if _alive(pid)]
        for pid in pids:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)


@contextlib.contextmanager
def sigterm_interrupts() -> Iterator[None]:
    """SIGTERM ends the run as Ctrl-C does (in the main thread; elsewhere it cannot be caught)."""

    def on_term(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.getsignal(signal.SIGTERM)
    signal.signal(signal.SIGTERM, on_term)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
