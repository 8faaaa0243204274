"""Supervising one local ``mpirun``: its process tree, the timeout, every rank's stack.

Supervision is what makes a local run cheaper than a SageMaker one:
- mpirun runs under the run's reaper (``watch.py run``), which owns every
  process the run starts, dies with smmpi even on SIGKILL, and then ends them
  all; each rank runs under ``watch.py rank``, which records how it ended and
  kills what it left running;
- the rank that failed first is named (rank, emulated host, and exception,
  exit code or signal) from those records within seconds;
- ``timeout`` prints every rank's Python stack (``faulthandler`` on SIGUSR1,
  armed by the rank hook the ranks load), then kills everything;
- Ctrl-C or SIGTERM kills everything; no process outlives the run.
"""

from __future__ import annotations

import contextlib
import math
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from smmpi.errors import BadInput
from smmpi.mpi_output import FailureScan, printable
from smmpi.runners.base import Progress, silent
from smmpi.runners.local.exits import Blame, Ends
from smmpi.runners.local.hostfiles import reaper_command, stdin_is_empty
from smmpi.runners.local.isolation import prepare
from smmpi.runners.local.layout import (
    credentials_note,
    forwarding_note,
    stack_dir,
)
from smmpi.runners.local.mpi import preflight
from smmpi.runners.local.output import Output, report_stacks
from smmpi.toolkit.hosts import host_of_rank
from smmpi.toolkit.shape import JobShape

EXIT_OK, EXIT_FAILED, EXIT_TIMEOUT, EXIT_INTERRUPTED = 0, 1, 124, 130


@dataclass
class RunResult:
    exit_code: int
    status: str  # Completed | Failed | TimedOut | Interrupted
    seconds: float
    run_dir: Path
    world_size: int
    failed_rank: int | None = None
    failed_host: str | None = None
    reason: str | None = None
    stacks: dict[int, str] = field(default_factory=dict)

    @property
    def failure_line(self) -> str | None:
        if self.failed_rank is None:
            return self.reason
        return f"rank {self.failed_rank} ({self.failed_host}) failed: {self.reason}"


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


def _start(
    argv: list[str],
    env: dict[str, str],
    run_dir: Path,
    ranks: int,
    stdin_closed: bool,
    remove: bool,
    pass_fds: tuple[int, ...] = (),
) -> subprocess.Popen[bytes]:
    """mpirun under the run's reaper, in its own session; smmpi's stdin if rank 0 reads it."""
    command = reaper_command(argv, stack_dir(run_dir), ranks, run_dir if remove else None)
    return subprocess.Popen(
        command,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL if stdin_closed else None,
        env=env,
        pass_fds=pass_fds,
        start_new_session=True,
    )


def _pumps(
    proc: subprocess.Popen[bytes], output: Output, out: IO[str], err: IO[str]
) -> list[threading.Thread]:
    assert proc.stdout is not None and proc.stderr is not None
    pumps = [
        # mpirun's own lines on stdout (the container line's --display-map) go with its others
        threading.Thread(target=output.pump, args=(proc.stdout, out, err), daemon=True),
        threading.Thread(target=output.pump, args=(proc.stderr, err), daemon=True),
    ]
    for t in pumps:
        t.start()
    return pumps


def _wait(supervisor: Supervisor, result: RunResult, timeout: float | None, start: float) -> None:
    """Wait for mpirun; at the deadline dump every rank's stack and kill everything."""
    deadline = start + timeout if timeout else None
    try:  # blocking: Ctrl-C and SIGTERM still interrupt it (KeyboardInterrupt)
        supervisor.proc.wait(None if deadline is None else max(0.0, deadline - time.monotonic()))
    except subprocess.TimeoutExpired:
        result.stacks = supervisor.dump_stacks()
        result.exit_code, result.status = EXIT_TIMEOUT, "TimedOut"
        result.reason = f"timed out after {timeout:g} s"
        supervisor.kill_all()


