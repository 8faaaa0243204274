"""Supervising one local ``mpirun``: its process tree, the timeout, every rank's stack.

Supervision is what makes a local run cheaper than a SageMaker one:
- mpirun runs under the run's reaper (``watch.py run``), which owns every
  process the run starts, dies with smmpi even on SIGKILL, and then ends them
  all; each rank runs under ``watch.py rank``, which records how it ended and
  kills what it left running;
- the rank that failed first is named (rank, emulated host, and exception,
  MPI_Abort, exit code or signal) from those records within seconds
  (:mod:`smmpi.supervision.verdict`); a run that cannot go on is stopped, though mpirun hangs;
- ``timeout`` prints every rank's Python stack (``faulthandler`` on SIGUSR1,
  armed by the rank hook the ranks load), then kills everything;
- Ctrl-C or SIGTERM kills everything; no process outlives the run.
"""

from __future__ import annotations

import dataclasses
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import IO

from smmpi.causes import say
from smmpi.mpi_output import printable
from smmpi.platform.layout import (
    credentials_note,
    forwarding_note,
    stack_dir,
)
from smmpi.runners.base import Progress, silent
from smmpi.runners.local.containers import Container
from smmpi.runners.local.hostfiles import reaper_command, stdin_is_empty
from smmpi.runners.local.isolation import Launch, prepare
from smmpi.runners.local.mpi import Launcher
from smmpi.runners.local.sessions import mpirun_env, sessions_of
from smmpi.supervision.cpu_share import group
from smmpi.supervision.exits import Ends
from smmpi.supervision.hangs import hang_pitfall
from smmpi.supervision.output import Output, report_stacks
from smmpi.supervision.rank_records import read_ends
from smmpi.supervision.result import (
    EXIT_FAILED,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_TIMEOUT,
    Run,
    RunResult,
)
from smmpi.supervision.timeouts import lost_network, name_lost_network, stack_notes, timed_out
from smmpi.supervision.tree import Supervisor, sigterm_interrupts
from smmpi.supervision.verdict import blame, failed
from smmpi.supervision.world import check_started, check_world, too_many_ranks
from smmpi.toolkit.failure import error_message
from smmpi.toolkit.shape import JobShape

__all__ = [
    "EXIT_FAILED",
    "EXIT_INTERRUPTED",
    "EXIT_OK",
    "EXIT_TIMEOUT",
    "RunResult",
    "Supervisor",
    "execute",
    "sigterm_interrupts",
]

LINGER = 3.0  # seconds mpirun may take to end once the run cannot go on, before it is stopped
POLL = 0.5  # seconds between looks at the run's records while mpirun runs


Popen = subprocess.Popen[bytes]


def _start(how: Launch, run_dir: Path, ranks: int, stdin_closed: bool, remove: bool) -> Popen:
    """mpirun under the run's reaper, in its own session; smmpi's stdin if rank 0 reads it.
    The descriptors it inherits are closed here once it has them."""
    removed = run_dir if remove else None
    command = reaper_command(how.argv, stack_dir(run_dir), ranks, removed, cpu_group=group())
    try:
        return subprocess.Popen(
            command,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            stdin=subprocess.DEVNULL if stdin_closed else None,
            env=how.env,
            pass_fds=how.pass_fds,
            start_new_session=True,
        )
    finally:
        how.close()


def _pumps(
    proc: subprocess.Popen[bytes], output: Output, out: IO[str], err: IO[str]
) -> list[threading.Thread]:
    assert proc.stdout is not None and proc.stderr is not None
    pumps = [
        # mpirun's own lines on stdout (the container line's --display-map) go with its others
        threading.Thread(target=output.pump, args=(proc.stdout, out, err, "stdout"), daemon=True),
        threading.Thread(target=output.pump, args=(proc.stderr, err, None, "stderr"), daemon=True),
    ]
    for t in pumps:
        t.start()
    return pumps


def _stuck(supervisor: Supervisor, output: Output, world_size: int) -> str | None:
    """Why the run cannot go on though mpirun has not ended (None: it may go on).

    A failure Open MPI's output shows the run cannot survive, or every rank has
    ended and one failed: mpirun then ends in a moment, unless it hangs (as it
    does when ranks fail in ``MPI_Init``).
    """
    pitfall = output.scan.stops
    if pitfall is not None:
        return pitfall.key
    if sum(1 for _ in supervisor.stack_dir.glob("rank-*.exit")) < world_size:
        return None  # (the records are read only once every rank has one)
    if any(end.failed for end in read_ends(supervisor.stack_dir).values()):
        return "every rank has ended"
    return None


def _wait(
    supervisor: Supervisor,
    result: RunResult,
    timeout: float | None,
    start: float,
    output: Output,
    run: Run,
) -> None:
    """Wait for mpirun; stop a run that cannot go on; at the deadline dump every rank's
    stack, say where each rank was, and kill everything."""
    deadline = start + timeout if timeout else None
    stuck_since: float | None = None
    while True:  # blocking waits: Ctrl-C and SIGTERM still interrupt them (KeyboardInterrupt)
        now = time.monotonic()
        step = POLL if deadline is None else max(0.0, min(POLL, deadline - now))
        if supervisor.ended_within(step):
            return
        now = time.monotonic()
        if deadline is not None and now >= deadline:
            break
        if _stuck(supervisor, output, run.shape.world_size) is None:
            stuck_since = None
        elif stuck_since is None:
            stuck_since = now
        elif now - stuck_since >= LINGER:
            supervisor.kill_all()
            return  # the verdict reads the records; mpirun's code is not the run's
    result.stacks = supervisor.dump_stacks()
    pids = supervisor.rank_pids()
    result.exit_code, result.status = EXIT_TIMEOUT, "TimedOut"
    result.reason = say("timeout", seconds=timeout)
    lost = lost_network(pids, run)
    ends = Ends.read(supervisor.stack_dir)
    result.notes = stack_notes(ends, run)
    timed_out(result, ends, run, lost)
    hang = hang_pitfall(result.stacks, run)  # a known hang, named from where the ranks were
    result.reason = f"{result.reason}; {hang}" if hang else result.reason
    supervisor.kill_all()


