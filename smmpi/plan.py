"""What a job will do, as data: the CreateTrainingJob request and the container's mpirun argv.

The request is captured from the SDK's own ``fit`` (see
:func:`smmpi.estimator.capture_request`), offline. Everything else here is a
pure function of that request, mirroring what the sagemaker-training toolkit
(``sagemaker_training`` 5.x: ``mpi.py``, ``environment.py``, ``mapping.py``,
``process.py``) does on algo-1: it reads the hyperparameters
``sagemaker_program`` and ``sagemaker_mpi_*``, ``ResourceConfig`` and the
image, and builds one Open MPI 4 ``mpirun`` line. The local executor consumes
the same request through these functions, so what runs locally is what
SageMaker would run.
"""

from __future__ import annotations

import argparse
import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from smmpi.spec import MPIJob

SAGEMAKER_PREFIX = "sagemaker_"
MPI_PROCESSES_PER_HOST = "sagemaker_mpi_num_of_processes_per_host"
MPI_NUM_PROCESSES = "sagemaker_mpi_num_processes"
MPI_CUSTOM_OPTIONS = "sagemaker_mpi_custom_mpi_options"
NETWORK_INTERFACE = "eth0"  # what SageMaker's resourceconfig.json names
# sagemaker_training/__init__.py: instances whose mpirun gets EFA variables.
EFA_NCCL_INSTANCES = frozenset(
    {
        "ml.g4dn.8xlarge",
        "ml.g4dn.12xlarge",
        "ml.g5.48xlarge",
        "ml.p3dn.24xlarge",
        "ml.p4d.24xlarge",
        "ml.p4de.24xlarge",
        "ml.p5.48xlarge",
        "ml.p5e.48xlarge",
        "ml.trn1.32xlarge",
        "ml.p6e-gb200.36xlarge",
    }
)
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


@dataclass(frozen=True)
class Plan:
    """One job, printed: the request, the mpirun argv on algo-1, and what was assumed."""

    request: dict[str, Any]
    mpirun: list[str]
    world_size: int
    job_name: str
    code_uri: str
    files: list[str]
    placeholders: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    region: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "request": self.request,
            "mpirun": self.mpirun,
            "world_size": self.world_size,
            "job_name": self.job_name,
            "code_uri": self.code_uri,
            "files": self.files,
            "placeholders": self.placeholders,
            "notes": self.notes,
            "region": self.region,
        }


def plan(job: MPIJob, *, job_name: str | None = None) -> Plan:
    """Build the estimator offline, capture its request, derive the mpirun argv.

    The plan is what SageMaker would receive, so ``file://`` channels (local
    mode only) are refused here as they would be on submit.
    """
    from smmpi import estimator
    from smmpi.spec import require_s3_inputs

    require_s3_inputs(job)
    built = estimator.build(job, offline=True, job_name=job_name)
    request = estimator.capture_request(built)
    return Plan(
        request=request,
        mpirun=container_mpirun(request),
        world_size=world_size(request),
        job_name=built.job_name,
        code_uri=estimator.restore_placeholders({"u": built.code_uri}, built.settings.placeholders)[
            "u"
        ],
        files=estimator.source_members(job),
        placeholders=sorted(set(built.settings.placeholders.values())),
        notes=[*built.settings.notes, *job.notes],
        region=built.settings.region,
    )


# -- pure functions of the request ---------------------------------------------------------


def decode_hyperparameters(request: dict[str, Any]) -> dict[str, Any]:
    """HyperParameters as the container reads them: each value JSON-decoded when it can be."""
    out: dict[str, Any] = {}
    for key, value in (request.get("HyperParameters") or {}).items():
        try:
            out[key] = json.loads(value)
        except (TypeError, ValueError):
            out[key] = value
    return out


def user_hyperparameters(request: dict[str, Any]) -> dict[str, Any]:
    """The program's own hyperparameters (SM_HPS, SM_HP_*, argv): all but ``sagemaker_*``."""
    return {
        k: v
        for k, v in decode_hyperparameters(request).items()
        if not k.startswith(SAGEMAKER_PREFIX)
    }


def framework_params(request: dict[str, Any]) -> dict[str, Any]:
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


def hosts(request: dict[str, Any]) -> list[str]:
    """algo-1..algo-N, as SageMaker names the instances."""
    count = int(request["ResourceConfig"]["InstanceCount"])
    return [f"algo-{i}" for i in range(1, count + 1)]


def processes_per_host(request: dict[str, Any]) -> int:
    """sagemaker_mpi_num_of_processes_per_host (the toolkit's CPU default is 1)."""
    return int(decode_hyperparameters(request).get(MPI_PROCESSES_PER_HOST) or 1)


