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

import os
import shutil
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from smmpi.archives import extract
from smmpi.aws.facts import check_job_name
from smmpi.causes import own_lines
from smmpi.instances.machine import start_notes
from smmpi.ops.local_jobs import (
    configured_keep,
    create_folder,
    jobs_root,
    prune,
    remove_folder,
    tighten,
)
from smmpi.ops.signals import held
from smmpi.platform import failure_reason
from smmpi.platform.container_files import (
    restore_checkpoints,
    seed_checkpoints,
    write_status_files,
)
from smmpi.platform.inputs import check_channels, copy_channel
from smmpi.platform.layout import prepare_hosts
from smmpi.runners.base import Progress, RunOptions
from smmpi.runners.local import exact, isolation, modes
from smmpi.runners.local.bounds import check_bounds
from smmpi.runners.local.entry import check_request_entry
from smmpi.runners.local.mpi import preflight
from smmpi.runners.local.records import (
    STATUS_OF,
    LocalJob,
    finish,
    new_record,
    now,
    write_record,
)
from smmpi.runners.local.req_files import requirement_lines
from smmpi.runners.local.requirements import install_code
from smmpi.runners.local.supervise import EXIT_OK, RunResult, execute
from smmpi.spec.shell import check_shell_words
from smmpi.toolkit.hosts import HostDirs
from smmpi.toolkit.images import framework_of
from smmpi.toolkit.mpirun import container_mpirun
from smmpi.toolkit.request import user_hyperparameters
from smmpi.toolkit.shape import JobShape, shape_from_request

if TYPE_CHECKING:
    from smmpi.aws.types import Request


def _lay_out(
    request: Mapping[str, Any],
    source: bytes | None,
    region: str | None,
    checkpoints: Path | None,
) -> Callable[[HostDirs], None]:
    """What goes into each host's tree: the unpacked source (None: the toolkit unpacks it
    itself, exact mode), the checkpoints, every channel."""
    channel_specs = {str(c["ChannelName"]): c for c in request.get("InputDataConfig") or []}

    def lay_out(dirs: HostDirs) -> None:
        if source is not None:
            extract(source, dirs.code, links=True)
        restore_checkpoints(request, dirs, checkpoints)
        for channel_name, spec in channel_specs.items():
            target = dirs.channel(channel_name)
            target.mkdir(parents=True, exist_ok=True)
            copy_channel(spec, target, region)

    return lay_out


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


def run_request(
    request: Request,
    source: bytes,
    options: RunOptions | None = None,
    on_start: Callable[[dict[str, Any]], None] | None = None,
) -> LocalJob:
    """Run ``request`` here with ``source`` (the job's sourcedir.tar.gz) as its code."""
    options = options or RunOptions()
    say = options.progress
    shape = shape_from_request(request)
    name = check_job_name(shape.job_name)
    mode, why_not_hosts, wanted = _check_before_work(request, source, options, shape, name)
    folder = create_folder(name)  # a name in use is refused; nothing of another job is touched
    run_dir = folder / "hosts"
    start = time.monotonic()
    try:
        record = _prepare(request, source, options, shape, folder, on_start)
        extra_paths, shape = install_code(wanted, shape, folder, mode, options, start)
        write_record(folder, record)
        _say_start(name, shape, mode, why_not_hosts, options.exact, say)
        log_dir = Path(options.log_dir) if options.log_dir else folder / "logs"
        with isolation.watching_opt_ml(mode, say):
            result = execute(
                shape,
                run_dir,
                timeout=options.timeout,
                log_dir=log_dir,
                out=options.out,
                err=options.err,
                extra_paths=extra_paths,
                extra_env=dict(options.env),
                progress=say,
                mode=mode,
                exact=options.exact,
                spent=time.monotonic() - start if extra_paths else 0.0,
            )
    except BaseException:  # (an interrupt while the ranks run ends in a result, not here)
        remove_folder(folder)  # the job never started: leave nothing stuck InProgress
        raise
    with held():  # how the job ended is recorded whole; an interrupt waits for the end
        _conclude(record, folder, shape, result, start, request)
        tighten(folder)  # its archives and logs: 0600, as every file smmpi keeps
        if not options.keep:
            shutil.rmtree(run_dir, ignore_errors=True)
    job = LocalJob(name, folder, record, result)
    for line in _ending_lines(job, result.seconds):
        say(line)
    for old in prune(configured_keep(), spare=name):
        say(f"smmpi: removed old local job {old} (keeping the newest {configured_keep()})")
    return job


def _check_before_work(
    request: Request, source: bytes, options: RunOptions, shape: JobShape, name: str
) -> tuple[str, str | None, list[str] | None]:
    """Every check of the request and this machine, and the toolkit's environment (exact mode),
    before the job's folder exists; returns the local mode, why not isolated hosts, and the
    lines of the code's requirements.txt (None: none, or the toolkit reads it)."""
    mode, why_not_hosts = modes.choose(options.isolation, shape.instances)
    if options.exact:
        exact.check(options.isolation, shape.instances, shape.image)
    toolkit = options.exact and exact.uses_toolkit(shape.image)  # it installs the code itself
    if not toolkit:  # else the toolkit decides, and its shell fails as on SageMaker
        check_request_entry(shape.script, source)
        hps = {k: str(v) for k, v in user_hyperparameters(request).items()}
        check_shell_words(framework_of(shape.image), hps)  # (a request from serve or boto3)
    wanted = requirement_lines(source, options.install_requirements or toolkit)
    preflight()  # a missing MPI is bad input: fail before the job's folder exists
    check_channels(request)  # (a FIFO, a device, /proc/self/environ...)
    check_bounds(shape, jobs_root() / name / "hosts")  # nor a world too large to emulate
    if options.exact:
        exact.prepare(shape.image, options.progress)  # the toolkit's environment, built once
    return mode, why_not_hosts, None if toolkit else wanted


def _say_start(
    name: str,
    shape: JobShape,
    mode: str,
    why_not_hosts: str | None,
    exact_mode: bool,
    say: Progress,
) -> None:
    say(
        f"smmpi: local job {name}: {shape.instances} emulated host(s) x {shape.ppn} "
        f"process(es) = {shape.world_size} ranks ({shape.instance_type}, {isolation.label(mode)})"
    )
    if mode == "processes":
        say(isolation.differs(why_not_hosts))
    if exact_mode:
        say(exact.first_line(shape.image))
    for line in start_notes(shape, os.environ):
        say(line)


def _prepare(
    request: Request,
    source: bytes,
    options: RunOptions,
    shape: JobShape,
    folder: Path,
    on_start: Callable[[dict[str, Any]], None] | None,
) -> dict[str, Any]:
    """The host trees, code and channels: everything before the installs and mpirun."""
    run_dir = folder / "hosts"
    run_dir.mkdir()
    record = new_record(request, shape.job_name, run_dir)
    write_record(folder, record)
    if on_start:
        on_start(record)
    hps_json = {k: str(v) for k, v in (request.get("HyperParameters") or {}).items()}
    checkpoints = seed_checkpoints(request, folder)
    unpacked: bytes | None = source
    if options.exact and exact.uses_toolkit(shape.image):  # the toolkit fetches the code
        hps_json, unpacked = exact.stage_code(run_dir, source, hps_json), None
    lay_out = _lay_out(request, unpacked, options.region, checkpoints)
    prepare_hosts(shape, run_dir, lay_out, hps_json)
    record.update(SecondaryStatus="Training", TrainingStartTime=now())
    return record
