"""The local runner: a request run here as N emulated hosts, or a bare program (``smmpi run``)."""

from __future__ import annotations

import os
import shutil
import signal
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from smmpi.archives import pack
from smmpi.catalog import Program, missing_module_hint
from smmpi.instances.machine import start_notes
from smmpi.ops.signals import STOPS
from smmpi.platform.layout import prepare_hosts
from smmpi.platform.run_metrics import RunMetrics, final_line
from smmpi.runners.base import RequestRunner as Runner
from smmpi.runners.base import RunOptions
from smmpi.runners.local import exact, isolation, modes
from smmpi.runners.local.bounds import check_bounds
from smmpi.runners.local.job import run_request
from smmpi.runners.local.mpi import preflight
from smmpi.runners.local.records import LocalJob
from smmpi.runners.local.supervise import (
    EXIT_INTERRUPTED,
    EXIT_OK,
    RunResult,
    execute,
    sigterm_interrupts,
)
from smmpi.supervision.room import check_room, size_of
from smmpi.toolkit.environment import hyperparameters_json
from smmpi.toolkit.shape import JobShape

if TYPE_CHECKING:
    from smmpi.aws.types import Request


class LocalRunner:
    """:class:`~smmpi.runners.base.Runner` that plays SageMaker's part on this machine."""

    def run(self, request: Request, source: bytes, options: RunOptions) -> LocalJob:
        return run_request(request, source, options)


def run_program(program: Program, shape: JobShape, options: RunOptions) -> RunResult:
    """``smmpi run``: ``program`` laid out on every host of ``shape``, in a throwaway run dir.

    The run dir is kept only with ``options.keep``; ``options.log_dir`` gets
    one log file per rank. Rank 0 reads this process's stdin, as under mpirun.
    """
    say = options.progress
    mode, why_not_hosts = modes.choose(options.isolation, shape.instances)
    if options.exact:
        exact.check(options.isolation, shape.instances, shape.image)
    preflight()  # fail on a missing MPI before creating anything
    check_bounds(shape, Path(tempfile.gettempdir()) / "smmpi-run-xxxxxxxx")
    code_bytes = size_of(path for path, _ in program.files())
    check_room(Path(tempfile.gettempdir()), shape, mode, code_bytes)
    if options.exact:
        exact.prepare(shape.image, say)  # the toolkit's environment, built once
    metrics = RunMetrics(options.metrics or (), None)
    with sigterm_interrupts():
        # Ctrl-C or SIGTERM waits until the run dir is one that the finally removes
        mask = signal.pthread_sigmask(signal.SIG_BLOCK, STOPS)
        run_dir = Path(tempfile.mkdtemp(prefix="smmpi-run-"))
        try:
            signal.pthread_sigmask(signal.SIG_SETMASK, mask)
            result = _run_in(program, shape, run_dir, options, mode, why_not_hosts, metrics)
        except KeyboardInterrupt:  # before the ranks started, or between two of its steps
            result = _interrupted(shape, run_dir)
        finally:
            if not options.keep:
                shutil.rmtree(run_dir, ignore_errors=True)
    if result.exit_code == EXIT_OK:
        say(
            f"smmpi: {shape.world_size} ranks on {shape.instances} emulated host(s) "
            f"completed in {result.seconds:.1f} s"
        )
    else:
        hint = missing_module_hint(program, result.failure_line or "")
        say(f"smmpi: {result.failure_line}" + (f" ({hint})" if hint else ""))
    if options.keep:
        say(f"smmpi: host trees kept under {run_dir}")
    final = metrics.final()
    if final:
        say(f"smmpi: metrics {final_line(final)}")
    return result


def _run_in(
    program: Program,
    shape: JobShape,
    run_dir: Path,
    options: RunOptions,
    mode: str,
    why_not_hosts: str | None,
    metrics: RunMetrics,
) -> RunResult:
    try:
        _lay_out(program, shape, run_dir, options.exact)
    except KeyboardInterrupt:  # Ctrl-C or SIGTERM while the host trees were laid out
        return _interrupted(shape, run_dir)
    say = options.progress
    say(
        f"smmpi: {program.name} on {shape.instances} emulated host(s) x "
        f"{shape.ppn} process(es) = {shape.world_size} ranks ({isolation.label(mode)})"
    )
    if mode == "processes":
        say(isolation.differs(why_not_hosts))
    if options.exact:
        say(exact.first_line(shape.image))
    for line in start_notes(shape, os.environ):
        say(line)
    with isolation.watching_opt_ml(mode, say):
        return execute(
            shape,
            run_dir,
            timeout=options.timeout,
            log_dir=Path(options.log_dir) if options.log_dir else None,
            out=metrics.stream(options.out or sys.stdout),
            err=metrics.stream(options.err or sys.stderr),
            extra_env=dict(options.env),
            progress=say,
            stdin_closed=False,
            remove_on_death=not options.keep,
            mode=mode,
            exact=options.exact,
        )


def _interrupted(shape: JobShape, run_dir: Path) -> RunResult:
    result = RunResult(EXIT_INTERRUPTED, "Interrupted", 0.0, run_dir, shape.world_size)
    result.reason = "interrupted before the ranks started"
    return result


def _lay_out(program: Program, shape: JobShape, run_dir: Path, exact_mode: bool) -> None:
    """The code dir of every host; in exact mode with the toolkit, ``sourcedir.tar.gz`` for
    the toolkit to unpack itself into an empty ``/opt/ml/code``, as on SageMaker."""
    if not (exact_mode and exact.uses_toolkit(shape.image)):
        prepare_hosts(shape, run_dir, lambda dirs: program.copy_to(dirs.code))
        return
    source = pack(program.files(), "source_dir" if program.whole_dir else "ENTRY")
    hps = exact.stage_code(run_dir, source, hyperparameters_json(shape))
    prepare_hosts(shape, run_dir, lambda dirs: None, hps)


if TYPE_CHECKING:
    _conforms: type[Runner] = LocalRunner
