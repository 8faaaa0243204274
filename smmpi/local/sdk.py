"""The seam between the SageMaker SDK and local mode.

The estimator is built exactly as for SageMaker (:func:`smmpi.estimator.build`)
and ``fit`` runs the SDK's own code end to end. Only the last step changes:
the CreateTrainingJob call is answered here, by running the request with
:func:`smmpi.local.job.run_request`, instead of by AWS. DescribeTrainingJob is
answered from the local job's record, so ``fit(wait=True)`` ends with the
local job's status. This is the SDK's ``LocalSession`` idea with its Docker
step replaced, but without its changes to the request (``instance_type``
``"local"``, ``file://`` code), so the request that runs here is the one
SageMaker would receive.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from smmpi.errors import SmmpiError
from smmpi.local.job import LocalJob, run_request

if TYPE_CHECKING:
    from smmpi.estimator import Built
    from smmpi.spec import MPIJob

# provide-client-params sees the API parameters (after validation); before-call is where an
# answer short-circuits the HTTP request.
_CREATE_PARAMS = "provide-client-params.sagemaker.CreateTrainingJob"
_DESCRIBE_PARAMS = "provide-client-params.sagemaker.DescribeTrainingJob"
_CREATE = "before-call.sagemaker.CreateTrainingJob"
_DESCRIBE = "before-call.sagemaker.DescribeTrainingJob"


class LocalJobFailed(SmmpiError):
    """The local job ended Failed or Stopped (exit code 1)."""


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


class LocalBackend:
    """Answers an SDK session's CreateTrainingJob/DescribeTrainingJob calls with local runs."""

    def __init__(
        self,
        built: Built,
        *,
        timeout: float | None = None,
        log_dir: str | Path | None = None,
        keep: bool = True,
        out: IO[str] | None = None,
        err: IO[str] | None = None,
        install_requirements: bool = False,
    ) -> None:
        from smmpi.estimator import pack_source

        self.built = built
        self.source = pack_source(built.job)  # the very bytes `submit` uploads
        self.timeout, self.log_dir, self.keep, self.out, self.err = timeout, log_dir, keep, out, err
        self.install_requirements = install_requirements
        self.jobs: dict[str, LocalJob] = {}
        self.requests: list[dict[str, Any]] = []
        self._pending: dict[str, dict[str, Any]] = {}

    def _remember(self, operation: str) -> Any:
        def handler(params: dict[str, Any], **kwargs: Any) -> None:
            import copy

            self._pending[operation] = copy.deepcopy(params)

        return handler

    def _response(self, parsed: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
        from botocore.awsrequest import AWSResponse, HTTPHeaders

        return AWSResponse("", 200, HTTPHeaders(), None), parsed

    def create(self, **kwargs: Any) -> tuple[Any, dict[str, Any]]:
        from smmpi.estimator import restore_placeholders

        params = self._pending.pop("create")
        request = restore_placeholders(params, self.built.settings.placeholders)
        self.requests.append(request)
        job = run_request(
            request,
            self.source,
            timeout=self.timeout,
            log_dir=self.log_dir,
            keep=self.keep,
            region=self.built.settings.region,
            out=self.out,
            err=self.err,
            install_requirements=self.install_requirements,
        )
        self.jobs[job.name] = job
        return self._response({"TrainingJobArn": job.record["TrainingJobArn"]})

    def describe(self, **kwargs: Any) -> tuple[Any, dict[str, Any]]:
        name = self._pending.pop("describe")["TrainingJobName"]
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
        return self._response(describe_response(self.jobs[name].record))

    def attach(self) -> None:
        events = self.built.session.sagemaker_client.meta.events
        events.register(_CREATE_PARAMS, self._remember("create"), unique_id="smmpi-local-cp")
        events.register(_DESCRIBE_PARAMS, self._remember("describe"), unique_id="smmpi-local-dp")
        events.register(_CREATE, self.create, unique_id="smmpi-local-create")
        events.register(_DESCRIBE, self.describe, unique_id="smmpi-local-describe")

    def detach(self) -> None:
        events = self.built.session.sagemaker_client.meta.events
        events.unregister(_CREATE_PARAMS, unique_id="smmpi-local-cp")
        events.unregister(_DESCRIBE_PARAMS, unique_id="smmpi-local-dp")
        events.unregister(_CREATE, unique_id="smmpi-local-create")
        events.unregister(_DESCRIBE, unique_id="smmpi-local-describe")

    @contextlib.contextmanager
    def attached(self) -> Iterator[LocalBackend]:
        self.attach()
        try:
            yield self
        finally:
            self.detach()


def local_inputs(inputs: Any) -> Any:
    """``file://`` channels as the API can carry them: an S3DataSource whose URI is local.

    The SDK turns a ``file://`` string into ``FileDataSource``, which only its
    Docker local mode accepts (botocore refuses it). Local mode here reads the
    URI back from ``S3Uri`` and copies the folder into every host.
    """
    if isinstance(inputs, str) and inputs.startswith("file://"):
        inputs = {"training": inputs}
    if not isinstance(inputs, dict):
        return inputs
    from sagemaker.inputs import TrainingInput

    return {
        name: TrainingInput(s3_data=uri)
        if isinstance(uri, str) and uri.startswith("file://")
        else uri
        for name, uri in inputs.items()
    }


def local_estimator(job: MPIJob, *, job_name: str | None = None, **options: Any) -> Any:
    """The job's SageMaker estimator, whose ``fit`` runs the job here.

    Output streams live while the job runs, so ``fit`` defaults to
    ``logs=False`` (the SDK would otherwise wait 10 s for CloudWatch).
    """
    from smmpi.estimator import build

    built = build(job, offline=True, job_name=job_name)
    backend = LocalBackend(built, **options)
    backend.attach()
    estimator = built.estimator
    sdk_fit = estimator.fit

    def fit(inputs: Any = None, *args: Any, logs: Any = False, **kwargs: Any) -> Any:
        kwargs.setdefault("job_name", built.job_name)
        return sdk_fit(local_inputs(inputs), *args, logs=logs, **kwargs)

    estimator.fit = fit
    estimator.smmpi_local_backend = backend
    return estimator


def submit_local(job: MPIJob, *, job_name: str | None = None, **options: Any) -> LocalJob:
    """``submit --local``: the SDK's ``fit`` with the job run here; returns the local job."""
    from smmpi.estimator import build, no_metadata_lookups

    built = build(job, offline=True, job_name=job_name)
    backend = LocalBackend(built, **options)
    with backend.attached(), no_metadata_lookups():
        built.estimator.fit(
            local_inputs(job.inputs or None), wait=False, logs=False, job_name=built.job_name
        )
    if built.job_name not in backend.jobs:
        raise SmmpiError("the SDK did not send a CreateTrainingJob request")
    return backend.jobs[built.job_name]
