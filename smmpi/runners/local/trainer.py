"""Local mode for ModelTrainer's requests: the container's own start on every instance.

A request with ``AlgorithmSpecification.ContainerEntrypoint`` (SDK v2's
``sagemaker.modules.train`` and v3's ``sagemaker.train`` send one) runs here as
SageMaker would run it:
- the platform's part: each instance's ``/opt/ml/input/config/*.json`` as SageMaker
  writes them, and every channel of ``InputDataConfig`` (``code`` and ``sm_drivers``
  among them) under ``/opt/ml/input/data/<channel>``; ``channels`` gives a folder for a
  channel whose URI is not read here (``submit --local``: what the SDK would upload);
- the container's part: ``ContainerEntrypoint`` + ``ContainerArguments`` on every
  isolated instance, with a real sshd configured (:mod:`.trainer_pod`); the SDK's MPI
  driver does the rest, unchanged.

smmpi keeps its promises around it: the failed rank is named (rank, host, cause) beside the
driver's own failure text (algo-1's ``/opt/ml/output/failure``), ``--timeout`` dumps every
rank's stack, the ranks' world is checked against N x n, and nothing outlives the run.
"""

from __future__ import annotations

import os
import shutil
import sys
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from smmpi.aws.facts import check_job_name
from smmpi.errors import BadInput
from smmpi.mpi_output import printable
from smmpi.ops.local_jobs import (
    LOCAL_PPN,
    configured_keep,
    create_folder,
    prune,
    remove_folder,
    tighten,
)
from smmpi.ops.signals import held
from smmpi.platform import failure_reason
from smmpi.platform.container_files import (
    restore_checkpoints,
    seed_checkpoints,
)
from smmpi.platform.inputs import check_channels, copy_channel
from smmpi.platform.layout import prepare_hosts
from smmpi.platform.run_metrics import RunMetrics, for_job, record_final
from smmpi.runners.base import RunOptions
from smmpi.runners.local import exact
from smmpi.runners.local.bounds import check_world
from smmpi.runners.local.containers import Entrypoint
from smmpi.runners.local.host_trees import say_start
from smmpi.runners.local.mpi import preflight
from smmpi.runners.local.preflight import Checked
from smmpi.runners.local.records import STATUS_OF, LocalJob, finish, new_record, now, write_record
from smmpi.runners.local.short_world import LOCAL_WORLD, settle_world
from smmpi.runners.local.supervise import EXIT_OK, RunResult, execute
from smmpi.runners.local.trainer_pod import check_paramiko, driver_python
from smmpi.runners.local.trainer_request import driver_world, is_remote_function
from smmpi.toolkit.hosts import HostDirs
from smmpi.toolkit.shape import JobShape

if TYPE_CHECKING:
    from smmpi.aws.types import Request

FIRST_LINE = (
    "smmpi: ModelTrainer: every instance runs the request's ContainerEntrypoint and "
    "ContainerArguments (sm_train.sh, then the SDK's MPI driver, unchanged) with a real sshd; "
    "the driver's own waits (ssh bootstrap, status files) add seconds"
)
S3_ENDPOINT = "AWS_ENDPOINT_URL_S3"  # what serve gives an @remote job's instances
REMOTE_LINE = (
    "smmpi: @remote: every instance runs the request's ContainerEntrypoint and "
    "ContainerArguments (job_driver.sh, the SDK's bootstrap, then mpirun on algo-1, unchanged) "
    "with a real sshd; the job script's own waits (ssh bootstrap, status files) add seconds"
)


def is_trainer_request(request: Mapping[str, Any]) -> bool:
    """A request that names its own container start (ModelTrainer's)."""
    return bool((request.get("AlgorithmSpecification") or {}).get("ContainerEntrypoint"))


