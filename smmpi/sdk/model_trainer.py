"""MPIJob -> the SDK's ``ModelTrainer`` (v2's ``sagemaker.modules.train``), and its request.

ModelTrainer does not use the toolkit's MPI runner. Its request runs ``/bin/bash -c
sm_train.sh`` from a channel of its own, ``sm_drivers``, which carries the SDK's MPI driver;
the code goes in a ``code`` channel. Both are uploaded by the SDK itself, so a dry run
records the uploads (and keeps a copy of what would go up) instead of making them.

The driver passes ``-np <processes per host>`` with ``--host algo-1:n,...``, which starts n
ranks, all on algo-1 (docs/TOOLKIT.md, "ModelTrainer's MPI driver"). smmpi adds
``-np N*n`` to ``mpi_additional_options``; Open MPI 4.1 takes the last ``-np``.
"""

from __future__ import annotations

import contextlib
import datetime
import itertools
import shutil
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from smmpi.aws.clients import no_metadata_lookups
from smmpi.aws.facts import SMMPI_TAG_KEY, SMMPI_TAG_VALUE
from smmpi.errors import SmmpiError
from smmpi.sdk.session import boto_session, import_sdk, quiet_core_loggers
from smmpi.sdk.settings import Settings, resolve_settings, restore_placeholders
from smmpi.spec import MPIJob

WORLD_FIX = (
    "smmpi added '-np {world}' to mpi_additional_options: the SDK's MPI driver passes "
    "'-np {ppn}' (the processes per host), which would start {ppn} rank(s) on algo-1 only; "
    "Open MPI 4.1 takes the last -np"
)
_ids = itertools.count()


@dataclass
class Captured:
    """What ModelTrainer sent: the request, and each uploaded channel's files (a copy)."""

    request: dict[str, Any]
    channels: dict[str, Path] = field(default_factory=dict)  # channel -> folder with its files
    notes: list[str] = field(default_factory=list)
    region: str | None = None
    placeholders: list[str] = field(default_factory=list)


def world_options(job: MPIJob) -> list[str]:
    """``mpi_additional_options``: the user's, then the ``-np`` that gives the whole world."""
    return [*job.mpi_argv, "-np", str(job.world_size)]


def _trainer(job: MPIJob, session: Any, settings: Settings, source: Path) -> Any:
    from sagemaker import image_uris
    from sagemaker.modules.configs import (
        CheckpointConfig,
        Compute,
        InputData,
        Networking,
        SourceCode,
        StoppingCondition,
        Tag,
    )
    from sagemaker.modules.distributed import MPI
    from sagemaker.modules.train.model_trainer import ModelTrainer

    quiet_core_loggers()  # after the import, which sets their levels
    image = image_uris.retrieve(
        str(job.framework),
        settings.region,
        version=job.framework_version,
        py_version=job.py_version,
        instance_type=job.instance_type,
        image_scope="training",
    )
    tags = [Tag(key=SMMPI_TAG_KEY, value=SMMPI_TAG_VALUE)]
    tags += [Tag(key=k, value=v) for k, v in job.tag_map.items() if k != SMMPI_TAG_KEY]
    compute = Compute(
        instance_type=job.instance_type,
        instance_count=job.instances,
        volume_size_in_gb=job.volume_size,
        enable_managed_spot_training=job.use_spot or None,
        keep_alive_period_in_seconds=job.keep_alive,
    )
    kwargs: dict[str, Any] = dict(
        training_image=image,
        role=settings.role,
        sagemaker_session=session,
        base_job_name=job.base_job_name or f"smmpi-{job.program.name}"[:39].rstrip("-"),
        source_code=SourceCode(source_dir=str(source), entry_script=job.program.script),
        compute=compute,
        distributed=MPI(process_count_per_node=job.ppn, mpi_additional_options=world_options(job)),
        hyperparameters=job.hyperparameter_map or None,
        environment=job.env_map or None,
        stopping_condition=StoppingCondition(
            max_runtime_in_seconds=job.max_run, max_wait_time_in_seconds=job.max_wait
        ),
        tags=tags,
    )
    if job.checkpoint_s3_uri:
        kwargs["checkpoint_config"] = CheckpointConfig(s3_uri=job.checkpoint_s3_uri)
    if job.input_map:
        kwargs["input_data_config"] = [
            InputData(channel_name=name, data_source=uri) for name, uri in job.input_map.items()
        ]
    if settings.subnets:
        kwargs["networking"] = Networking(
            subnets=list(settings.subnets), security_group_ids=list(settings.security_groups)
        )
    return ModelTrainer(**kwargs)


