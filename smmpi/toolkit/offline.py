"""``smmpi run``'s CreateTrainingJob request, built offline from its flags (no SDK import).

The request holds what the default estimator would send for the program, as far as the
container reads it: ``sagemaker_program``, ``sagemaker_submit_directory``, the region, the job
name, the MPI hyperparameters, the user's hyperparameters (TensorFlow's ``model_dir`` first),
``ResourceConfig``, the image's name and the Environment. The local runner then runs it as it
runs any request (:func:`smmpi.runners.local.job.run`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from smmpi.catalog import Program
from smmpi.spec.checks import positive_int
from smmpi.spec.instance_type import DEFAULT_INSTANCE_TYPE, check_instance_type
from smmpi.spec.limits import check_run_choices
from smmpi.spec.pairs import Pairs
from smmpi.spec.versions import DEFAULT_FRAMEWORK, check_framework
from smmpi.toolkit.environment import LOG_LEVEL
from smmpi.toolkit.images import num_gpus


@dataclass(frozen=True)
class Framework:
    """The estimator ``smmpi run`` stands for: ``None`` takes the default (or the program's)."""

    name: str | None = None
    version: str | None = None
    py_version: str | None = None


@dataclass(frozen=True)
class Choices:
    """The rest of what ``submit`` asks of the estimator that a rank sees, as ``smmpi run``
    takes it: hyperparameters (``--K V`` and ``SM_HPS``), the container's Environment, and
    custom mpirun options (``K=V`` strings or mappings, as MPIJob takes them)."""

    hyperparameters: Pairs = None
    environment: Pairs = None
    mpi_options: str | None = None


def run_job_name(program: Program) -> str:
    """The job name of ``smmpi run PROGRAM`` (the ranks' ``TRAINING_JOB_NAME``)."""
    return f"smmpi-run-{program.name}".replace("_", "-")[:63]


def request_from_program(
    program: Program,
    instances: object,
    ppn: object,
    instance_type: str = DEFAULT_INSTANCE_TYPE,
    region: str = "",
    submit_directory: str = "",
    framework: Framework = Framework(),
    choices: Choices = Choices(),
) -> dict[str, Any]:
    """``smmpi run``'s request: what the default estimator would ask for the program.

    The framework asked for (else the program's: TensorFlow unless it is a PyTorch entry
    point), its version and Python version give the image; TensorFlow's estimator adds the
    ``model_dir`` hyperparameter, as on SageMaker. ``choices`` add the user's hyperparameters,
    Environment and mpirun options, checked as ``submit``'s are. ``region`` and
    ``submit_directory`` are the request's ``sagemaker_region`` and
    ``sagemaker_submit_directory`` (the caller resolves them as a submit would).
    """
    instance_type = check_instance_type(instance_type)
    chosen = framework.name
    framework_name, version, py = check_framework(
        (program.framework_hint or DEFAULT_FRAMEWORK) if chosen is None else chosen,
        framework.version,
        framework.py_version,
    )
    own, environment, mpi_options = check_run_choices(
        framework_name, choices.hyperparameters, choices.environment, choices.mpi_options
    )
    count, per_host = positive_int("instances", instances), positive_int("ppn", ppn)
    name = run_job_name(program)
    hps: dict[str, Any] = {"sagemaker_program": program.script}
    if submit_directory:
        hps["sagemaker_submit_directory"] = submit_directory
    hps |= {"sagemaker_container_log_level": LOG_LEVEL, "sagemaker_job_name": name}
    if region:
        hps["sagemaker_region"] = region
    hps |= {
        "sagemaker_mpi_enabled": True,
        "sagemaker_mpi_num_of_processes_per_host": per_host,
        "sagemaker_mpi_custom_mpi_options": mpi_options,
    }
    hps |= {"model_dir": "/opt/ml/model"} if framework_name == "tensorflow" else {}
    hps |= own
    device = "gpu" if num_gpus(instance_type) else "cpu"
    return {
        "TrainingJobName": name,
        "AlgorithmSpecification": {
            "TrainingImage": f"{framework_name}-training:{version}-{device}-{py}",
            "TrainingInputMode": "File",
        },
        "HyperParameters": {k: json.dumps(v) for k, v in hps.items()},
        "ResourceConfig": {"InstanceCount": count, "InstanceType": instance_type},
        "Environment": environment,
    }
