"""The seam between the SageMaker SDK and local mode.

The estimator is built exactly as for SageMaker (:func:`smmpi.sdk.estimator.build`)
and ``fit`` runs the SDK's own code end to end. Only the last step changes:
the CreateTrainingJob call is answered here, by running the request with
:func:`smmpi.runners.local.job.run`, instead of by AWS.
DescribeTrainingJob is answered from the local job's record, so
``fit(wait=True)`` ends with the local job's status. This is the SDK's
``LocalSession`` idea with its Docker step replaced, but without its changes
to the request (``instance_type`` ``"local"``, ``file://`` code), so the
request that runs here is the one SageMaker would receive.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import shutil
import tempfile
from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from smmpi.aws.record import hooked
from smmpi.catalog import missing_module_hint
from smmpi.ops.signals import held
from smmpi.runners.base import RunOptions
from smmpi.runners.local.job import run as run_local
from smmpi.runners.local.preflight import check_entrypoint_machine, check_machine
from smmpi.runners.local.records import LocalJob, interruptible
from smmpi.sdk.estimator import (
    Built,
    build,
    local_inputs,
    offline_request,
    pack_source,
    restore_placeholders,
)
from smmpi.sdk.model_trainer import capture_offline
from smmpi.spec import MPIJob

if TYPE_CHECKING:
    from smmpi.aws.types import Request


def _parse_time(value: Any) -> datetime:
    if isinstance(value, datetime):
        return value
    try:
        return datetime.fromisoformat(str(value))
    except ValueError:
        return datetime.now(timezone.utc)


def describe_response(record: dict[str, Any]) -> dict[str, Any]:
    """The local record in DescribeTrainingJob's shape (times as datetimes, as boto3 gives them)."""
    desc = dict(record)
    for key in ("CreationTime", "TrainingStartTime", "TrainingEndTime"):
        if key in desc:
            desc[key] = _parse_time(desc[key])
    created = desc.get("CreationTime", datetime.now(timezone.utc))
    end = desc.get("TrainingEndTime", created)
    desc["LastModifiedTime"] = end
    desc["SecondaryStatusTransitions"] = [
        {
            "Status": "Starting",
            "StartTime": created,
            "EndTime": desc.get("TrainingStartTime", end),
            "StatusMessage": "Preparing the emulated hosts",
        },
        {
            "Status": "Training",
            "StartTime": desc.get("TrainingStartTime", created),
            "StatusMessage": "Running mpirun locally",
        },
    ]
    desc.setdefault("ModelArtifacts", {"S3ModelArtifacts": ""})
    return desc


class _NoTroubleshootingLink(logging.Filter):
    """The SDK logs a link to its troubleshooting guide whenever CreateTrainingJob raises; a
    local run's error is already one line of smmpi's, so the link is noise."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not str(record.msg).startswith("Please check the troubleshooting guide")


_QUIET = _NoTroubleshootingLink()


class LocalBackend:
    """Answers an SDK session's CreateTrainingJob/DescribeTrainingJob calls with local runs."""

    def __init__(self, built: Built, options: RunOptions) -> None:
        self.built = built
        self.source = pack_source(built.job)  # the very bytes `submit` uploads
        # Channels are read in the region the job was built for.
        self.options = dataclasses.replace(options, region=built.settings.region)
        self.jobs: dict[str, LocalJob] = {}
        self.requests: list[Request] = []
        self.interrupted = False
        self._hooks = contextlib.ExitStack()

    def create(self, params: dict[str, Any]) -> dict[str, Any]:
        request = cast("Request", restore_placeholders(params, self.built.settings.placeholders))
        self.requests.append(request)
        try:
            job = run_local(request, self.source, self.options)
        except KeyboardInterrupt:
            self.interrupted = True  # (the SDK's telemetry wrapper swallows it)
            raise
        self.jobs[job.name] = job
        hint = missing_module_hint(self.built.job.program, str(job.record.get("FailureReason", "")))
        if hint:
            self.options.progress(f"smmpi: {hint}")
        return {"TrainingJobArn": job.record["TrainingJobArn"]}

    def describe(self, params: dict[str, Any]) -> dict[str, Any]:
        name = params["TrainingJobName"]
        if name not in self.jobs:
            from botocore.exceptions import ClientError

            raise ClientError(
                {
                    "Error": {
                        "Code": "ValidationException",
                        "Message": f"Requested resource not found: {name}",
                    }
                },
                "DescribeTrainingJob",
            )
        return describe_response(self.jobs[name].record)

    def attach(self) -> None:
        """Answer the session's calls from now on (until :meth:`detach`)."""
        client = self.built.session.sagemaker_client
        sdk_logger = logging.getLogger("sagemaker")
        sdk_logger.addFilter(_QUIET)
        self._hooks.callback(sdk_logger.removeFilter, _QUIET)
        self._hooks.enter_context(hooked(client, "CreateTrainingJob", self.create))
        self._hooks.enter_context(hooked(client, "DescribeTrainingJob", self.describe))

    def detach(self) -> None:
        self._hooks.close()

    @contextlib.contextmanager
    def attached(self) -> Any:
        self.attach()
        try:
            yield self
        finally:
            self.detach()