def _conclude(
    result: RunResult,
    supervisor: Supervisor,
    output: Output,
    run: Run,
    say: Progress,
    own_line: bool = True,
    whole_world: bool = True,
) -> None:
    """Say which stray processes were killed, and who failed and why. ``own_line``: smmpi's
    line started the ranks, each under its watcher, so a rank without a record never ran (the
    toolkit's or a driver's own start may run ranks that are no Python, such as `train.sh`).
    ``whole_world``: a world other than N x n fails the run (else the caller speaks of it)."""
    ends = Ends.read(supervisor.stack_dir)
    for line in ends.stray_lines(run.host):
        say(f"smmpi: {printable(line)}")
    code = supervisor.proc.returncode
    result.returncode = code
    result.error_message = error_message(output.captures.values())
    if result.exit_code == EXIT_OK and (failed(ends, code) or output.scan.stops):
        blame(result, ends, output.scan, dataclasses.replace(run, code=code))
        name_lost_network(result, run)
    if own_line:
        check_started(result, ends, run, code)
    if whole_world:
        check_world(result, run)


def execute(
    shape: JobShape,
    run_dir: Path,
    launcher: Launcher,
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
    container: Container,
    spent: float = 0.0,
    whole_world: bool = True,
) -> RunResult:
    """Run the prepared job under supervision and say how it ended.

    The ranks' output goes to ``out`` and ``err`` (this process's by default);
    the stacks of a run that timed out go to ``progress``. ``stdin_closed``:
    ranks read end-of-file, as in SageMaker; otherwise rank 0 reads this
    process's stdin, as under mpirun. ``remove_on_death``: the run dir is
    removed if this process is killed (a throwaway run's host trees). ``container``: what
    every isolated instance starts with (:mod:`.containers`).
    ``spent``: seconds of the run before this (its installs), counted in ``timeout``.
    Not ``whole_world``: a driver's line SageMaker runs as it is."""
    stdin_closed = stdin_closed or stdin_is_empty()
    _say_notes(shape, extra_env or {}, container, progress)
    refused = too_many_ranks(shape, run_dir)
    if refused is not None:
        return refused
    how = prepare(
        mode, shape, run_dir, launcher, container, python, extra_env, extra_paths, stdin_closed
    )
    mpirun_env(how.env, shape, run_dir, mode)
    output = Output(shape.world_size, log_dir, shape.ppn, shape.image, shape.toolkit_tags)
    start, started = time.monotonic() - spent, time.time()
    proc = _start(how, run_dir, shape.world_size, stdin_closed, remove_on_death)
    supervisor = Supervisor(proc, stack_dir(run_dir), how.translate)
    sessions = sessions_of(how.env, shape, run_dir, mode)
    run = Run(shape, mode, supervisor.stack_dir, run_dir, started, None, sessions)
    pumps = _pumps(proc, output, out or sys.stdout, err or sys.stderr)
    result = _supervise(supervisor, pumps, output, run, timeout, start)
    _conclude(result, supervisor, output, run, progress, container.own_line, whole_world)
    _say_outcome(result, shape, stdin_closed, progress)
    return result


def _say_notes(
    shape: JobShape, extra_env: dict[str, str], container: Container, say: Progress
) -> None:
    forwarding = forwarding_note(shape) if container.forwards else None
    for note in (forwarding, credentials_note(extra_env)):
        if note:
            say(note)


def _supervise(
    supervisor: Supervisor,
    pumps: list[threading.Thread],
    output: Output,
    run: Run,
    timeout: float | None,
    start: float,
) -> RunResult:
    """Wait for the run to end (or time out, or be interrupted), then reap and drain it."""
    result = RunResult(EXIT_OK, "Completed", 0.0, run.run_dir, run.shape.world_size)
    try:
        with sigterm_interrupts():
            try:
                _wait(supervisor, result, timeout, start, output, run)
            except KeyboardInterrupt:
                result.exit_code, result.status = EXIT_INTERRUPTED, "Interrupted"
                result.reason = say("interrupted")
                supervisor.kill_all()
    finally:
        supervisor.reap_ranks()
        for t in pumps:
            t.join(timeout=5)
        output.close()
    result.seconds = time.monotonic() - start
    return result


def _say_outcome(result: RunResult, shape: JobShape, stdin_closed: bool, say: Progress) -> None:
    if stdin_closed and (result.reason or "").startswith("EOFError"):
        say(
            f"smmpi: rank {result.failed_rank} read its input: stdin is closed in SageMaker "
            "training jobs, and so here (pass input as a file, a channel or arguments)"
        )
    if result.stacks or result.status == "TimedOut":
        report_stacks(result.reason or "", result.stacks, shape, say, result.notes)
