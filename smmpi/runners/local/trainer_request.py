"""What a ModelTrainer request tells its container: where its drivers are, and its N x n.

The SDK's MPI driver reads the ``sm_drivers`` channel: ``distributed.json`` (processes per
node, the extra mpirun options) and ``sourcecode.json`` (the entry script). The local run
reads them as the driver does, to say the job's world and name a short one.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from smmpi.errors import BadInput
from smmpi.toolkit.shape import JobShape

DRIVERS = "sm_drivers"


def channel_source(request: Mapping[str, Any], name: str, channels: Mapping[str, Path]) -> Path:
    """Where channel ``name`` is read from here: ``channels``' folder, else a file:// URI."""
    if name in channels:
        return Path(channels[name])
    for spec in request.get("InputDataConfig") or []:
        uri = str(((spec.get("DataSource") or {}).get("S3DataSource") or {}).get("S3Uri", ""))
        if spec.get("ChannelName") == name and uri.startswith("file://"):
            return Path(urlparse(uri).path)
    raise BadInput(f"InputDataConfig.{name}", "not readable here", "the SDK's sm_drivers channel")


def distributed_config(drivers: Path) -> dict[str, Any]:
    """The driver's ``distributed.json`` in the ``sm_drivers`` channel, checked."""
    try:
        data = json.loads((drivers / "distributed.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        raise BadInput(
            "sm_drivers/distributed.json", str(drivers), "ModelTrainer's distributed=MPI(...)"
        ) from None
    if not isinstance(data, dict) or "mpi_additional_options" not in data:
        raise BadInput("sm_drivers/distributed.json", data, "ModelTrainer's distributed=MPI(...)")
    return data


def trainer_shape(request: Mapping[str, Any], drivers: Path) -> JobShape:
    """The job's N x n as the driver reads it: InstanceCount, and ``process_count_per_node``
    (the driver's ``get_process_count``: 1 on an instance without GPUs when unset)."""
    distributed = distributed_config(drivers)
    try:
        source = json.loads((drivers / "sourcecode.json").read_text(encoding="utf-8"))
        instances = int(request["ResourceConfig"]["InstanceCount"])
    except (OSError, ValueError, KeyError, TypeError) as err:
        raise BadInput("request", f"missing {err}", "a ModelTrainer request") from None
    resources = request["ResourceConfig"]
    return JobShape(
        job_name=str(request.get("TrainingJobName", "local-job")),
        script=str(source.get("entry_script") or ""),
        instances=instances,
        ppn=int(distributed.get("process_count_per_node") or 1),
        channels={
            str(c["ChannelName"]): str(c.get("ContentType") or "")
            for c in request.get("InputDataConfig") or []
        },
        environment={str(k): str(v) for k, v in (request.get("Environment") or {}).items()},
        instance_type=str(resources.get("InstanceType", "local")),
        image=str(request["AlgorithmSpecification"].get("TrainingImage", "")),
        toolkit_tags=False,
    )
