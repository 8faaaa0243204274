"""Local mode: run a CreateTrainingJob request here, the way SageMaker's container would.

This module plays SageMaker's part for one request. It reads what the
container toolkit reads (:func:`smmpi.toolkit.shape.shape_from_request`), and
nothing from the spec:
- ``HyperParameters``: ``sagemaker_program``, ``sagemaker_submit_directory``,
  ``sagemaker_mpi_*``; the rest become script arguments and ``SM_HP_*``;
- ``ResourceConfig.InstanceCount`` and ``InstanceType``;
- ``InputDataConfig``: ``file://`` and ``s3://`` channels, copied into every
  host's ``input/data/<channel>``;
- ``Environment``.

It then runs the job as N emulated hosts (:mod:`.supervise`). Each instance
is left with the container's ``output/success`` or ``output/failure``
(:mod:`smmpi.platform.container_files`); on completion it writes ``model.tar.gz``, and
always ``output.tar.gz``, as SageMaker does. Either way it leaves a
describe-like record (``describe.json``) in the job's folder.
"""

from __future__ import annotations

import shutil
import sys
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from smmpi.causes import own_lines
from smmpi.ops.local_jobs import (
    configured_keep,
    create_folder,
    prune,
    remove_folder,
    tighten,
)
from smmpi.ops.signals import held
from smmpi.platform import failure_reason
from smmpi.platform.container_files import seed_checkpoints, write_status_files
from smmpi.platform.run_metrics import for_job, record_final
from smmpi.runners.base import RunOptions
from smmpi.runners.local import isolation
from smmpi.runners.local.containers import Container, choose
from smmpi.runners.local.host_trees import lay_out, say_start
from smmpi.runners.local.preflight import Checked, check
from smmpi.runners.local.records import (
    STATUS_OF,
    LocalJob,
    finish,
    new_record,
    now,
    write_record,
)
from smmpi.runners.local.requirements import install_code
from smmpi.runners.local.supervise import EXIT_OK, RunResult, execute
from smmpi.runners.local.throwaway import run_throwaway
from smmpi.runners.local.trainer import is_trainer_request, run_trainer
from smmpi.toolkit.hosts import HostDirs
from smmpi.toolkit.mpirun import container_mpirun
from smmpi.toolkit.shape import JobShape, shape_from_request

if TYPE_CHECKING:
    from smmpi.aws.types import Request


def _conclude(
    record: dict[str, Any],
    folder: Path,
    shape: JobShape,
    result: RunResult,
    start: float,
    request: Request,
) -> str:
    """Record how the job ended and pack its artifacts as SageMaker does; returns the status.

    The instances' status files are the container's (:mod:`smmpi.platform.container_files`); the
    record's FailureReason is SageMaker's text, then smmpi's line naming the rank (as serve's).
    ``output.tar.gz`` holds ``output/data`` (as ``data/...``), as SageMaker's does.
    """
    run_dir = folder / "hosts"
    hosts = [HostDirs(run_dir / h / "opt" / "ml") for h in shape.hosts]
    status = STATUS_OF[result.status]
    record.update(
        TrainingJobStatus=status,
        SecondaryStatus=status,
        TrainingEndTime=now(),
        TrainingTimeInSeconds=round(time.monotonic() - start, 3),
        BillableTimeInSeconds=0,
    )
    command = container_mpirun(request, shape.package)
    write_status_files(
        hosts, result.status, command, result.returncode, result.error_message, shape.image
    )
    failed = result.exit_code != EXIT_OK
    failure = (result.failure_line or result.status) if failed else None
    if result.status == "Failed":  # SageMaker's text, as smmpi serve gives it
        fields = {"line": failure, "exit_code": result.exit_code, "reason": result.reason}
        failure = failure_reason.reason(request, fields, run_dir)
    finish(record, request, hosts, folder, failure, result)
    return str(record["TrainingJobStatus"])


def _ending_lines(job: LocalJob, seconds: float) -> list[str]:
    name, folder = job.name, job.folder
    if job.status == "Completed":
        return [
            f"smmpi: local job {name} Completed in {seconds:.1f} s",
            f"smmpi: model  {folder / 'model.tar.gz'}",
            f"smmpi: output {folder / 'output.tar.gz'}",
        ]
    return [
        f"smmpi: local job {name} {job.status} (the instances' files: {folder / 'hosts'})",
        f"smmpi: {own_lines(job.record['FailureReason'], job.result.failure_line)}",
    ]