def world_size(request: dict[str, Any]) -> int:
    hp = decode_hyperparameters(request)
    explicit = hp.get(MPI_NUM_PROCESSES)
    return int(explicit) if explicit else processes_per_host(request) * len(hosts(request))


def program(request: dict[str, Any]) -> str:
    """The entry point as the container runs it, from /opt/ml/code."""
    return str(decode_hyperparameters(request)["sagemaker_program"])


def python_version(request: dict[str, Any]) -> str | None:
    """The image's Python as X.Y, read from its tag (``...-cpu-py312`` -> 3.12)."""
    image = request.get("AlgorithmSpecification", {}).get("TrainingImage", "")
    m = re.search(r"-py(\d)(\d+)(?:$|-)", image)
    return f"{m.group(1)}.{m.group(2)}" if m else None


def container_python(request: dict[str, Any]) -> str:
    """sys.executable in the DLC images (Python built from source under /usr/local)."""
    version = python_version(request)
    return f"/usr/local/bin/python{version}" if version else "/usr/local/bin/python3"


def gethostname_library(request: dict[str, Any]) -> str:
    """The toolkit's LD_PRELOAD: its ``gethostname`` C extension in the image's site-packages."""
    version = python_version(request) or "3"
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


def program_args(request: dict[str, Any]) -> list[str]:
    """Arguments after the script: ``--key value`` for each user hyperparameter, sorted by key."""
    hps = user_hyperparameters(request)
    args: list[str] = []
    for key in sorted(hps):
        args.append(f"--{key}" if len(key) > 1 else f"-{key}")
        value = hps[key]
        if isinstance(value, dict):
            args.append(",".join(f"{k}={v}" for k, v in sorted(value.items())))
        else:
            args.append("" if value is None else str(value))
    return args


def container_env_names(request: dict[str, Any], channels: Iterable[str] = ()) -> list[str]:
    """Names of the SM_* variables the toolkit sets and mpirun forwards, in its order."""
    names = [f"SM_{key.upper()}" for key in ENV_KEYS]
    names += [f"SM_CHANNEL_{c.upper()}" for c in channels]
    names += [f"SM_HP_{k.upper()}" for k in user_hyperparameters(request)]
    names.append("PYTHONPATH")
    return names


def channels(request: dict[str, Any]) -> list[str]:
    return [str(c["ChannelName"]) for c in request.get("InputDataConfig") or []]


def container_mpirun(request: dict[str, Any]) -> list[str]:
    """The argv sagemaker_training.mpi.MasterRunner builds on algo-1 (Open MPI 4 flags).

    Seed 004's log shows the same line for a TensorFlow 2.3 image; the toolkit
    5.x adds ``btl_vader_single_copy_mechanism none`` and more SM_* variables.
    SageMaker does not put AWS credentials in the container environment, so the
    toolkit's ``-x AWS_*`` forwarding does not appear.
    """
    host_list = hosts(request)
    ppn = processes_per_host(request)
    num = world_size(request)
    iface = NETWORK_INTERFACE
    nccl_debug, extra = parse_custom_mpi_options(
        str(decode_hyperparameters(request).get(MPI_CUSTOM_OPTIONS) or "")
    )
    instance_type = request["ResourceConfig"]["InstanceType"]
    hosts_arg = host_list if ppn == 1 else [f"{h}:{ppn}" for h in host_list]
    cmd = [
        "mpirun",
        "--host",
        ",".join(hosts_arg),
        "-np",
        str(num),
        "--allow-run-as-root",
        "--display-map",
        "--tag-output",
        "-mca",
        "btl_tcp_if_include",
        iface,
        "-mca",
        "oob_tcp_if_include",
        iface,
        "-mca",
        "plm_rsh_no_tree_spawn",
        "1",
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
        "-x",
        "NCCL_MIN_NRINGS=4",
        "-x",
        f"NCCL_SOCKET_IFNAME={iface}",
        "-x",
        f"NCCL_DEBUG={nccl_debug}",
        "-x",
        "LD_LIBRARY_PATH",
        "-x",
        "PATH",
        "-x",
        f"LD_PRELOAD={gethostname_library(request)}",
    ]
    cmd += extra
    if instance_type in EFA_NCCL_INSTANCES:
        cmd += ["-x", "FI_PROVIDER=efa", "-x", "NCCL_PROTO=simple"]
    if instance_type in EFA_RDMA_INSTANCES:
        cmd += ["-x", "FI_EFA_USE_DEVICE_RDMA=1"]
    for name in container_env_names(request, channels(request)):
        cmd += ["-x", name]
    cmd += [container_python(request), "-m", "mpi4py", program(request)]
    cmd += program_args(request)
    return cmd
