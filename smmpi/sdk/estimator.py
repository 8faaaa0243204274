"""MPIJob -> SageMaker SDK v2 estimator (TensorFlow or PyTorch), and the request it sends.

This package is the only code that talks to the SDK, so a v3 ``ModelTrainer``
backend can be added beside it later. The source dir is packed here (entry
point + helper, nothing else) and the estimator is handed its S3 URI, so the
SDK uploads nothing on its own. Building offline (dry run) needs no
credentials and no network.
"""

from __future__ import annotations

import contextlib
import importlib
import logging
import re
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any, cast

from smmpi.archives import pack
from smmpi.aws.clients import no_metadata_lookups
from smmpi.aws.facts import SMMPI_TAG_KEY, SMMPI_TAG_VALUE
from smmpi.aws.record import hooked
from smmpi.errors import SmmpiError
from smmpi.sdk import warm
from smmpi.sdk.session import boto_session, import_sdk, sdk_session, share_default_session_loader
from smmpi.sdk.settings import (
    Settings,
    account_and_bucket,
    code_key,
    new_upload_id,
    resolve_settings,
    restore_placeholders,
)
from smmpi.spec import MPIJob

if TYPE_CHECKING:
    from smmpi.aws.types import Request

__all__ = [
    "Built",
    "Offline",
    "build",
    "capture_request",
    "offline_request",
    "pack_source",
    "restore_placeholders",
]


def generate_job_name(job: MPIJob, now: datetime | None = None) -> str:
    """``{base}-YYYY-mm-dd-HH-MM-SS-mmm`` as the SDK names jobs; base defaults to smmpi-ENTRY."""
    if job.job_name:
        return job.job_name
    base = job.base_job_name or default_base_name(job)
    now = now or datetime.now(timezone.utc)
    return f"{base}-{now:%Y-%m-%d-%H-%M-%S}-{now.microsecond // 1000:03d}"


def default_base_name(job: MPIJob) -> str:
    name = re.sub(r"[^a-zA-Z0-9-]+", "-", job.program.name).strip("-") or "job"
    return f"smmpi-{name}"[:39].rstrip("-")


def source_members(job: MPIJob) -> list[str]:
    """Archive names of the uploaded source dir, in order."""
    return [name for _, name in job.program.files()]


def pack_source(job: MPIJob) -> bytes:
    """``sourcedir.tar.gz`` of exactly the program's files, reproducible byte for byte."""
    return pack(job.program.files())


@dataclass
class Built:
    """An estimator ready for ``fit``, with everything decided around it."""

    job: MPIJob
    estimator: Any
    session: Any
    boto: Any
    settings: Settings
    job_name: str
    code_uri: str
    offline: bool


def build(
    job: MPIJob,
    *,
    offline: bool = False,
    job_name: str | None = None,
    settings: Settings | None = None,
    boto: Any = None,
) -> Built:
    """The TensorFlow/PyTorch estimator for ``job``.

    Offline (dry run), no credentials or network are used and missing settings
    are placeholders. Online, the account and default bucket are resolved
    through the configured endpoint (this is an STS call, nothing is created).
    """
    settings = settings or resolve_settings(job, offline=offline)
    boto = boto or boto_session(settings, offline=offline)
    if not offline:
        settings = account_and_bucket(settings, boto)
    name = job_name or generate_job_name(job)
    code_uri = f"s3://{settings.bucket}/{code_key(name, new_upload_id())}"
    with no_metadata_lookups() if offline else contextlib.nullcontext():
        session = sdk_session(settings, boto)
        estimator = _estimator(job, session, settings, code_uri)
    return Built(
        job=job,
        estimator=estimator,
        session=session,
        boto=boto,
        settings=settings,
        job_name=name,
        code_uri=code_uri,
        offline=offline,
    )


