"""Each emulated instance's ``/opt/ml`` tree and the ``SM_*`` environment its ranks see.

The names and values follow sagemaker-training's ``environment.Environment``
(``to_env_vars``, ``dict(env)`` for ``SM_TRAINING_ENV``) so that a program
reading them behaves here as it will in the container. Paths differ only in
their root: ``/opt/ml`` becomes ``<run dir>/algo-k/opt/ml``.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

CONTAINER_ROOT = "/opt/ml"


def host_name(index: int) -> str:
    """SageMaker's name for the index-th (0-based) instance of a job."""
    return f"algo-{index + 1}"


def host_of_rank(rank: int, ppn: int, instances: int) -> str:
    """The instance a rank runs on: the container maps ranks by slot (``-map-by slot``)."""
    return host_name(min(rank // ppn, instances - 1))


def on_host(value: Any, dirs: HostDirs | None) -> Any:
    """A value naming a container path (``/opt/ml/...``) as that path on an emulated host."""
    if dirs is None or not isinstance(value, str):
        return value
    if value == CONTAINER_ROOT or value.startswith(CONTAINER_ROOT + "/"):
        return str(dirs.root) + value[len(CONTAINER_ROOT) :]
    return value


def _env_value(value: Any) -> str:
    """The toolkit's ``mapping.to_env_vars`` value formatting."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=True)


@dataclass(frozen=True)
class JobShape:
    """What every emulated host needs to know about the job."""

    job_name: str
    script: str  # sagemaker_program, relative to the code dir
    instances: int
    ppn: int
    hyperparameters: Mapping[str, Any] = field(default_factory=dict)  # user-visible (SM_HPS)
    user_args: Sequence[str] = ()  # the script's arguments (the request's: plan.program_args)
    custom_mpi_options: str = ""
    channels: Mapping[str, str] = field(default_factory=dict)  # name -> content type or ""
    environment: Mapping[str, str] = field(default_factory=dict)  # the job's Environment
    instance_type: str = "local"
    num_cpus: int = 0  # 0: this machine's
    module_dir: str = ""
    framework_module: str | None = None

    @property
    def hosts(self) -> list[str]:
        return [host_name(i) for i in range(self.instances)]

    @property
    def world_size(self) -> int:
        return self.instances * self.ppn

    @property
    def module_name(self) -> str:
        name = self.script[:-3] if self.script.endswith(".py") else self.script
        return name.replace("/", ".")

    def args(self, dirs: HostDirs | None = None) -> list[str]:
        """The script's arguments on one host (container paths moved under its tree)."""
        return [on_host(a, dirs) for a in self.user_args]

    def host_hyperparameters(self, dirs: HostDirs) -> dict[str, Any]:
        return {k: on_host(v, dirs) for k, v in self.hyperparameters.items()}


@dataclass(frozen=True)
class HostDirs:
    """The ``/opt/ml`` tree of one emulated instance."""

    root: Path  # stands in for /opt/ml

    @property
    def code(self) -> Path:
        return self.root / "code"

    @property
    def input(self) -> Path:
        return self.root / "input"

    @property
    def config(self) -> Path:
        return self.root / "input" / "config"

    @property
    def data(self) -> Path:
        return self.root / "input" / "data"

    @property
    def model(self) -> Path:
        return self.root / "model"

    @property
    def output(self) -> Path:
        return self.root / "output"

    @property
    def output_data(self) -> Path:
        return self.root / "output" / "data"

    @property
    def intermediate(self) -> Path:
        return self.root / "output" / "intermediate"

    @property
    def failure(self) -> Path:
        return self.root / "output" / "failure"

    def channel(self, name: str) -> Path:
        return self.data / name

    def create(self) -> None:
        for d in (
            self.code,
            self.config,
            self.data,
            self.model,
            self.output_data,
            self.intermediate,
        ):
            d.mkdir(parents=True, exist_ok=True)


def host_dirs(run_dir: Path, host: str) -> HostDirs:
    return HostDirs(run_dir / host / "opt" / "ml")


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


def write_config(
    dirs: HostDirs,
    shape: JobShape,
    host: str,
    hyperparameters_json: Mapping[str, str] | None = None,
) -> None:
    """The files SageMaker writes to ``/opt/ml/input/config`` on each instance."""
    hps = (
        hyperparameters_json
        if hyperparameters_json is not None
        else {k: json.dumps(v) for k, v in shape.hyperparameters.items()}
    )
    for name, content in (
        ("resourceconfig.json", resource_config(shape, host)),
        ("hyperparameters.json", hps),
        ("inputdataconfig.json", input_data_config(shape)),
    ):
        (dirs.config / name).write_text(json.dumps(content, indent=2) + "\n", encoding="utf-8")


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
