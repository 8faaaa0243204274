"""The ``mpirun`` line the container runs on algo-1, as a pure function of the request.

sagemaker_training.mpi.MasterRunner builds one Open MPI 4 command from the
hyperparameters ``sagemaker_mpi_*``, ``ResourceConfig`` and the image; this
module builds the same argv, so a dry run shows it and local mode translates it.
"""

from __future__ import annotations

import argparse
import re
from collections.abc import Iterable, Mapping
from typing import Any

from smmpi.toolkit.images import toolkit_version
from smmpi.toolkit.request import (
    MPI_CUSTOM_OPTIONS,
    channels,
    decode_hyperparameters,
    hosts,
    processes_per_host,
    program,
    program_args,
    user_hyperparameters,
    world_size,
)

NETWORK_INTERFACE = "eth0"  # what SageMaker's resourceconfig.json names
# sagemaker_training/__init__.py: instances whose mpirun gets EFA variables.
EFA_RDMA_INSTANCES = frozenset(
    {
        "ml.p4d.24xlarge",
        "ml.p4de.24xlarge",
        "ml.p5.48xlarge",
        "ml.p5e.48xlarge",
        "ml.trn1.32xlarge",
        "ml.p6e-gb200.36xlarge",
    }
)
EFA_NCCL_INSTANCES = EFA_RDMA_INSTANCES | {
    "ml.g4dn.8xlarge",
    "ml.g4dn.12xlarge",
    "ml.g5.48xlarge",
    "ml.p3dn.24xlarge",
}
# The same lists in toolkit 4.8.3, which the TensorFlow images run.
EFA_RDMA_INSTANCES_4 = frozenset({"ml.p4d.24xlarge", "ml.p4de.24xlarge", "ml.trn1.32xlarge"})
EFA_NCCL_INSTANCES_4 = EFA_RDMA_INSTANCES_4 | {
    "ml.g4dn.8xlarge",
    "ml.g4dn.12xlarge",
    "ml.g5.48xlarge",
    "ml.p3dn.24xlarge",
    "ml.p5.48xlarge",
}


def efa_lists(image: str) -> tuple[frozenset[str], frozenset[str]]:
    """The instance types whose ranks get ``FI_PROVIDER``/``NCCL_PROTO``, and
    ``FI_EFA_USE_DEVICE_RDMA``, by the toolkit version ``image`` runs."""
    if toolkit_version(image).startswith("4."):
        return EFA_NCCL_INSTANCES_4, EFA_RDMA_INSTANCES_4
    return EFA_NCCL_INSTANCES, EFA_RDMA_INSTANCES


# MasterRunner's fixed process placement and transports (Open MPI 4 spelling).
PLACEMENT_AND_TRANSPORT = (
    "-bind-to",
    "none",
    "-map-by",
    "slot",
    "-mca",
    "pml",
    "ob1",
    "-mca",
    "btl",
    "^openib",
    "-mca",
    "orte_abort_on_non_zero_status",
    "1",
    "-mca",
    "btl_vader_single_copy_mechanism",
    "none",
)
# environment.Environment.to_env_vars(): the SM_* variables, in the toolkit's order.
# mpirun forwards each with -x, then PYTHONPATH (added by environment.write_env_vars).
ENV_KEYS = (
    "hosts",
    "network_interface_name",
    "hps",
    "user_entry_point",
    "framework_params",
    "resource_config",
    "input_data_config",
    "output_data_dir",
    "channels",
    "current_host",
    "current_instance_type",
    "current_instance_group",
    "current_instance_group_hosts",
    "instance_groups",
    "instance_groups_dict",
    "distribution_instance_groups",
    "is_hetero",
    "module_name",
    "log_level",
    "framework_module",
    "input_dir",
    "input_config_dir",
    "output_dir",
    "num_cpus",
    "num_gpus",
    "num_neurons",
    "model_dir",
    "module_dir",
    "training_env",
    "user_args",
    "output_intermediate_dir",
)


def python_version(image: str) -> str | None:
    """The image's Python as X.Y, read from its tag (``...-cpu-py312`` -> 3.12)."""
    m = re.search(r"-py(\d)(\d+)(?:$|-)", image)
    return f"{m.group(1)}.{m.group(2)}" if m else None


def container_python(image: str) -> str:
    """sys.executable in the DLC images (Python built from source under /usr/local)."""
    version = python_version(image)
    return f"/usr/local/bin/python{version}" if version else "/usr/local/bin/python3"


def gethostname_library(image: str) -> str:
    """The toolkit's LD_PRELOAD: its ``gethostname`` C extension in the image's site-packages."""
    version = python_version(image) or "3"
    tag = version.replace(".", "")
    return (
        f"/usr/local/lib/python{version}/site-packages/"
        f"gethostname.cpython-{tag}-x86_64-linux-gnu.so"
    )


