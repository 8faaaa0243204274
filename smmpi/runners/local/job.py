"""Local mode: run a CreateTrainingJob request here, the way SageMaker's container would.

This module plays SageMaker's part for one request. It plans the container once
(:func:`smmpi.toolkit.plan.plan`: what the toolkit, or the request's own entrypoint, reads),
and nothing from the spec:
- ``HyperParameters``: ``sagemaker_program``, ``sagemaker_submit_directory``,
  ``sagemaker_mpi_*``; the rest become script arguments and ``SM_HP_*``;
- ``ResourceConfig.InstanceCount`` and ``InstanceType``;
- ``InputDataConfig``: ``file://`` and ``s3://`` channels, copied into every
  host's ``input/data/<channel>``;
- ``Environment``;
- a ModelTrainer request's ``ContainerEntrypoint`` and its ``sm_drivers`` channel
  (:mod:`.trainer`).

Every step after the plan reads the plan: the checks (:mod:`.preflight`), the host trees, the
N emulated hosts (:mod:`.supervise`) and the job's end. Each instance is left with the
container's ``output/success`` or ``output/failure`` (:mod:`smmpi.platform.container_files`);
on completion it writes ``model.tar.gz``, and always ``output.tar.gz``, as SageMaker does.
Either way it leaves a describe-like record (``describe.json``) in the job's folder.
"""

from __future__ import annotations

import dataclasses
import shutil
import sys
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from smmpi.causes import own_lines
from smmpi.ops.local_jobs import (
    LOCAL_PPN,
    configured_keep,
    create_folder,
    prune,
    remove_folder,
)
from smmpi.ops.private_files import tighten
from smmpi.ops.signals import held
from smmpi.platform import failure_reason
from smmpi.platform.container_files import seed_checkpoints, write_status_files
from smmpi.platform.run_metrics import RunMetrics, for_job, record_final
from smmpi.runners.base import RunOptions
from smmpi.runners.local import isolation, trainer
from smmpi.runners.local.bounds import check_world
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
from smmpi.runners.local.sessions import check_room_left
from smmpi.runners.local.supervise import EXIT_OK, RunResult, execute
from smmpi.runners.local.throwaway import run_throwaway
from smmpi.toolkit.hosts import HostDirs
from smmpi.toolkit.plan import ContainerPlan, plan

if TYPE_CHECKING:
    from smmpi.aws.types import Request

#: What a kept job's run takes: what the checks found, and the container.
Chosen = tuple[Checked, Container]


def _conclude(
    record: dict[str, Any],
    folder: Path,
    planned: ContainerPlan,
    result: RunResult,
    start: float,
) -> str | None:
    """Record how the job ended and pack its artifacts as SageMaker does; returns the text
    of a driver's own failure file (a request's own start), else None.

    The instances' status files are the container's (:mod:`smmpi.platform.container_files`:
    the model's line, or the driver's own); the record's FailureReason is SageMaker's text,
    then smmpi's line naming the rank (as serve's). ``output.tar.gz`` holds ``output/data``
    (as ``data/...``), as SageMaker's does.
    """
    run_dir, shape = folder / "hosts", planned.shape
    hosts = [HostDirs(run_dir / h / "opt" / "ml") for h in shape.hosts]
    status = STATUS_OF[result.status]
    record.update(
        TrainingJobStatus=status,
        SecondaryStatus=status,
        TrainingEndTime=now(),
        TrainingTimeInSeconds=round(time.monotonic() - start, 3),
        BillableTimeInSeconds=0,
    )
    text = trainer.driver_failure(run_dir) if planned.entrypoint else None
    if not planned.entrypoint:  # (a request's own start writes its own)
        code, message = result.returncode, result.error_message
        write_status_files(hosts, result.status, planned.line, code, message, shape.image)
    # a stopped job has no FailureReason and its model is packed, as SageMaker (and serve) do
    failed = result.exit_code != EXIT_OK and result.status != "Interrupted"
    failure = (result.failure_line or result.status) if failed else None
    if result.status == "Failed":  # SageMaker's text, as smmpi serve gives it
        fields = {"line": failure, "exit_code": result.exit_code, "reason": result.reason}
        # (the toolkit's error names its line as a script's; a request's own start has none)
        named = () if planned.entrypoint else planned.script_line
        failure = failure_reason.reason(planned.request, fields, run_dir, named)
    finish(record, planned.request, hosts, folder, failure, result)
    return text


def _ending_lines(job: LocalJob, planned: ContainerPlan, driver_text: str | None) -> list[str]:
    name, folder = job.name, job.folder
    if job.status == "Completed":
        return [
            f"smmpi: local job {name} Completed in {job.result.seconds:.1f} s",
            f"smmpi: model  {folder / 'model.tar.gz'}",
            f"smmpi: output {folder / 'output.tar.gz'}",
        ]
    if planned.entrypoint:
        return trainer.ending(job, driver_text)
    return [
        f"smmpi: local job {name} {job.status} (the instances' files: {folder / 'hosts'})",
        f"smmpi: {own_lines(job.record.get('FailureReason', ''), job.result.failure_line)}",
    ]


