"""The world the SDK's MPI drivers start: ``-np`` per node, as SageMaker runs it.

ModelTrainer's ``mpi_driver.py`` and ``@remote(use_mpirun=True)``'s job script both run
``mpirun --host algo-1:n,...,algo-N:n -np n``: ``n`` is the processes per node, so Open MPI
fills algo-1's ``n`` slots and starts nothing on the other instances. On SageMaker such a job
completes with ``n`` ranks. smmpi says so in one line, with the fix for each API.

The driver reads the ``sm_drivers`` channel: ``distributed.json`` (processes per node, the
extra mpirun options) and ``sourcecode.json`` (the entry script); a local run reads them as
the driver does, for the job's N x n.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from smmpi.errors import BadInput
from smmpi.toolkit.hosts import host_name
from smmpi.toolkit.shape import JobShape

DRIVERS = "sm_drivers"

#: The fix of each API that runs the driver's line: where a whole world's ``-np`` goes.
FIX = {
    "model-trainer": "for all {world}, add '-np {world}' to MPI(mpi_additional_options=...)",
    "remote": "@remote's job script always runs -np nproc_per_node (none of its settings "
    "starts all {world})",
}


def driver_np(distributed: Mapping[str, Any]) -> int | None:
    """The ``-np`` ModelTrainer's driver line ends with (``distributed.json``): its own
    (``process_count_per_node``, 1 when unset), unless ``mpi_additional_options`` give
    another (Open MPI takes the last). None: a value that is no count."""
    words = ["-np", str(distributed.get("process_count_per_node") or 1)]
    words += [str(w) for w in distributed.get("mpi_additional_options") or []]
    try:
        last = words[len(words) - 1 - words[::-1].index("-np") + 1]
        return int(last)
    except (IndexError, ValueError):
        return None


def started_hosts(np: int, ppn: int, instances: int) -> list[str]:
    """The instances ``-np np`` fills, slot by slot, with ``--host algo-k:ppn``."""
    count = min(instances, max(1, -(-np // max(1, ppn))))
    return [host_name(i) for i in range(count)]


def short_world(instances: int, ppn: int, np: int | None, api: str) -> str | None:
    """One line for a driver line whose ``-np`` starts fewer ranks than ``instances`` x
    ``ppn`` (None: the whole world, or a count not known)."""
    world = instances * ppn
    if np is None or np >= world:
        return None
    hosts = started_hosts(np, ppn, instances)
    on = f"{hosts[0]} only" if len(hosts) == 1 else "on " + ", ".join(hosts)
    fix = FIX.get(api, FIX["model-trainer"]).format(world=world)
    return (
        f"the SDK's MPI driver runs mpirun -np {np} (its -np is per node), so {np} of "
        f"{instances} x {ppn} = {world} ranks started ({on}), as on SageMaker; "
        f"{fix}"
    )


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


REMOTE_FUNCTION = "sagemaker_remote_function_bootstrap"  # @remote's job script and bootstrap


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


def remote_shape(request: Mapping[str, Any]) -> JobShape:
    """``@remote``'s N x n: the request's instances, its job script's processes per node
    (which its mpirun gives ``-np``: SageMaker's short world)."""
    try:
        instances = int(request["ResourceConfig"]["InstanceCount"])
    except (ValueError, KeyError, TypeError) as err:
        raise BadInput("request", f"missing {err}", "an @remote request") from None
    resources = request["ResourceConfig"]
    return JobShape(
        job_name=str(request.get("TrainingJobName", "local-job")),
        script=f"{REMOTE_FUNCTION}/job_driver.sh",
        instances=instances,
        ppn=remote_ppn(request),
        channels={str(c["ChannelName"]): "" for c in request.get("InputDataConfig") or []},
        environment={str(k): str(v) for k, v in (request.get("Environment") or {}).items()},
        instance_type=str(resources.get("InstanceType", "local")),
        image=str(request["AlgorithmSpecification"].get("TrainingImage", "")),
        toolkit_tags=False,
    )