def run(
    request: Request,
    source: bytes,
    options: RunOptions | None = None,
    on_start: Callable[[dict[str, Any]], None] | None = None,
    channels: Mapping[str, Path] | None = None,
) -> LocalJob:
    """Run ``request`` here with ``source`` (the job's sourcedir.tar.gz) as its code: every
    local job's one route, whatever started it (``smmpi run``, ``submit --local``, serve,
    ``run --from-job``, ModelTrainer). ``options.throwaway``: a throwaway run folder
    (``smmpi run``), else a kept local job, ``on_start`` called with its first record.
    ``channels``: folders for channels whose URI is not read here (ModelTrainer's)."""
    options = options or RunOptions()
    if is_trainer_request(request):
        return run_trainer(request, channels, options, on_start)
    shape = shape_from_request(request, options.args)
    container = choose(request, options, shape.image)  # (a bad SMMPI_TOOLKIT_VENV: exit 2)
    checked = check(request, source, options, shape, container)
    if options.throwaway:
        return run_throwaway(request, source, options, shape, checked, container)
    return _run_kept(request, source, options, shape, (checked, container), on_start)


def _run_kept(
    request: Request,
    source: bytes,
    options: RunOptions,
    shape: JobShape,
    chosen: tuple[Checked, Container],
    on_start: Callable[[dict[str, Any]], None] | None,
) -> LocalJob:
    (checked, container), say, name = chosen, options.progress, shape.job_name
    folder = create_folder(name)  # a name in use is refused; nothing of another job is touched
    run_dir = folder / "hosts"
    start = time.monotonic()
    try:
        record = _prepare(request, source, options, shape, folder, container, on_start)
        extra_paths, shape = install_code(
            checked.wanted, shape, folder, checked.mode, options, start
        )
        write_record(folder, record)
        first = (
            f"smmpi: local job {name}: {shape.instances} emulated host(s) x {shape.ppn} "
            f"process(es) = {shape.world_size} ranks ({shape.instance_type}, "
            f"{isolation.label(checked.mode)})"
        )
        say_start(first, shape, checked, container, say)
        log_dir = Path(options.log_dir) if options.log_dir else folder / "logs"
        metrics = for_job(request, options.metrics, folder)
        with isolation.watching_opt_ml(checked.mode, say):
            result = execute(
                shape,
                run_dir,
                checked.launcher,
                timeout=options.timeout,
                log_dir=log_dir,
                out=metrics.stream(options.out or sys.stdout),
                err=metrics.stream(options.err or sys.stderr),
                extra_paths=extra_paths,
                extra_env=dict(options.env),
                progress=say,
                mode=checked.mode,
                container=container,
                spent=time.monotonic() - start if extra_paths else 0.0,
            )
    except BaseException:  # (an interrupt while the ranks run ends in a result, not here)
        remove_folder(folder)  # the job never started: leave nothing stuck InProgress
        raise
    metric_lines = record_final(record, metrics)
    with held():  # how the job ended is recorded whole; an interrupt waits for the end
        _conclude(record, folder, shape, result, start, request)
        tighten(folder)  # its archives and logs: 0600, as every file smmpi keeps
        if not options.keep:
            shutil.rmtree(run_dir, ignore_errors=True)
    job = LocalJob(name, folder, record, result)
    for line in _ending_lines(job, result.seconds) + metric_lines:
        say(line)
    for old in prune(configured_keep(), spare=name):
        say(f"smmpi: removed old local job {old} (keeping the newest {configured_keep()})")
    return job


def _prepare(
    request: Request,
    source: bytes,
    options: RunOptions,
    shape: JobShape,
    folder: Path,
    container: Container,
    on_start: Callable[[dict[str, Any]], None] | None,
) -> dict[str, Any]:
    """The host trees, code and channels: everything before the installs and mpirun."""
    run_dir = folder / "hosts"
    run_dir.mkdir()
    record = new_record(request, shape.job_name, run_dir)
    write_record(folder, record)
    if on_start:
        on_start(record)
    checkpoints = seed_checkpoints(request, folder)
    lay_out(request, source, options, shape, run_dir, container, checkpoints)
    record.update(SecondaryStatus="Training", TrainingStartTime=now())
    return record