def _estimator(job: MPIJob, session: Any, settings: Settings, code_uri: str) -> Any:
    import_sdk()
    share_default_session_loader()
    module, name = (
        ("sagemaker.pytorch", "PyTorch")
        if job.framework == "pytorch"
        else ("sagemaker.tensorflow", "TensorFlow")
    )
    Estimator: Any = getattr(importlib.import_module(module), name)
    tags = [{"Key": SMMPI_TAG_KEY, "Value": SMMPI_TAG_VALUE}]
    tags += [{"Key": k, "Value": v} for k, v in job.tag_map.items() if k != SMMPI_TAG_KEY]
    kwargs: dict[str, Any] = dict(
        entry_point=job.program.script,
        source_dir=code_uri,
        role=settings.role,
        framework_version=job.framework_version,
        py_version=job.py_version,
        instance_count=job.instances,
        instance_type=job.instance_type,
        distribution=job.distribution,
        hyperparameters=job.hyperparameter_map or None,
        environment=job.env_map or None,
        metric_definitions=list(job.metric_definitions or ()) or None,
        max_run=job.max_run,
        volume_size=job.volume_size,
        tags=tags,
        output_path=job.output_path or f"s3://{settings.bucket}/",
        base_job_name=job.base_job_name or default_base_name(job),
        sagemaker_session=session,
        # The debugger hook and the profiler's ProfilerReport rule start extra
        # processing jobs and bill for them; an MPI program does not use them.
        debugger_hook_config=False,
        disable_profiler=True,
        encrypt_inter_container_traffic=job.encrypt_inter_container_traffic,
        enable_network_isolation=job.network_isolation,
        container_log_level=logging.INFO,
    )
    if job.use_spot:
        kwargs.update(use_spot_instances=True, max_wait=job.max_wait)
    if job.checkpoint_s3_uri:
        kwargs["checkpoint_s3_uri"] = job.checkpoint_s3_uri
    if job.keep_alive is not None:
        kwargs["keep_alive_period_in_seconds"] = job.keep_alive
    if settings.subnets:
        kwargs.update(
            subnets=list(settings.subnets), security_group_ids=list(settings.security_groups)
        )
    return Estimator(**kwargs)


def fit_inputs(job: MPIJob) -> dict[str, str] | None:
    """The ``inputs`` argument of the SDK's ``fit``: channel name -> s3:// URI, or None."""
    return job.input_map or None


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


def capture_request(built: Built, inputs: Any = None) -> Request:
    """The CreateTrainingJob parameters exactly as boto3 receives them, without sending them.

    ``estimator.fit`` runs for real; a hook on the client records the
    parameters (after botocore validated them against the API model) and
    answers in place of SageMaker. Offline placeholders are restored after.
    ``inputs`` are ``fit``'s (default: the job's channels).
    """
    arn = f"arn:aws:sagemaker:{built.settings.region}:000000000000:training-job/{built.job_name}"
    client = built.session.sagemaker_client
    with (
        hooked(client, "CreateTrainingJob", lambda params: {"TrainingJobArn": arn}) as seen,
        no_metadata_lookups() if built.offline else contextlib.nullcontext(),
    ):
        built.estimator.fit(
            inputs if inputs is not None else fit_inputs(built.job),
            wait=False,
            logs=False,
            job_name=built.job_name,
        )
    if not seen:
        raise SmmpiError("the SDK did not build a CreateTrainingJob request")
    return cast("Request", restore_placeholders(seen[-1], built.settings.placeholders))


@dataclass(frozen=True)
class Offline:
    """A request built offline, with what was decided around it."""

    request: Request
    job_name: str
    code_uri: str  # where the code goes (placeholders restored)
    settings: Settings


def build_offline(job: MPIJob, settings: Settings, job_name: str, local: bool) -> Offline:
    """The estimator's request for ``job``, offline; ``local``: ``file://`` channels as local
    mode carries them (:func:`local_inputs`)."""
    built = build(job, offline=True, job_name=job_name, settings=settings)
    inputs = local_inputs(job.inputs or None) if local else None
    request = capture_request(built, inputs)
    code_uri = restore_placeholders({"u": built.code_uri}, built.settings.placeholders)["u"]
    return Offline(request, built.job_name, code_uri, built.settings)


def offline_request(job: MPIJob, *, job_name: str | None = None, local: bool = False) -> Offline:
    """:func:`build_offline`, by the SDK kept imported when there is one (``SMMPI_WARM_SDK``:
    :mod:`smmpi.sdk.warm`), else here."""
    settings = resolve_settings(job, offline=True)
    name = job_name or generate_job_name(job)
    return warm.run(build_offline, job, settings, name, local)
