"""The container's reading of a CreateTrainingJob request: hosts, processes, program, arguments.

Pure functions of the request, as the sagemaker-training toolkit
(``sagemaker_training`` 5.x: ``environment.py``, ``mapping.py``) derives them
on each instance from the hyperparameters, ``ResourceConfig`` and channels.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

SAGEMAKER_PREFIX = "sagemaker_"
MPI_PROCESSES_PER_HOST = "sagemaker_mpi_num_of_processes_per_host"
MPI_NUM_PROCESSES = "sagemaker_mpi_num_processes"
MPI_CUSTOM_OPTIONS = "sagemaker_mpi_custom_mpi_options"


def decode_hyperparameters(request: Mapping[str, Any]) -> dict[str, Any]:
    """HyperParameters as the container reads them: each value JSON-decoded when it can be."""
    out: dict[str, Any] = {}
    for key, value in (request.get("HyperParameters") or {}).items():
        try:
            out[key] = json.loads(value)
        except (TypeError, ValueError):
            out[key] = value
    return out


def user_hyperparameters(request: Mapping[str, Any]) -> dict[str, Any]:
    """The program's own hyperparameters (SM_HPS, SM_HP_*, argv): all but ``sagemaker_*``."""
    return {
        k: v
        for k, v in decode_hyperparameters(request).items()
        if not k.startswith(SAGEMAKER_PREFIX)
    }


def framework_params(request: Mapping[str, Any]) -> dict[str, Any]:
    """SM_FRAMEWORK_PARAMS: the ``sagemaker_*`` hyperparameters the toolkit does not consume."""
    consumed = {
        "sagemaker_program",
        "sagemaker_submit_directory",
        "sagemaker_enable_cloudwatch_metrics",
        "sagemaker_region",
        "sagemaker_container_log_level",
        "sagemaker_job_name",
        "sagemaker_default_module_name",
        "sagemaker_tuning_objective_metric",
        "sagemaker_s3_output",
    }
    return {
        k: v
        for k, v in decode_hyperparameters(request).items()
        if k.startswith(SAGEMAKER_PREFIX) and k not in consumed
    }


def hosts(request: Mapping[str, Any]) -> list[str]:
    """algo-1..algo-N, as SageMaker names the instances."""
    count = int(request["ResourceConfig"]["InstanceCount"])
    return [f"algo-{i}" for i in range(1, count + 1)]


def processes_per_host(request: Mapping[str, Any]) -> int:
    """sagemaker_mpi_num_of_processes_per_host (the toolkit's CPU default is 1)."""
    return int(decode_hyperparameters(request).get(MPI_PROCESSES_PER_HOST) or 1)


def world_size(request: Mapping[str, Any]) -> int:
    hp = decode_hyperparameters(request)
    explicit = hp.get(MPI_NUM_PROCESSES)
    return int(explicit) if explicit else processes_per_host(request) * len(hosts(request))


def program(request: Mapping[str, Any]) -> str:
    """The entry point as the container runs it, from /opt/ml/code."""
    return str(decode_hyperparameters(request)["sagemaker_program"])


def program_args(request: Mapping[str, Any]) -> list[str]:
    """Arguments after the script: ``--key value`` for each user hyperparameter, sorted by key."""
    return hyperparameter_args(user_hyperparameters(request))


def hyperparameter_args(hps: dict[str, Any]) -> list[str]:
    """The toolkit's ``mapping.to_cmd_args`` of the user hyperparameters."""
    args: list[str] = []
    for key in sorted(hps):
        args.append(f"--{key}" if len(key) > 1 else f"-{key}")
        value = hps[key]
        if isinstance(value, dict):
            args.append(",".join(f"{k}={v}" for k, v in sorted(value.items())))
        else:
            args.append("" if value is None else str(value))
    return args


def channels(request: Mapping[str, Any]) -> list[str]:
    return [str(c["ChannelName"]) for c in request.get("InputDataConfig") or []]