def check_trainer_run(options: RunOptions, instances: int, ppn: int) -> Checked:
    """Refuse (exit 2, nothing created) what cannot run: no isolated hosts, sshd or paramiko;
    what the checks found (isolated hosts, this machine's mpirun)."""
    check_world(instances, ppn)
    asked = options.isolation or os.environ.get("SMMPI_ISOLATION")
    if asked == "processes":
        raise BadInput("isolation", asked, "auto or hosts (a ModelTrainer request runs its sshd)")
    reason = exact.unavailable_reason(instances)
    if reason:
        raise BadInput("--api model-trainer --local", "here", f"exact mode's sshd ({reason})")
    check_paramiko()
    return Checked("hosts", None, None, preflight())


def _lay_out(
    request: Mapping[str, Any],
    channels: Mapping[str, Path],
    region: str | None,
    seeded: Path | None,
) -> Callable[[HostDirs], None]:
    specs = [dict(c) for c in request.get("InputDataConfig") or []]

    def lay_out(dirs: HostDirs) -> None:
        restore_checkpoints(request, dirs, seeded)
        for spec in specs:
            name = str(spec["ChannelName"])
            target = dirs.channel(name)
            target.mkdir(parents=True, exist_ok=True)
            if name in channels:
                spec = {"ChannelName": name, "DataSource": {"S3DataSource": {}}}
                spec["DataSource"]["S3DataSource"]["S3Uri"] = Path(channels[name]).as_uri()
            copy_channel(spec, target, region)

    return lay_out


def _driver_failure(run_dir: Path) -> str | None:
    """The driver's own text in algo-1's ``/opt/ml/output/failure`` (never read via a link)."""
    path = run_dir / "algo-1" / "opt" / "ml" / "output" / "failure"
    if not path.is_file() or path.is_symlink():
        return None
    text = path.read_text(encoding="utf-8", errors="replace").strip()
    return text or None


def _conclude(
    record: dict[str, Any], folder: Path, shape: JobShape, result: RunResult, request: Request
) -> str | None:
    """Record how the job ended, pack its artifacts; returns the driver's failure text."""
    run_dir = folder / "hosts"
    hosts = [HostDirs(run_dir / h / "opt" / "ml") for h in shape.hosts]
    status = STATUS_OF[result.status]
    record.update(TrainingJobStatus=status, SecondaryStatus=status, TrainingEndTime=now())
    text = _driver_failure(run_dir)
    failure = (result.failure_line or result.status) if result.exit_code != EXIT_OK else None
    if result.status == "Failed":  # SageMaker's text, as smmpi serve gives it
        fields = {"line": failure, "exit_code": result.exit_code, "reason": result.reason}
        failure = failure_reason.reason(request, fields, run_dir)
    finish(record, request, hosts, folder, failure, result)
    return text


def _ending(job: LocalJob, driver_text: str | None) -> list[str]:
    if job.status == "Completed":
        return [
            f"smmpi: local job {job.name} Completed in {job.result.seconds:.1f} s",
            f"smmpi: model  {job.model_artifact}",
            f"smmpi: output {job.output_artifact}",
        ]
    lines = [
        f"smmpi: local job {job.name} {job.status} (the instances' files: {job.folder / 'hosts'})",
        f"smmpi: {job.result.failure_line or job.status}",
    ]
    if driver_text:
        last = driver_text.splitlines()[-1]
        lines.append(f"smmpi: the MPI driver's failure file (algo-1): {printable(last)}")
    return lines


def _prepare(
    request: Request,
    channels: Mapping[str, Path],
    options: RunOptions,
    shape: JobShape,
    folder: Path,
    on_start: Callable[[dict[str, Any]], None] | None,
) -> dict[str, Any]:
    """The instances' trees, configs and channels: everything before the containers start."""
    run_dir = folder / "hosts"
    try:
        run_dir.mkdir()
        record = {**new_record(request, shape.job_name, run_dir), LOCAL_PPN: shape.ppn}
        write_record(folder, record)
        if on_start:
            on_start(record)
        hps = {k: str(v) for k, v in (request.get("HyperParameters") or {}).items()}
        seeded = seed_checkpoints(request, folder)
        prepare_hosts(shape, run_dir, _lay_out(request, channels, options.region, seeded), hps)
        record.update(SecondaryStatus="Training", TrainingStartTime=now())
    except BaseException:
        remove_folder(folder)  # the job never started: leave nothing stuck InProgress
        raise
    write_record(folder, record)
    return record


