"""The job as the container sees it: built from a request, or from a program and flags.

:func:`shape_from_request` reads only what the toolkit reads; :func:`shape_from_program`
is ``smmpi run``'s job (no request), checked by the spec's own rules. Both runs
of local mode (``smmpi run`` and ``submit --local``) go through :class:`JobShape`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from smmpi.aws.facts import vcpus
from smmpi.catalog import Program
from smmpi.errors import BadInput
from smmpi.spec.checks import positive_int
from smmpi.spec.instance_type import DEFAULT_INSTANCE_TYPE, check_instance_type
from smmpi.spec.limits import check_run_choices
from smmpi.spec.pairs import Pairs
from smmpi.spec.versions import DEFAULT_FRAMEWORK, check_framework
from smmpi.toolkit import request as rq
from smmpi.toolkit.hosts import HostDirs, host_name, on_host
from smmpi.toolkit.images import image_env, num_gpus


@dataclass(frozen=True)
class JobShape:
    """What every emulated host needs to know about the job."""

    job_name: str
    script: str  # sagemaker_program, relative to the code dir
    instances: int
    ppn: int
    hyperparameters: Mapping[str, Any] = field(default_factory=dict)  # user-visible (SM_HPS)
    user_args: Sequence[str] = ()  # the script's arguments (the request's: request.program_args)
    custom_mpi_options: str = ""
    channels: Mapping[str, str] = field(default_factory=dict)  # name -> content type or ""
    environment: Mapping[str, str] = field(default_factory=dict)  # the job's Environment
    instance_type: str = "local"
    num_cpus: int = 0  # 0: this machine's
    module_dir: str = ""
    framework_module: str | None = None  # the image's SAGEMAKER_TRAINING_MODULE
    image: str = ""  # AlgorithmSpecification.TrainingImage ("" for a bare program)
    region: str = ""  # the sagemaker_region hyperparameter
    sagemaker_job_name: str = ""  # the sagemaker_job_name hyperparameter ("": job_name)
    package: bool = False  # the code dir has a setup.py: the toolkit runs ``-m NAME``
    # the toolkit re-tags mpirun's output (``[1,mpirank:R,algo-K]``); ModelTrainer's driver
    # runs without it, so its log keeps mpirun's own ``[1,R]`` tags
    toolkit_tags: bool = True

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


def shape_from_request(request: Mapping[str, Any]) -> JobShape:
    """The job as the toolkit sees it, from the request alone."""
    try:
        script = rq.program(request)
        instances = int(request["ResourceConfig"]["InstanceCount"])
    except (KeyError, TypeError, ValueError) as err:
        raise BadInput(
            "request",
            f"missing {err}",
            "a CreateTrainingJob request with sagemaker_program and ResourceConfig.InstanceCount",
        ) from None
    fw = rq.framework_params(request)
    if fw.get("sagemaker_mpi_enabled") not in (True, "true", "True"):
        raise BadInput(
            "HyperParameters.sagemaker_mpi_enabled",
            fw.get("sagemaker_mpi_enabled"),
            "true (smmpi runs MPI jobs)",
        )
    instance_type = str(request["ResourceConfig"].get("InstanceType", "local"))
    image = str((request.get("AlgorithmSpecification") or {}).get("TrainingImage", ""))
    hps = rq.decode_hyperparameters(request)
    channels = {
        str(c["ChannelName"]): str(c.get("ContentType") or "")
        for c in request.get("InputDataConfig") or []
    }
    return JobShape(
        job_name=str(request.get("TrainingJobName", "local-job")),
        script=script,
        instances=instances,
        ppn=rq.processes_per_host(request),
        hyperparameters=rq.user_hyperparameters(request),
        user_args=rq.program_args(request),
        custom_mpi_options=str(fw.get(rq.MPI_CUSTOM_OPTIONS) or ""),
        channels=channels,
        environment={str(k): str(v) for k, v in (request.get("Environment") or {}).items()},
        instance_type=instance_type,
        num_cpus=vcpus(instance_type) or 0,
        module_dir=str(hps.get("sagemaker_submit_directory", "")),
        framework_module=image_env(image).get("SAGEMAKER_TRAINING_MODULE") if image else None,
        image=image,
        region=str(hps.get("sagemaker_region") or ""),
        sagemaker_job_name=str(hps.get("sagemaker_job_name") or ""),
    )


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


def shape_from_program(
    program: Program,
    instances: object,
    ppn: object,
    args: Sequence[str] = (),
    instance_type: str = DEFAULT_INSTANCE_TYPE,
    region: str = "",
    submit_directory: str = "",
    framework: Framework = Framework(),
    choices: Choices = Choices(),
) -> JobShape:
    """``smmpi run``'s job: what the default estimator would ask for, without a request.

    The framework asked for (else the program's: TensorFlow unless it is a PyTorch
    entry point), its version and Python version give the image, and with it the
    image's variables; TensorFlow's estimator adds the
    ``model_dir`` hyperparameter (``--model_dir /opt/ml/model``), as on SageMaker.
    ``choices`` add the user's hyperparameters, Environment and mpirun options, checked as
    ``submit``'s are. ``args`` follow the hyperparameters' arguments. ``region`` and
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
    device = "gpu" if num_gpus(instance_type) else "cpu"
    own, environment, mpi_options = check_run_choices(
        framework_name, choices.hyperparameters, choices.environment, choices.mpi_options
    )
    hps = {"model_dir": "/opt/ml/model"} if framework_name == "tensorflow" else {}
    hps.update(own)
    image = f"{framework_name}-training:{version}-{device}-{py}"
    return JobShape(
        job_name=f"smmpi-run-{program.name}".replace("_", "-")[:63],
        script=program.script,
        instances=positive_int("instances", instances),
        ppn=positive_int("ppn", ppn),
        hyperparameters=hps,
        user_args=[*rq.hyperparameter_args(hps), *args],
        custom_mpi_options=mpi_options,
        environment=environment,
        instance_type=instance_type,
        num_cpus=vcpus(instance_type) or 0,
        framework_module=image_env(image).get("SAGEMAKER_TRAINING_MODULE"),
        image=image,
        region=region,
        module_dir=submit_directory,
    )