def parse_custom_mpi_options(options: str) -> tuple[str, list[str]]:
    """The toolkit's own parse: split on whitespace, pull out --NCCL_DEBUG (default INFO)."""
    parser = argparse.ArgumentParser(add_help=False)
    parser.add_argument("--NCCL_DEBUG", default="INFO", type=str)
    known, rest = parser.parse_known_args(options.split())
    return str(known.NCCL_DEBUG), rest


def container_env_names(
    request: Mapping[str, Any], channels: Iterable[str] = (), hps: Iterable[str] | None = None
) -> list[str]:
    """Names of the SM_* variables the toolkit sets and mpirun forwards, in its order
    (``hps``: the user hyperparameters' names, when read already)."""
    names = [f"SM_{key.upper()}" for key in ENV_KEYS]
    names += [f"SM_CHANNEL_{c.upper()}" for c in channels]
    names += [f"SM_HP_{k.upper()}" for k in (user_hyperparameters(request) if hps is None else hps)]
    names.append("PYTHONPATH")
    return names


def program_command(entry: str, package: bool) -> list[str]:
    """After ``python -m mpi4py``: the script, or ``-m NAME`` when the code has a setup.py.

    ``ProcessRunner._create_command``: with a ``setup.py`` in the code dir the
    toolkit pip-installs the code and runs the entry point as a module, its
    name being the entry point without its last ``.py``.
    """
    return ["-m", re.sub(r"\.py$", "", entry)] if package else [entry]


def container_mpirun(request: Mapping[str, Any], package: bool = False) -> list[str]:
    """The argv sagemaker_training.mpi.MasterRunner builds on algo-1 (Open MPI 4 flags).

    Seed 004's log shows the same line for a TensorFlow 2.3 image; toolkits
    since 4.4.0 add ``btl_vader_single_copy_mechanism none``, and 5.x more SM_*
    variables. ``package``: the source dir has a ``setup.py`` (:func:`program_command`).
    SageMaker does not put AWS credentials in the container environment, so the
    toolkit's ``-x AWS_*`` forwarding does not appear.
    """
    return container_lines(request)[package]


def container_lines(request: Mapping[str, Any]) -> tuple[list[str], list[str]]:
    """:func:`container_mpirun`'s line for a script, and for a package (``-m NAME``), from
    one reading of the request."""
    hps, ppn, names = decode_hyperparameters(request), processes_per_host(request), hosts(request)
    np, entry, args = world_size(request), program(request), program_args(request)
    user, chans = user_hyperparameters(request), channels(request)
    image = str((request.get("AlgorithmSpecification") or {}).get("TrainingImage", ""))
    instance_type = str(request["ResourceConfig"]["InstanceType"])
    nccl_debug, extra = parse_custom_mpi_options(str(hps.get(MPI_CUSTOM_OPTIONS) or ""))
    hosts_arg = [h if ppn == 1 else f"{h}:{ppn}" for h in names]
    cmd = ["mpirun", "--host", ",".join(hosts_arg), "-np", str(np)]
    cmd += ["--allow-run-as-root", "--display-map", "--tag-output", *_interfaces()]
    cmd += [*PLACEMENT_AND_TRANSPORT, *_exports(image, nccl_debug), *extra]
    cmd += _efa(instance_type, image)
    for name in container_env_names(request, chans, user):
        cmd += ["-x", name]
    cmd += [container_python(image), "-m", "mpi4py"]
    return (
        [*cmd, *program_command(entry, False), *args],
        [*cmd, *program_command(entry, True), *args],
    )


def _interfaces() -> list[str]:
    iface = NETWORK_INTERFACE
    return [
        *("-mca", "btl_tcp_if_include", iface),
        *("-mca", "oob_tcp_if_include", iface),
        *("-mca", "plm_rsh_no_tree_spawn", "1"),
    ]


def _exports(image: str, nccl_debug: str) -> list[str]:
    """The variables MasterRunner always forwards, before the job's custom options."""
    return [
        *("-x", "NCCL_MIN_NRINGS=4"),
        *("-x", f"NCCL_SOCKET_IFNAME={NETWORK_INTERFACE}"),
        *("-x", f"NCCL_DEBUG={nccl_debug}"),
        *("-x", "LD_LIBRARY_PATH"),
        *("-x", "PATH"),
        *("-x", f"LD_PRELOAD={gethostname_library(image)}"),
    ]


def _efa(instance_type: str, image: str) -> list[str]:
    """EFA's variables on the instance types the image's toolkit lists."""
    nccl, rdma = efa_lists(image)
    flags: list[str] = []
    if instance_type in nccl:
        flags += ["-x", "FI_PROVIDER=efa", "-x", "NCCL_PROTO=simple"]
    if instance_type in rdma:
        flags += ["-x", "FI_EFA_USE_DEVICE_RDMA=1"]
    return flags