def _execute(
    request: Request,
    options: RunOptions,
    shape: JobShape,
    folder: Path,
    found: tuple[Path, Checked],
    metrics: RunMetrics,
) -> RunResult:
    """The instances started with the request's own entrypoint, supervised to their end
    (``found``: the driver's Python, what the checks found)."""
    (venv_dir, checked), say = found, options.progress
    line = REMOTE_LINE if is_remote_function(request) else FIRST_LINE
    container = Entrypoint(request, venv_dir, dict(options.env), line)
    first = (
        f"smmpi: local job {shape.job_name}: {shape.instances} emulated host(s) x {shape.ppn} "
        f"process(es) = {shape.world_size} ranks ({shape.instance_type}, isolated hosts)"
    )
    say_start(first, shape, checked, container, say)
    return execute(
        shape,
        folder / "hosts",
        checked.launcher,
        timeout=options.timeout,
        log_dir=Path(options.log_dir) if options.log_dir else folder / "logs",
        out=metrics.stream(options.out or sys.stdout),
        err=metrics.stream(options.err or sys.stderr),
        extra_env=dict(options.env),
        progress=say,
        mode="hosts",
        container=container,
        whole_world=not options.as_sagemaker,
    )


def run_trainer(
    request: Request,
    channels: Mapping[str, Path] | None,
    options: RunOptions,
    on_start: Callable[[dict[str, Any]], None] | None = None,
) -> LocalJob:
    """Run ModelTrainer's ``request`` here; ``channels``: folders for channels not read here."""
    channels = dict(channels or {})
    say = options.progress
    shape, np, api = driver_world(request, channels)
    if api == "remote" and S3_ENDPOINT not in options.env:
        raise BadInput(
            "request", "@remote's job script", "a run under smmpi serve (its ranks reach S3 "
            "through the job's own endpoint and key, which serve gives them)",
        )  # fmt: skip
    name = check_job_name(shape.job_name)
    check_channels(request, channels)
    checked = check_trainer_run(options, shape.instances, shape.ppn)
    venv_dir = driver_python()
    folder = create_folder(name)  # a name in use is refused; nothing of another job is touched
    run_dir = folder / "hosts"
    start = time.monotonic()
    try:
        record = _prepare(request, channels, options, shape, folder, on_start)
        metrics = for_job(request, options.metrics, folder)
        result = _execute(request, options, shape, folder, (venv_dir, checked), metrics)
    except BaseException:  # (an interrupt while the ranks run ends in a result, not here)
        remove_folder(folder)  # the job never started: leave nothing stuck InProgress
        raise
    short = settle_world(result, shape.instances, shape.ppn, np, options.as_sagemaker, api)
    if short:
        say(f"smmpi: {short}")
        record[LOCAL_WORLD] = short
    record["TrainingTimeInSeconds"] = round(time.monotonic() - start, 3)
    record["BillableTimeInSeconds"] = 0
    metric_lines = record_final(record, metrics)
    with held():  # how the job ended is recorded whole; an interrupt waits for the end
        text = _conclude(record, folder, shape, result, request)
        tighten(folder)  # its archives and logs: 0600, as every file smmpi keeps
        if not options.keep:
            shutil.rmtree(run_dir, ignore_errors=True)
    job = LocalJob(name, folder, record, result)
    for line in _ending(job, text) + metric_lines:
        say(line)
    for old in prune(configured_keep(), spare=name):
        say(f"smmpi: removed old local job {old} (keeping the newest {configured_keep()})")
    return job
