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
from smmpi.toolkit.shape import JobShape


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


def sm_env(shape: JobShape, dirs: HostDirs, host: str) -> dict[str, str]:
    """The ``SM_*`` variables the toolkit exports to every process on ``host``."""
    hosts = shape.hosts
    num_cpus = shape.num_cpus or os.cpu_count() or 1
    channel_dirs = {name: str(dirs.channel(name)) for name in shape.channels}
    framework_params = {
        "sagemaker_mpi_enabled": True,
        "sagemaker_mpi_num_of_processes_per_host": shape.ppn,
        "sagemaker_mpi_custom_mpi_options": shape.custom_mpi_options,
    }
    resource = resource_config(shape, host)
    input_data = input_data_config(shape)
    training_env: dict[str, Any] = {
        "additional_framework_parameters": framework_params,
        "channel_input_dirs": channel_dirs,
        "current_host": host,
        "current_instance_type": shape.instance_type,
        "framework_module": shape.framework_module,
        "hosts": hosts,
        "hyperparameters": shape.host_hyperparameters(dirs),
        "input_config_dir": str(dirs.config),
        "input_data_config": input_data,
        "input_dir": str(dirs.input),
        "is_master": host == hosts[0],
        "job_name": shape.job_name,
        "log_level": 20,
        "master_hostname": hosts[0],
        "model_dir": str(dirs.model),
        "module_dir": shape.module_dir or str(dirs.code),
        "module_name": shape.module_name,
        "network_interface_name": "eth0",
        "num_cpus": num_cpus,
        "num_gpus": 0,
        "output_data_dir": str(dirs.output_data),
        "output_dir": str(dirs.output),
        "output_intermediate_dir": str(dirs.intermediate),
        "resource_config": resource,
        "user_entry_point": shape.script,
    }
    env: dict[str, Any] = {
        "hosts": hosts,
        "network_interface_name": "eth0",
        "hps": shape.host_hyperparameters(dirs),
        "user_entry_point": shape.script,
        "framework_params": framework_params,
        "resource_config": resource,
        "input_data_config": input_data,
        "output_data_dir": str(dirs.output_data),
        "channels": sorted(channel_dirs),
        "current_host": host,
        "current_instance_type": shape.instance_type,
        "current_instance_group": "homogeneousCluster",
        "current_instance_group_hosts": hosts,
        "instance_groups": ["homogeneousCluster"],
        "instance_groups_dict": {
            "homogeneousCluster": {
                "instance_group_name": "homogeneousCluster",
                "instance_type": shape.instance_type,
                "hosts": hosts,
            }
        },
        "distribution_instance_groups": ["homogeneousCluster"],
        "is_hetero": False,
        "module_name": shape.module_name,
        "log_level": 20,
        "framework_module": shape.framework_module,
        "input_dir": str(dirs.input),
        "input_config_dir": str(dirs.config),
        "output_dir": str(dirs.output),
        "num_cpus": num_cpus,
        "num_gpus": 0,
        "num_neurons": 0,
        "model_dir": str(dirs.model),
        "module_dir": shape.module_dir or str(dirs.code),
        "training_env": training_env,
        "user_args": shape.args(dirs),
        "output_intermediate_dir": str(dirs.intermediate),
    }
    for name, path in channel_dirs.items():
        env[f"channel_{name}"] = path
    for key, value in shape.host_hyperparameters(dirs).items():
        env[f"hp_{key}"] = value
    return {f"SM_{k.upper()}": _env_value(v) for k, v in env.items()}
