"""``smmpi run``'s folder: a request run in a throwaway run folder, not a kept local job.

The run folder is made in the temporary folder and removed after the run (kept with
``keep``); the ranks' output goes to this process's, and rank 0 reads this process's stdin,
as under mpirun. No record and no artifacts are kept: the caller says how the run ended.
"""

from __future__ import annotations

import shutil
import signal
import sys
import tempfile
from pathlib import Path
from typing import Any

from smmpi.ops.signals import STOPS
from smmpi.platform.run_metrics import RunMetrics, final_line
from smmpi.runners.base import RunOptions
from smmpi.runners.local import isolation
from smmpi.runners.local.containers import Container
from smmpi.runners.local.host_trees import lay_out, say_start
from smmpi.runners.local.preflight import Checked
from smmpi.runners.local.records import STATUS_OF, LocalJob
from smmpi.runners.local.supervise import (
    EXIT_INTERRUPTED,
    EXIT_OK,
    RunResult,
    execute,
    sigterm_interrupts,
)
from smmpi.toolkit.plan import ContainerPlan
from smmpi.toolkit.shape import JobShape


def run_throwaway(
    planned: ContainerPlan,
    source: bytes,
    options: RunOptions,
    checked: Checked,
    container: Container,
) -> LocalJob:
    """Run the checked plan in a throwaway run folder; Ctrl-C or SIGTERM at any step ends
    it with an interrupted result (exit 130), and the folder goes unless ``options.keep``."""
    metrics = RunMetrics(options.metrics or (), None)  # ``--metric``: the last values only
    shape = planned.shape
    with sigterm_interrupts():
        # Ctrl-C or SIGTERM waits until the run dir is one that the finally removes
        mask = signal.pthread_sigmask(signal.SIG_BLOCK, STOPS)
        run_dir = Path(tempfile.mkdtemp(prefix="smmpi-run-"))
        try:
            signal.pthread_sigmask(signal.SIG_SETMASK, mask)
            chosen = (checked, container, metrics)
            result = _run_in(planned, source, options, chosen, run_dir)
        except KeyboardInterrupt:  # before the ranks started, or between two of its steps
            result = _interrupted(shape, run_dir)
        finally:
            if not options.keep:
                shutil.rmtree(run_dir, ignore_errors=True)
    record: dict[str, Any] = {
        "TrainingJobName": shape.job_name,
        "TrainingJobStatus": STATUS_OF[result.status],
    }
    if metrics.final():
        record["FinalMetricDataList"] = metrics.final()
    return LocalJob(shape.job_name, run_dir, record, result)


def _run_in(
    planned: ContainerPlan,
    source: bytes,
    options: RunOptions,
    chosen: tuple[Checked, Container, RunMetrics],
    run_dir: Path,
) -> RunResult:
    (checked, container, metrics), shape = chosen, planned.shape
    try:
        lay_out(planned, source, options, run_dir, container)
    except KeyboardInterrupt:  # Ctrl-C or SIGTERM while the host trees were laid out
        return _interrupted(shape, run_dir)
    say = options.progress
    first = f"smmpi: {Path(shape.script).stem} on {shape.counts} ({isolation.label(checked.mode)})"
    say_start(first, shape, checked, container, say)
    with isolation.watching_opt_ml(checked.mode, say):
        return execute(
            shape,
            run_dir,
            checked.launcher,
            timeout=options.timeout,
            log_dir=Path(options.log_dir) if options.log_dir else None,
            out=metrics.stream(options.out or sys.stdout),
            err=metrics.stream(options.err or sys.stderr),
            extra_env=dict(options.env),
            progress=say,
            stdin_closed=False,
            remove_on_death=not options.keep,
            mode=checked.mode,
            container=container,
        )


def _interrupted(shape: JobShape, run_dir: Path) -> RunResult:
    result = RunResult(EXIT_INTERRUPTED, "Interrupted", 0.0, run_dir, shape.world_size)
    result.reason = "interrupted before the ranks started"
    return result


def ending_lines(job: LocalJob, instances: int, hint: str | None, keep: bool) -> list[str]:
    """How a throwaway run ended, in the lines ``smmpi run`` ends with (``hint``: why a
    module the program imports did not ship with it)."""
    result = job.result
    if result.exit_code == EXIT_OK:
        lines = [
            f"smmpi: {result.world_size} ranks on {instances} emulated host(s) "
            f"completed in {result.seconds:.1f} s"
        ]
    else:
        lines = [f"smmpi: {result.failure_line}" + (f" ({hint})" if hint else "")]
    if keep:
        lines.append(f"smmpi: host trees kept under {job.folder}")
    if job.record.get("FinalMetricDataList"):
        lines.append(f"smmpi: metrics {final_line(job.record['FinalMetricDataList'])}")
    return lines
