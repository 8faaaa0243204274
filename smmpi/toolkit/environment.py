"""Each emulated instance's ``SM_*`` environment and config files, as the toolkit writes them.

The names and values follow sagemaker-training's ``environment.Environment``
(``to_env_vars``, ``dict(env)`` for ``SM_TRAINING_ENV``) so that a program
reading them behaves here as it will in the container. Paths differ only in
their root: ``/opt/ml`` becomes ``<run dir>/algo-k/opt/ml``.
"""

from __future__ import annotations

import json
import os
from typing import Any

from smmpi.toolkit.hosts import HostDirs
from smmpi.toolkit.images import num_gpus, num_neurons, toolkit_version
from smmpi.toolkit.shape import JobShape

GROUP = "homogeneousCluster"
NETWORK_INTERFACE = "eth0"  # what SageMaker's resourceconfig.json names
LOG_LEVEL = 20  # sagemaker_container_log_level as the SDK sets it (logging.INFO)


def _env_value(value: Any) -> str:
    """The toolkit's ``mapping.to_env_vars`` value formatting."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=True)


def resource_config(shape: JobShape, host: str) -> dict[str, Any]:
    """``resourceconfig.json``, which the toolkit also exports as ``SM_RESOURCE_CONFIG``."""
    return {
        "current_host": host,
        "current_instance_type": shape.instance_type,
        "current_group_name": "homogeneousCluster",
        "hosts": shape.hosts,
        "instance_groups": [
            {
                "instance_group_name": "homogeneousCluster",
                "instance_type": shape.instance_type,
                "hosts": shape.hosts,
            }
        ],
        "network_interface_name": "eth0",
    }


def input_data_config(shape: JobShape) -> dict[str, Any]:
    """``inputdataconfig.json``, which the toolkit also exports as ``SM_INPUT_DATA_CONFIG``."""
    return {
        name: ({"ContentType": ctype} if ctype else {})
        | {
            "TrainingInputMode": "File",
            "S3DistributionType": "FullyReplicated",
            "RecordWrapperType": "None",
        }
        for name, ctype in shape.channels.items()
    }


def _groups(shape: JobShape) -> dict[str, Any]:
    """The instance-group keys of a homogeneous cluster (``Environment``'s group properties)."""
    hosts = shape.hosts
    group = {"hosts": hosts, "instance_group_name": GROUP, "instance_type": shape.instance_type}
    return {
        "current_instance_group": GROUP,
        "current_instance_group_hosts": hosts,
        "distribution_hosts": hosts,
        "distribution_instance_groups": [GROUP],
        "instance_groups": [GROUP],
        "instance_groups_dict": {GROUP: group},
        "is_hetero": False,
    }


def _paths(dirs: HostDirs) -> dict[str, str]:
    return {
        "input_config_dir": str(dirs.config),
        "input_dir": str(dirs.input),
        "model_dir": str(dirs.model),
        "output_data_dir": str(dirs.output_data),
        "output_dir": str(dirs.output),
        "output_intermediate_dir": str(dirs.intermediate),
    }


def framework_params(shape: JobShape) -> dict[str, Any]:
    """``additional_framework_parameters``: the ``sagemaker_mpi_*`` hyperparameters."""
    return {
        "sagemaker_mpi_enabled": True,
        "sagemaker_mpi_num_of_processes_per_host": shape.ppn,
        "sagemaker_mpi_custom_mpi_options": shape.custom_mpi_options,
    }


def training_env(shape: JobShape, dirs: HostDirs, host: str) -> dict[str, Any]:
    """``SM_TRAINING_ENV``: ``dict(Environment())``, every public property of it."""
    return {
        "additional_framework_parameters": framework_params(shape),
        "channel_input_dirs": {name: str(dirs.channel(name)) for name in shape.channels},
        "current_host": host,
        "current_instance_type": shape.instance_type,
        "framework_module": shape.framework_module,
        "hosts": shape.hosts,
        "hyperparameters": shape.host_hyperparameters(dirs),
        "input_data_config": input_data_config(shape),
        "is_master": host == shape.hosts[0],
        # the toolkit's ``mp_parameters and mp_parameters != "{}"`` with no SM_HP_MP_PARAMETERS
        "is_modelparallel_enabled": None,
        "is_smddpmprun_installed": False,
        "is_smddprun_installed": False,
        "job_name": shape.job_name,
        "log_level": LOG_LEVEL,
        "master_hostname": shape.hosts[0],
        "module_dir": shape.module_dir or str(dirs.code),
        "module_name": shape.module_name,
        "network_interface_name": NETWORK_INTERFACE,
        "num_cpus": shape.num_cpus or os.cpu_count() or 1,
        "num_gpus": num_gpus(shape.instance_type),
        "num_neurons": num_neurons(shape.instance_type),
        "resource_config": resource_config(shape, host),
        "user_entry_point": shape.script,
        **_groups(shape),
        **_paths(dirs),
        **_since_5(shape),
    }


def _since_5(shape: JobShape) -> dict[str, Any]:
    """Keys toolkit 5 added: ``topology`` (GB200 UltraServers; ``[]`` elsewhere).

    The TensorFlow images run toolkit 4.8.3, which has no such property.
    """
    return {} if toolkit_version(shape.image).startswith("4.") else {"topology": []}


def sm_env(shape: JobShape, dirs: HostDirs, host: str) -> dict[str, str]:
    """The ``SM_*`` variables the toolkit exports on ``host`` (``Environment.to_env_vars``)."""
    te = training_env(shape, dirs, host)
    env: dict[str, Any] = {
        "hosts": te["hosts"],
        "network_interface_name": NETWORK_INTERFACE,
        "hps": te["hyperparameters"],
        "user_entry_point": shape.script,
        "framework_params": te["additional_framework_parameters"],
        "resource_config": te["resource_config"],
        "input_data_config": te["input_data_config"],
        "output_data_dir": te["output_data_dir"],
        "channels": sorted(te["channel_input_dirs"]),
        "current_host": host,
        "current_instance_type": shape.instance_type,
        **{k: te[k] for k in _groups(shape) if k != "distribution_hosts"},
        "module_name": shape.module_name,
        "log_level": LOG_LEVEL,
        "framework_module": shape.framework_module,
        "input_dir": te["input_dir"],
        "input_config_dir": te["input_config_dir"],
        "output_dir": te["output_dir"],
        "num_cpus": te["num_cpus"],
        "num_gpus": te["num_gpus"],
        "num_neurons": te["num_neurons"],
        "model_dir": te["model_dir"],
        "module_dir": te["module_dir"],
        "training_env": te,
        "user_args": shape.args(dirs),
        "output_intermediate_dir": te["output_intermediate_dir"],
    }
    for name, path in te["channel_input_dirs"].items():
        env[f"channel_{name}"] = path
    for key, value in te["hyperparameters"].items():
        env[f"hp_{key}"] = value
    return {f"SM_{k.upper()}": _env_value(v) for k, v in env.items()}


def hyperparameters_json(shape: JobShape) -> dict[str, str]:
    """``hyperparameters.json`` as the SDK's MPI estimators write it (values JSON-encoded).

    For a request the file is its HyperParameters; this builds the same keys
    for a job that has no request (``smmpi run``).
    """
    hps: dict[str, Any] = {"sagemaker_program": shape.script}
    if shape.module_dir:
        hps["sagemaker_submit_directory"] = shape.module_dir
    hps |= {"sagemaker_container_log_level": LOG_LEVEL, "sagemaker_job_name": shape.job_name}
    if shape.region:
        hps["sagemaker_region"] = shape.region
    hps |= framework_params(shape)
    hps |= shape.hyperparameters
    return {k: json.dumps(v) for k, v in hps.items()}