def local_estimator(job: MPIJob, options: RunOptions, *, job_name: str | None = None) -> Any:
    """The job's SageMaker estimator, whose ``fit`` runs the job here.

    Output streams live while the job runs, so ``fit`` defaults to
    ``logs=False`` (the SDK would otherwise wait 10 s for CloudWatch).
    """
    built = build(job, offline=True, job_name=job_name)
    backend = LocalBackend(built, options)
    backend.attach()
    estimator = built.estimator
    sdk_fit = estimator.fit

    def fit(inputs: Any = None, *args: Any, logs: Any = False, **kwargs: Any) -> Any:
        kwargs.setdefault("job_name", built.job_name)
        answer = sdk_fit(local_inputs(inputs), *args, logs=logs, **kwargs)
        if backend.interrupted:
            backend.interrupted = False
            raise KeyboardInterrupt  # what the SDK swallowed
        return answer

    estimator.fit = fit
    estimator.smmpi_local_backend = backend
    return estimator


@contextlib.contextmanager
def _scratch(prefix: str) -> Iterator[Path]:
    """A temporary folder made and removed whole, even when an interrupt comes."""
    with contextlib.ExitStack() as stack:
        with held():
            path = Path(tempfile.mkdtemp(prefix=prefix))
            stack.callback(_remove, path)
        yield path


def _remove(path: Path) -> None:
    with held():
        shutil.rmtree(path, ignore_errors=True)


def submit_local(job: MPIJob, options: RunOptions, *, job_name: str | None = None) -> LocalJob:
    """``submit --local``: the request the SDK's ``fit`` sends, run here; returns the local job."""
    machine = check_machine(options, job.instances, job.ppn)  # before the SDK and its banner
    with interruptible() as stops:
        built = offline_request(job, job_name=job_name, local=True)
        stops.name = built.job_name
        stops.check()
        chosen = dataclasses.replace(options, region=built.settings.region)
        run = run_local(built.request, pack_source(job), chosen, machine=machine)
    hint = missing_module_hint(job.program, str(run.record.get("FailureReason", "")))
    if hint:
        options.progress(f"smmpi: {hint}")
    return run


def submit_trainer_local(job: MPIJob, options: RunOptions) -> LocalJob:
    """``submit --local --api model-trainer``: the request ModelTrainer builds, run here.

    The SDK's own ``train`` builds it offline (:func:`smmpi.sdk.model_trainer.capture_offline`),
    and what it would upload (the ``code`` and ``sm_drivers`` channels) is laid out on every
    instance from the copies it kept.
    """
    machine = check_entrypoint_machine(options, job.instances, job.ppn)  # before the SDK
    with interruptible() as stops, _scratch("smmpi-mt-") as tmp:
        captured = capture_offline(job, tmp)
        stops.check()
        for note in captured.notes:  # what smmpi did to the driver's line, and why
            options.progress(f"smmpi: note: {note}")
        request = cast("Request", captured.request)
        stops.name = str(request.get("TrainingJobName", ""))
        chosen = dataclasses.replace(
            options, region=captured.region, as_sagemaker=options.as_sagemaker or job.as_sagemaker
        )
        return run_local(request, b"", chosen, channels=captured.channels, machine=machine)
