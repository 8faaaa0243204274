"""What a request with its own container start tells it: its drivers, and its N x n.

The SDK's MPI driver reads the ``sm_drivers`` channel: ``distributed.json`` (processes per
node, the extra mpirun options) and ``sourcecode.json`` (the entry script). ``@remote``'s job
script (the ``sagemaker_remote_function_bootstrap`` channel) takes its processes per node
from ``--user_nproc_per_node`` in ``ContainerArguments``. The local run reads them as the
drivers do, to say the job's world and name a short one.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from smmpi.errors import BadInput
from smmpi.toolkit.driver_world import driver_np
from smmpi.toolkit.shape import JobShape

DRIVERS = "sm_drivers"
REMOTE_FUNCTION = "sagemaker_remote_function_bootstrap"  # @remote's job script and bootstrap


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


def is_remote_function(request: Mapping[str, Any]) -> bool:
    """``@remote``'s request: its job script comes in the bootstrap channel."""
    channels = request.get("InputDataConfig") or []
    return any(c.get("ChannelName") == REMOTE_FUNCTION for c in channels)


def remote_ppn(request: Mapping[str, Any]) -> int:
    """``@remote``'s processes per node: ``--user_nproc_per_node``, else (as its bootstrap
    does, where the instance has no GPU) the instance's CPUs, here this machine's."""
    args = [str(a) for a in request["AlgorithmSpecification"].get("ContainerArguments") or []]
    if "--user_nproc_per_node" in args[:-1]:
        value = args[args.index("--user_nproc_per_node") + 1]
        if not value.isdigit() or int(value) < 1:
            raise BadInput("ContainerArguments --user_nproc_per_node", value, "a count >= 1")
        return int(value)
    return len(os.sched_getaffinity(0))


def driver_world(
    request: Mapping[str, Any], channels: Mapping[str, Path]
) -> tuple[JobShape, int | None, str]:
    """The job's N x n, the ``-np`` its driver's mpirun runs, and the API (for the fix)."""
    if not is_remote_function(request):
        drivers = channel_source(request, DRIVERS, channels)
        np = driver_np(distributed_config(drivers))
        return trainer_shape(request, drivers), np, "model-trainer"
    try:
        instances = int(request["ResourceConfig"]["InstanceCount"])
    except (ValueError, KeyError, TypeError) as err:
        raise BadInput("request", f"missing {err}", "an @remote request") from None
    ppn = remote_ppn(request)
    resources = request["ResourceConfig"]
    shape = JobShape(
        job_name=str(request.get("TrainingJobName", "local-job")),
        script=f"{REMOTE_FUNCTION}/job_driver.sh",
        instances=instances,
        ppn=ppn,
        channels={str(c["ChannelName"]): "" for c in request.get("InputDataConfig") or []},
        environment={str(k): str(v) for k, v in (request.get("Environment") or {}).items()},
        instance_type=str(resources.get("InstanceType", "local")),
        image=str(request["AlgorithmSpecification"].get("TrainingImage", "")),
        toolkit_tags=False,
    )
    return shape, ppn, "remote"  # its job script's mpirun: -np SM_NPROC_PER_NODE
