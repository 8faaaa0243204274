"""A ModelTrainer job's processes per host, read where its container reads them.

ModelTrainer (SDK v2's ``sagemaker.modules.train``, v3's ``sagemaker.train``) sends no MPI
hyperparameter: its MPI driver reads ``process_count_per_node`` from
``/opt/ml/input/data/sm_drivers/distributed.json``, a file the SDK uploads with the
``sm_drivers`` channel. ``status`` and ``logs`` read that one small object, so the request
stays the one the SDK built. An object that cannot be read (no permission, gone, too large,
not the driver's JSON) gives no answer, never an error.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from smmpi.aws.clients import split_s3
from smmpi.toolkit.driver_world import driver_np, short_world

if TYPE_CHECKING:
    from smmpi.aws.types import S3Client

#: A local job record's line on the short world its driver started (``as_sagemaker`` runs).
LOCAL_WORLD = "LocalShortWorld"
DRIVERS = "sm_drivers"
CONFIG = "distributed.json"
MOST = 64 * 1024  # the driver's file is a few hundred bytes


def drivers_uri(description: Mapping[str, Any]) -> str | None:
    """The ``sm_drivers`` channel's S3 URI of a job whose request starts its own container."""
    if not (description.get("AlgorithmSpecification") or {}).get("ContainerEntrypoint"):
        return None
    for channel in description.get("InputDataConfig") or []:
        if channel.get("ChannelName") == DRIVERS:
            source = (channel.get("DataSource") or {}).get("S3DataSource") or {}
            uri = source.get("S3Uri")
            return uri if isinstance(uri, str) and uri.startswith("s3://") else None
    return None


def _config(text: bytes | str) -> dict[str, Any] | None:
    try:
        data = json.loads(text)
    except ValueError:
        return None
    return data if isinstance(data, dict) else None


def processes_in(text: bytes | str | Mapping[str, Any] | None) -> int | None:
    """``process_count_per_node`` of the driver's ``distributed.json`` (None: not set or not it)."""
    data = text if isinstance(text, Mapping) or text is None else _config(text)
    count = data.get("process_count_per_node") if data is not None else None
    if isinstance(count, bool) or not isinstance(count, int) or count < 1:
        return None
    return count


def drivers_config(s3: S3Client, description: Mapping[str, Any]) -> dict[str, Any] | None:
    """A ModelTrainer job's ``distributed.json``, from its ``sm_drivers`` channel in S3."""
    uri = drivers_uri(description)
    if uri is None:
        return None
    from botocore.exceptions import BotoCoreError, ClientError  # (smmpi run needs no botocore)

    bucket, prefix = split_s3(uri)
    key = f"{prefix.rstrip('/')}/{CONFIG}" if prefix.strip("/") else CONFIG
    try:
        body = s3.get_object(Bucket=bucket, Key=key)["Body"]
        try:
            text = body.read(MOST + 1)
        finally:
            body.close()
    except (BotoCoreError, ClientError, OSError, ValueError):
        return None
    return _config(text) if len(text) <= MOST else None


def drivers_processes_per_host(s3: S3Client, description: Mapping[str, Any]) -> int | None:
    """The processes per host a ModelTrainer job's driver starts, from its channel in S3."""
    return processes_in(drivers_config(s3, description))


def drivers_world(s3: S3Client, description: Mapping[str, Any]) -> tuple[int | None, str | None]:
    """A ModelTrainer job's processes per host, and the line on the short world its driver's
    per-node ``-np`` starts (None: the whole world), from its channel in S3."""
    config = drivers_config(s3, description)
    ppn = processes_in(config)
    if config is None or ppn is None:
        return ppn, None
    instances = int((description.get("ResourceConfig") or {}).get("InstanceCount") or 1)
    return ppn, short_world(instances, ppn, driver_np(config), "model-trainer")
