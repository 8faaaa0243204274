"""MPIJob -> the SDK's ``ModelTrainer``, and the request it sends (``--api model-trainer``).

ModelTrainer does not use the toolkit's MPI runner. Its request runs ``/bin/bash -c
sm_train.sh`` from a channel of its own, ``sm_drivers``, which carries the SDK's MPI driver;
the code goes in a ``code`` channel. Both are uploaded by the SDK itself, so a dry run
records the uploads (and keeps a copy of what would go up) instead of making them
(:mod:`.trainer_capture`).

SDK v2's ``sagemaker.modules.train`` runs in this process. With ``$SMMPI_SDK3_PYTHON`` (the
interpreter of a venv with SDK v3, which cannot share a venv with v2), v3's
``sagemaker.train`` builds the request instead, in that interpreter; the spec and the request
cross as JSON.

The driver passes ``-np <processes per host>`` with ``--host algo-1:n,...``, which starts n
ranks, all on algo-1 (docs/TOOLKIT.md, "ModelTrainer's MPI driver"). smmpi adds
``-np N*n`` to ``mpi_additional_options``; Open MPI 4.1 takes the last ``-np``. With
``as_sagemaker`` it adds nothing: the job starts the ranks it would start on SageMaker.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from smmpi.aws.clients import no_metadata_lookups
from smmpi.aws.facts import SMMPI_TAG_KEY, SMMPI_TAG_VALUE
from smmpi.child import json_answer
from smmpi.errors import BadInput
from smmpi.sdk import trainer_capture, warm
from smmpi.sdk.session import boto_session, import_sdk
from smmpi.sdk.settings import Settings, resolve_settings, restore_placeholders
from smmpi.spec import MPIJob

SDK3_PYTHON = "SMMPI_SDK3_PYTHON"
WORLD_FIX = (
    "smmpi added '-np {world}' to mpi_additional_options: the SDK's MPI driver passes "
    "'-np {ppn}' (the processes per host), which would start {ppn} rank(s) on algo-1 only; "
    "Open MPI 4.1 takes the last -np"
)
AS_SAGEMAKER = (
    "the SDK's MPI driver's line runs unchanged (as_sagemaker): its '-np {ppn}' is per node, "
    "so the job starts {np} rank(s), as on SageMaker"
)


@dataclass
class Captured:
    """What ModelTrainer sent: the request, and each uploaded channel's files (a copy)."""

    request: dict[str, Any]
    channels: dict[str, Path] = field(default_factory=dict)  # channel -> folder with its files
    notes: list[str] = field(default_factory=list)
    region: str | None = None
    placeholders: list[str] = field(default_factory=list)
    sdk: str = "v2"


def world_options(job: MPIJob) -> list[str]:
    """``mpi_additional_options``: the user's, then the ``-np`` that gives the whole world
    (none with ``as_sagemaker``: the driver's own line)."""
    if job.as_sagemaker:
        return list(job.mpi_argv)
    return [*job.mpi_argv, "-np", str(job.world_size)]


def started_ranks(job: MPIJob) -> int:
    """The ranks the driver's line starts: N x n, or with ``as_sagemaker`` its own ``-np``
    (the processes per node, unless the user's options give another: Open MPI takes the last)."""
    words = ["-np", str(job.ppn), *world_options(job)]
    last = words[len(words) - 1 - words[::-1].index("-np") + 1]
    return min(job.world_size, int(last)) if last.isdigit() else job.world_size


def world_note(job: MPIJob) -> str:
    """What smmpi did to the driver's ``-np``, in one line."""
    if job.as_sagemaker:
        return AS_SAGEMAKER.format(ppn=job.ppn, np=started_ranks(job))
    return WORLD_FIX.format(world=job.world_size, ppn=job.ppn)


def image_of(job: MPIJob, region: str) -> str:
    """The same training image the estimator path uses for this framework and version."""
    import_sdk()
    from sagemaker import image_uris

    image: str = image_uris.retrieve(
        str(job.framework),
        region,
        version=job.framework_version,
        py_version=job.py_version,
        instance_type=job.instance_type,
        image_scope="training",
    )
    return image


def trainer_spec(job: MPIJob, settings: Settings, source_dir: Path) -> dict[str, Any]:
    """Everything ModelTrainer is given, as JSON-able data (either SDK builds from it)."""
    tags = [(SMMPI_TAG_KEY, SMMPI_TAG_VALUE)]
    tags += [(k, v) for k, v in job.tag_map.items() if k != SMMPI_TAG_KEY]
    return {
        "image": image_of(job, settings.region),
        "role": settings.role,
        "bucket": settings.bucket,
        "region": settings.region,
        "base_job_name": job.base_job_name or f"smmpi-{job.program.name}"[:39].rstrip("-"),
        "source_dir": str(source_dir),
        "entry_script": job.program.script,
        "instance_type": job.instance_type,
        "instance_count": job.instances,
        "volume_size": job.volume_size,
        "use_spot": job.use_spot,
        "keep_alive": job.keep_alive,
        "ppn": job.ppn,
        "mpi_options": world_options(job),
        "hyperparameters": job.hyperparameter_map,
        "environment": job.env_map,
        "metric_definitions": list(job.metric_definitions or ()),
        "max_run": job.max_run,
        "max_wait": job.max_wait,
        "tags": tags,
        "checkpoint_s3_uri": job.checkpoint_s3_uri,
        "inputs": {name: _for_sdk(name, uri) for name, uri in job.input_map.items()},
        "output_path": job.output_path,
        "encrypt_inter_container_traffic": job.encrypt_inter_container_traffic,
        "network_isolation": job.network_isolation,
        "subnets": list(settings.subnets),
        "security_groups": list(settings.security_groups),
    }