def source_folder(job: MPIJob, into: Path) -> Path:
    """The code channel's folder: exactly the program's files, as the estimator path packs."""
    folder = into / "code"
    for path, name in job.program.files():
        target = folder / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, target)
    return folder


@contextlib.contextmanager
def own_core_client() -> Iterator[None]:
    """sagemaker-core keeps one SageMaker client per process (``SageMakerClient`` is a
    singleton), made from the first session it saw. Each job gets one of its own session."""
    from sagemaker_core.main.utils import SageMakerClient, SingletonMeta

    SingletonMeta._instances.pop(SageMakerClient, None)
    try:
        yield
    finally:
        SingletonMeta._instances.pop(SageMakerClient, None)


@contextlib.contextmanager
def _answered(boto: Any, arn: str) -> Iterator[list[dict[str, Any]]]:
    """CreateTrainingJob recorded and answered here; the DescribeTrainingJob after it too."""
    from botocore.awsrequest import AWSResponse, HTTPHeaders

    seen: list[dict[str, Any]] = []
    events = boto._session  # clients made from this session afterwards copy its handlers
    uid = f"smmpi-mt-{next(_ids)}"

    def given(params: dict[str, Any], **_: Any) -> None:
        seen.append(dict(params))

    def created(**_: Any) -> tuple[Any, dict[str, Any]]:
        return AWSResponse("", 200, HTTPHeaders(), None), {"TrainingJobArn": arn}

    def described(**_: Any) -> tuple[Any, dict[str, Any]]:
        now = datetime.datetime.now(datetime.timezone.utc)
        answer = {**seen[-1], "TrainingJobArn": arn, "CreationTime": now}
        answer.update(TrainingJobStatus="InProgress", SecondaryStatus="Starting")
        return AWSResponse("", 200, HTTPHeaders(), None), answer

    hooks = [
        ("provide-client-params.sagemaker.CreateTrainingJob", given),
        ("before-call.sagemaker.CreateTrainingJob", created),
        ("before-call.sagemaker.DescribeTrainingJob", described),
    ]
    for event, handler in hooks:
        events.register(event, handler, unique_id=f"{uid}-{event}")
    try:
        yield seen
    finally:
        for event, _handler in hooks:
            events.unregister(event, unique_id=f"{uid}-{event}")


def _recording_uploads(session: Any, bucket: str, keep: Path) -> dict[str, Path]:
    """The session's uploads become copies under ``keep``; returns channel -> copy."""
    copies: dict[str, Path] = {}

    def upload_data(path: str, bucket: str, key_prefix: str, **_: Any) -> str:
        channel = key_prefix.rstrip("/").rsplit("/", 1)[-1]
        target = keep / "channels" / channel
        ignore = shutil.ignore_patterns("__pycache__")
        shutil.copytree(path, target, ignore=ignore) if Path(path).is_dir() else None
        copies[channel] = target
        return f"s3://{bucket}/{key_prefix}"

    session.upload_data = upload_data
    session.default_bucket = lambda: bucket
    return copies


def capture_offline(job: MPIJob, keep: Path) -> Captured:
    """The request ModelTrainer builds for ``job``, with no credentials and no network."""
    settings = resolve_settings(job, offline=True)
    boto = boto_session(settings, offline=True)
    arn = f"arn:aws:sagemaker:{settings.region}:000000000000:training-job/dry-run"
    with no_metadata_lookups(), tempfile.TemporaryDirectory(prefix="smmpi-mt-") as tmp:
        import_sdk()
        from sagemaker_core.helper.session_helper import Session

        session = Session(boto_session=boto, default_bucket=settings.bucket)
        copies = _recording_uploads(session, settings.bucket, keep)
        trainer = _trainer(job, session, settings, source_folder(job, Path(tmp)))
        with own_core_client(), _answered(boto, arn) as seen:
            trainer.train(wait=False, logs=False)
    if not seen:
        raise SmmpiError("ModelTrainer did not build a CreateTrainingJob request")
    request = restore_placeholders(seen[-1], settings.placeholders)
    notes = [*settings.notes, *job.notes, WORLD_FIX.format(world=job.world_size, ppn=job.ppn)]
    shown = sorted(set(settings.placeholders.values()))
    return Captured(request, copies, notes, settings.region, shown)
