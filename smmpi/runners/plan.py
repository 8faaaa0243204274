"""The dry run: what a job will do, as data, without creating anything.

The CreateTrainingJob request is captured from the SDK's own ``fit``
(:func:`smmpi.sdk.estimator.capture_request`), offline; the container's
mpirun argv is derived from it by :mod:`smmpi.toolkit.mpirun`.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from smmpi.errors import SmmpiError
from smmpi.sdk import estimator, model_trainer
from smmpi.spec import MPIJob, require_s3_inputs
from smmpi.toolkit.drivers.line import driver_mpirun, forwarded_credentials
from smmpi.toolkit.mpirun import container_mpirun
from smmpi.toolkit.request import world_size

if TYPE_CHECKING:
    from smmpi.aws.types import Request


@dataclass(frozen=True)
class Plan:
    """One job, printed: the request, the mpirun argv on algo-1, and what was assumed."""

    request: Request
    mpirun: list[str]
    world_size: int
    job_name: str
    code_uri: str
    files: list[str]
    placeholders: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    region: str | None = None
    api: str = "estimator"
    # model-trainer: each channel the SDK uploads -> its files; the credentials the driver's
    # line forwards to every rank
    channels: dict[str, list[str]] = field(default_factory=dict)
    forwarded: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "api": self.api,
            "channels": self.channels,
            "forwarded_credentials": self.forwarded,
            "request": self.request,
            "mpirun": self.mpirun,
            "world_size": self.world_size,
            "job_name": self.job_name,
            "code_uri": self.code_uri,
            "files": self.files,
            "placeholders": self.placeholders,
            "notes": self.notes,
            "region": self.region,
        }


def plan(job: MPIJob, *, job_name: str | None = None) -> Plan:
    """Build the estimator offline, capture its request, derive the mpirun argv.

    The plan is what SageMaker would receive, so ``file://`` channels (local
    mode only) are refused here as they would be on submit.
    """
    require_s3_inputs(job)
    if job.api == "model-trainer":
        return plan_model_trainer(job)
    built = estimator.offline_request(job, job_name=job_name)
    request = built.request
    files = estimator.source_members(job)
    return Plan(
        request=request,
        mpirun=container_mpirun(request, package="setup.py" in files),
        world_size=world_size(request),
        job_name=built.job_name,
        code_uri=built.code_uri,
        files=files,
        placeholders=sorted(set(built.settings.placeholders.values())),
        notes=[*built.settings.notes, *job.notes],
        region=built.settings.region,
    )


def plan_model_trainer(job: MPIJob) -> Plan:
    """ModelTrainer's request, offline; the mpirun line is its own MPI driver's, run here."""
    with tempfile.TemporaryDirectory(prefix="smmpi-plan-") as tmp:
        captured = model_trainer.capture_offline(job, Path(tmp))
        drivers = captured.channels.get("sm_drivers")
        if drivers is None:
            raise SmmpiError("ModelTrainer's request has no sm_drivers channel")
        request = cast("Request", captured.request)
        line = driver_mpirun(request, drivers)
        channels = {
            name: sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file())
            for name, folder in sorted(captured.channels.items())
        }
    code = next(
        c["DataSource"]["S3DataSource"]["S3Uri"]
        for c in request["InputDataConfig"]
        if c["ChannelName"] == "code"
    )
    return Plan(
        request=request,
        mpirun=line,
        world_size=model_trainer.started_ranks(job),
        job_name=request["TrainingJobName"],
        code_uri=code,
        files=estimator.source_members(job),
        placeholders=captured.placeholders,
        notes=captured.notes,
        region=captured.region,
        api="model-trainer",
        channels=channels,
        forwarded=forwarded_credentials(line),
    )


class PlanRunner:
    """:class:`~smmpi.runners.base.Runner` that stops at the request: the dry run, offline."""

    name = "plan"

    def start(self, job: MPIJob, *, job_name: str | None = None) -> Plan:
        """The job's :class:`Plan`; ``job_name`` names its request (else the SDK's name)."""
        return plan(job, job_name=job_name)