def _blame(result: RunResult, ends: Ends, scan: FailureScan, shape: JobShape, code: int) -> None:
    """A run mpirun ended non-zero: name the rank that failed first, its host and why.

    From the ranks' own records first (:mod:`.exits`); from Open MPI's output
    when a record is missing.
    """
    result.exit_code, result.status = EXIT_FAILED, "Failed"
    blame = ends.blame(scan.aborted_rank, scan.abort_code)
    first = scan.failed_rank()
    if blame is None and first is not None:
        blame = Blame(first, scan.reason(first))
    if blame is None:
        result.reason = f"mpirun exited with code {code}"
        return
    reason = blame.reason
    if blame.rank not in ends.exceptions and blame.rank in scan.exceptions:
        reason = scan.exceptions[blame.rank]  # the program replaced sys.excepthook
    result.failed_rank = blame.rank
    result.failed_host = host_of_rank(blame.rank, shape.ppn, shape.instances)
    result.reason = printable(reason)


def _conclude(
    result: RunResult, supervisor: Supervisor, output: Output, shape: JobShape, say: Progress
) -> None:
    """Say which stray processes were killed, and who failed and why."""
    ends = Ends.read(supervisor.stack_dir)
    for line in ends.stray_lines(lambda r: host_of_rank(r, shape.ppn, shape.instances)):
        say(f"smmpi: {printable(line)}")
    code = supervisor.proc.returncode
    if result.exit_code == EXIT_OK and code != 0:
        _blame(result, ends, output.scan, shape, code)


def check_timeout(timeout: float | None) -> None:
    if timeout is not None and not (math.isfinite(timeout) and timeout > 0):
        raise BadInput("timeout", timeout, "a finite number of seconds > 0")


def execute(
    shape: JobShape,
    run_dir: Path,
    *,
    timeout: float | None = None,
    log_dir: Path | None = None,
    out: IO[str] | None = None,
    err: IO[str] | None = None,
    python: str = sys.executable,
    extra_env: dict[str, str] | None = None,
    extra_paths: Sequence[str] = (),
    progress: Progress = silent,
    stdin_closed: bool = True,
    remove_on_death: bool = False,
    mode: str = "processes",
) -> RunResult:
    """Run the prepared job under supervision and say how it ended.

    The ranks' output goes to ``out`` and ``err`` (this process's by default);
    the stacks of a run that timed out go to ``progress``. ``stdin_closed``:
    ranks read end-of-file, as in SageMaker; otherwise rank 0 reads this
    process's stdin, as under mpirun. ``remove_on_death``: the run dir is
    removed if this process is killed (a throwaway run's host trees).
    """
    check_timeout(timeout)
    launcher = preflight(python)
    stdin_closed = stdin_closed or stdin_is_empty()
    for note in (forwarding_note(shape), credentials_note(extra_env or {})):
        if note:
            progress(note)
    how = prepare(mode, shape, run_dir, launcher, python, extra_env, extra_paths, stdin_closed)
    output = Output(shape.world_size, log_dir, shape.ppn)
    start = time.monotonic()
    try:
        proc = _start(
            how.argv,
            how.env,
            run_dir,
            shape.world_size,
            stdin_closed,
            remove_on_death,
            how.pass_fds,
        )
    finally:
        how.close()
    supervisor = Supervisor(proc, stack_dir(run_dir), how.translate)
    pumps = _pumps(proc, output, out or sys.stdout, err or sys.stderr)
    result = RunResult(EXIT_OK, "Completed", 0.0, run_dir, shape.world_size)
    try:
        with sigterm_interrupts():
            try:
                _wait(supervisor, result, timeout, start)
            except KeyboardInterrupt:
                result.exit_code, result.status = EXIT_INTERRUPTED, "Interrupted"
                result.reason = "interrupted; every rank was stopped"
                supervisor.kill_all()
    finally:
        supervisor.reap_ranks()
        for t in pumps:
            t.join(timeout=5)
        output.close()
    result.seconds = time.monotonic() - start
    _conclude(result, supervisor, output, shape, progress)
    if stdin_closed and (result.reason or "").startswith("EOFError"):
        progress(
            f"smmpi: rank {result.failed_rank} read its input: stdin is closed in SageMaker "
            "training jobs, and so here (pass input as a file, a channel or arguments)"
        )
    if result.stacks or result.status == "TimedOut":
        report_stacks(result.reason or "", result.stacks, shape, progress)
    return result