#: A ``file://`` channel (a local run's) as ModelTrainer takes it: an S3 URI, which the request
#: then carries back as the ``file://`` URI, as the estimators' local requests do (the SDK
#: refuses ``file://``, and would upload a plain path).
_LOCAL_CHANNEL = "s3://smmpi-local-channel/{name}"


def _for_sdk(name: str, uri: str) -> str:
    return _LOCAL_CHANNEL.format(name=name) if uri.startswith("file://") else uri


def local_channels(job: MPIJob) -> dict[str, str]:
    """Stand-in URI -> ``file://`` URI, for each of the job's local channels."""
    return {
        _LOCAL_CHANNEL.format(name=name): uri
        for name, uri in job.input_map.items()
        if uri.startswith("file://")
    }


def source_folder(job: MPIJob, into: Path) -> Path:
    """The code channel's folder: exactly the program's files, as the estimator path packs."""
    folder = into / "code"
    for path, name in job.program.files():
        target = folder / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, target)
    return folder


def check_v2_networking(job: MPIJob, settings: Settings) -> None:
    """SDK v2's ``Networking`` (sagemaker_core's ``VpcConfig``) requires subnets and security
    groups, so v2's ModelTrainer cannot isolate or encrypt a job outside a VPC."""
    for name in ("network_isolation", "encrypt_inter_container_traffic"):
        if getattr(job, name) and not settings.subnets:
            raise BadInput(
                name,
                True,
                "with api model-trainer, only in a VPC (subnets and security groups: SDK v2's "
                f"ModelTrainer needs one), with SDK v3 (${SDK3_PYTHON}), or with api estimator",
            )


def _in_sdk3(
    python: str, spec: dict[str, Any], keep: Path
) -> tuple[dict[str, Any], dict[str, Path]]:
    capture = Path(trainer_capture.__file__)
    argv = [python, "-I", "-B", str(capture), str(keep)]
    out = json_answer(argv, spec, 300, f"SDK v3's ModelTrainer ({python}) built no request")
    if out.get("sdk") != "v3":
        raise BadInput(SDK3_PYTHON, python, "the Python of a venv with sagemaker 3.x")
    return out["request"], {k: Path(v) for k, v in out["channels"].items()}


def capture_offline(job: MPIJob, keep: Path) -> Captured:
    """The request ModelTrainer builds for ``job``, with no credentials and no network (by the
    SDK kept imported when there is one: :mod:`smmpi.sdk.warm`)."""
    return capture(job, keep, resolve_settings(job, offline=True))


def capture(job: MPIJob, keep: Path, settings: Settings) -> Captured:
    """:func:`capture_here`, by the SDK kept imported when there is one (``SMMPI_WARM_SDK``)."""
    return warm.run(capture_here, job, keep, settings)


def capture_here(job: MPIJob, keep: Path, settings: Settings) -> Captured:
    """The request ModelTrainer's ``train`` sends for ``job`` with ``settings``, and a copy of
    each channel it uploads (under ``keep``). The SDK runs offline either way: its session
    refuses every HTTP request, so building the request creates nothing (a submit sends it
    and uploads the copies itself, :mod:`smmpi.runners.sagemaker.trainer`)."""
    sdk3 = os.environ.get(SDK3_PYTHON)
    if not sdk3:
        check_v2_networking(job, settings)
    with no_metadata_lookups(), tempfile.TemporaryDirectory(prefix="smmpi-mt-") as tmp:
        spec = trainer_spec(job, settings, source_folder(job, Path(tmp)))
        if sdk3:
            request, copies = _in_sdk3(sdk3, spec, keep)
        else:
            boto = boto_session(settings, offline=True)
            request, copies = trainer_capture.capture(spec, boto, keep)
    notes = [*settings.notes, *job.notes, world_note(job)]
    if sdk3:
        notes.append(f"built by SDK v3's ModelTrainer (sagemaker.train) in {sdk3}")
    request = restore_placeholders(request, local_channels(job))
    return Captured(
        restore_placeholders(request, settings.placeholders),
        copies,
        notes,
        settings.region,
        sorted(set(settings.placeholders.values())),
        "v3" if sdk3 else "v2",
    )