def run(
    request: Request,
    source: bytes,
    options: RunOptions | None = None,
    on_start: Callable[[dict[str, Any]], None] | None = None,
    channels: Mapping[str, Path] | None = None,
    machine: Checked | None = None,
) -> LocalJob:
    """Run ``request`` here with ``source`` (the job's sourcedir.tar.gz) as its code: every
    local job's one route, whatever started it (``smmpi run``, ``submit --local``, serve,
    ``run --from-job``, ModelTrainer). ``options.throwaway``: a throwaway run folder
    (``smmpi run``), else a kept local job, ``on_start`` called with its first record.
    ``channels``: folders for channels whose URI is not read here (ModelTrainer's);
    ``machine``: this machine's checks for a request's own start, made already."""
    options = options or RunOptions()
    planned = plan(request, options.args, channels, check_world)  # the container, read once
    container = choose(planned, options)  # (a bad SMMPI_TOOLKIT_VENV: exit 2)
    checked = check(planned, source, options, container, channels, machine)
    if options.throwaway:
        return run_throwaway(planned, source, options, checked, container)
    return _run_kept(planned, source, options, (checked, container), on_start, channels)


def _run_kept(
    planned: ContainerPlan,
    source: bytes,
    options: RunOptions,
    chosen: Chosen,
    on_start: Callable[[dict[str, Any]], None] | None,
    channels: Mapping[str, Path] | None,
) -> LocalJob:
    say, name = options.progress, planned.shape.job_name
    folder = create_folder(name)  # a name in use is refused; nothing of another job is touched
    run_dir = folder / "hosts"
    start = time.monotonic()
    try:
        record = _prepare(planned, source, options, folder, chosen[1], on_start, channels)
        metrics = for_job(planned.request, options.metrics, folder)
        result, planned = _execute(planned, folder, options, chosen, metrics, start)
    except BaseException:  # (an interrupt while the ranks run ends in a result, not here)
        remove_folder(folder)  # the job never started: leave nothing stuck InProgress
        raise
    if planned.entrypoint:
        trainer.settle(planned, result, options, record)
    metric_lines = record_final(record, metrics)
    with held():  # how the job ended is recorded whole; an interrupt waits for the end
        text = _conclude(record, folder, planned, result, start)
        tighten(folder)  # its archives and logs: 0600, as every file smmpi keeps
        if not options.keep:
            shutil.rmtree(run_dir, ignore_errors=True)
    job = LocalJob(name, folder, record, result)
    for line in _ending_lines(job, planned, text) + metric_lines:
        say(line)
    for old in prune(configured_keep(), spare=name):
        say(f"smmpi: removed old local job {old} (keeping the newest {configured_keep()})")
    return job


def _execute(
    planned: ContainerPlan,
    folder: Path,
    options: RunOptions,
    chosen: Chosen,
    metrics: RunMetrics,
    start: float,
) -> tuple[RunResult, ContainerPlan]:
    """The code's installs, the run's first lines, then its instances supervised to their
    end; the result, and the plan the code ran as (a package, once its setup.py installed)."""
    (checked, container), say, run_dir = chosen, options.progress, folder / "hosts"
    extra_paths, shape = install_code(
        checked.wanted, planned.shape, folder, checked.mode, options, start
    )
    planned = dataclasses.replace(planned, shape=shape)
    shape = planned.shape
    first = (
        f"smmpi: local job {shape.job_name}: {shape.counts} ({shape.instance_type}, "
        f"{isolation.label(checked.mode)})"
    )
    say_start(first, shape, checked, container, say)
    no_room = check_room_left(shape, run_dir, checked.mode)  # (recorded as the job's end)
    if no_room is not None:
        return no_room, planned
    with isolation.watching_opt_ml(checked.mode, say):
        result = execute(
            shape,
            run_dir,
            checked.launcher,
            timeout=options.timeout,
            log_dir=Path(options.log_dir) if options.log_dir else folder / "logs",
            out=metrics.stream(options.out or sys.stdout),
            err=metrics.stream(options.err or sys.stderr),
            extra_paths=extra_paths,
            extra_env=dict(options.env),
            progress=say,
            mode=checked.mode,
            container=container,
            spent=time.monotonic() - start if extra_paths else 0.0,
            whole_world=not (planned.entrypoint and options.as_sagemaker),
        )
    return result, planned


def _prepare(
    planned: ContainerPlan,
    source: bytes,
    options: RunOptions,
    folder: Path,
    container: Container,
    on_start: Callable[[dict[str, Any]], None] | None,
    channels: Mapping[str, Path] | None,
) -> dict[str, Any]:
    """The host trees, code and channels: everything before the installs and mpirun."""
    run_dir, shape = folder / "hosts", planned.shape
    run_dir.mkdir()
    record = new_record(planned.request, shape.job_name, run_dir)
    if planned.entrypoint:  # (its N x n is the driver's, which the request does not say)
        record[LOCAL_PPN] = shape.ppn
    write_record(folder, record)
    if on_start:
        on_start(record)
    checkpoints = seed_checkpoints(planned.request, folder)
    lay_out(planned, source, options, run_dir, container, checkpoints, channels)
    record.update(SecondaryStatus="Training", TrainingStartTime=now())
    write_record(folder, record)
    return record
