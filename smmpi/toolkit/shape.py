"""The job as the container sees it, from a request.

:func:`shape_from_request` reads only what the toolkit reads; ``smmpi run`` builds its
request offline first (:mod:`smmpi.toolkit.offline`), so every local run goes through it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from smmpi.aws.facts import vcpus
from smmpi.bounded import ascii_int
from smmpi.errors import BadInput
from smmpi.toolkit import request as rq
from smmpi.toolkit.hosts import HostDirs, host_name, on_host
from smmpi.toolkit.images import image_env


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
    # the sagemaker_mpi_num_processes hyperparameter: the container's ``-np`` (0: N x n), its
    # ranks placed by slot over ``--host algo-1:n,...`` as mpirun places them
    processes: int = 0

    @property
    def hosts(self) -> list[str]:
        return [host_name(i) for i in range(self.instances)]

    @property
    def world_size(self) -> int:
        return self.processes or self.instances * self.ppn

    def ranks_on(self, index: int) -> int:
        """How many ranks the container's mpirun starts on host ``index`` (0 for algo-1)."""
        return max(0, min(self.ppn, self.world_size - index * self.ppn))

    @property
    def ranked_hosts(self) -> list[str]:
        """The hosts the container's mpirun starts ranks on."""
        return [h for i, h in enumerate(self.hosts) if self.ranks_on(i)]

    @property
    def asked(self) -> str:
        """``2 x 2 = 4 ranks``, or ``3 ranks (sagemaker_mpi_num_processes) on 2 x 2 slots``."""
        slots = f"{self.instances} x {self.ppn}"
        return self._world(
            slots, f"{self.processes} ranks ({rq.MPI_NUM_PROCESSES}) on {slots} slots"
        )

    @property
    def counts(self) -> str:
        """``2 emulated host(s) x 2 process(es) = 4 ranks``, or what -np makes of them."""
        both = f"{self.instances} emulated host(s) x {self.ppn} process(es)"
        return self._world(both, f"{both}, {self.processes} ranks ({rq.MPI_NUM_PROCESSES})")

    def _world(self, slots: str, named: str) -> str:
        """``SLOTS = W ranks``, or ``named`` where the request names the container's -np."""
        return named if self.processes else f"{slots} = {self.world_size} ranks"

    @property
    def module_name(self) -> str:
        name = self.script[:-3] if self.script.endswith(".py") else self.script
        return name.replace("/", ".")

    def args(self, dirs: HostDirs | None = None) -> list[str]:
        """The script's arguments on one host (container paths moved under its tree)."""
        return [on_host(a, dirs) for a in self.user_args]

    def host_hyperparameters(self, dirs: HostDirs) -> dict[str, Any]:
        return {k: on_host(v, dirs) for k, v in self.hyperparameters.items()}


def shape_from_request(request: Mapping[str, Any], extra_args: Sequence[str] = ()) -> JobShape:
    """The job as the toolkit sees it, from the request alone (``extra_args``: ``smmpi run``'s
    arguments after ``--``, after the hyperparameters' own)."""
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
        user_args=[*rq.program_args(request), *extra_args],
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
        processes=_processes(fw.get(rq.MPI_NUM_PROCESSES)),
    )


def _processes(value: object) -> int:
    """sagemaker_mpi_num_processes, the container's -np (0: not set); a count in ASCII digits."""
    if value in (None, ""):
        return 0
    count = ascii_int(str(value))
    if count is None or count < 1:
        field = f"HyperParameters.{rq.MPI_NUM_PROCESSES}"
        raise BadInput(field, value, "a whole number of ranks, 1 or more")
    return count
