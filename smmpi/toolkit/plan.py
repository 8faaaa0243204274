"""The container planned from a request, in one call: what every instance runs, and with what.

:func:`plan` reads a CreateTrainingJob request once, as the container would read it, and
answers with a :class:`ContainerPlan`: the world (hosts, processes per host, the code), the
line algo-1 starts (the toolkit's mpirun line, or a request's own entrypoint: ModelTrainer's),
each host's config files and the variables of the container's start. Everything on a local
job's route after it reads the plan; nothing asks the request again, except the platform's
part (the job's record, channels, checkpoints, FailureReason, metrics), which reads the
request as SageMaker does, from :attr:`ContainerPlan.request`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

from smmpi.toolkit.driver_world import (
    DRIVERS,
    channel_source,
    distributed_config,
    driver_np,
    is_remote_function,
    remote_shape,
    trainer_shape,
)
from smmpi.toolkit.drivers.line import container_environment
from smmpi.toolkit.environment import input_data_config, resource_config
from smmpi.toolkit.mpirun import container_lines
from smmpi.toolkit.shape import JobShape, shape_from_request


def is_entrypoint_request(request: Mapping[str, Any]) -> bool:
    """A request that names its own container start (ModelTrainer's)."""
    return bool((request.get("AlgorithmSpecification") or {}).get("ContainerEntrypoint"))


@dataclass(frozen=True)
class ContainerPlan:
    """One request's container, planned once (:func:`plan`)."""

    request: Mapping[str, Any]  # as sent: the platform's part reads it as SageMaker does
    shape: JobShape  # the world: hosts, processes per host, the program and its arguments
    script_line: tuple[str, ...]  # algo-1's line: the toolkit's mpirun, or the entrypoint
    module_line: tuple[str, ...] = ()  # the toolkit's line once the code installs (setup.py)
    hyperparameters: Mapping[str, str] = field(default_factory=dict)  # hyperparameters.json
    environment: Mapping[str, str] = field(default_factory=dict)  # an entrypoint's variables
    entrypoint: bool = False  # the request's own start (ModelTrainer's driver) runs
    driver_np: int | None = None  # the -np the driver's line ends with (entrypoint only)
    api: str = ""  # whose driver (entrypoint only): "model-trainer" or "remote" (@remote's)

    @property
    def line(self) -> list[str]:
        """What algo-1 runs: the mpirun line (``-m NAME`` for an installed package)."""
        return list(self.module_line if self.shape.package else self.script_line)

    def files(self, host: str) -> dict[str, Any]:
        """The config files SageMaker writes on ``host`` (``/opt/ml/input/config``)."""
        return {
            "resourceconfig.json": resource_config(self.shape, host),
            "hyperparameters.json": dict(self.hyperparameters),
            "inputdataconfig.json": input_data_config(self.shape),
        }

    def installed(self) -> ContainerPlan:
        """The plan once the code's ``setup.py`` installed it: the program runs as a module."""
        return dataclasses.replace(self, shape=dataclasses.replace(self.shape, package=True))


def plan(
    request: Mapping[str, Any],
    extra_args: Sequence[str] = (),
    channels: Mapping[str, Path] | None = None,
    bounds: Callable[[int, int], None] | None = None,
) -> ContainerPlan:
    """The container of ``request``, read once; BadInput (exit 2) names what it cannot read.

    ``extra_args``: ``smmpi run``'s arguments after ``--``; ``channels``: folders for channels
    whose URI is not read here (ModelTrainer's ``sm_drivers``, as the SDK would upload it);
    ``bounds``: the runner's check of instances and processes per host, made before any
    host is named (a huge count is refused in one line, not built)."""
    check = bounds or (lambda instances, ppn: None)
    hps = MappingProxyType(
        {str(k): str(v) for k, v in (request.get("HyperParameters") or {}).items()}
    )
    if is_entrypoint_request(request):
        algo = request["AlgorithmSpecification"]
        start = [*algo["ContainerEntrypoint"], *(algo.get("ContainerArguments") or [])]
        if is_remote_function(request):  # its job script's mpirun: -np SM_NPROC_PER_NODE
            shape, api = remote_shape(request), "remote"
            np: int | None = shape.ppn
        else:
            drivers = channel_source(request, DRIVERS, channels or {})
            shape, api = trainer_shape(request, drivers), "model-trainer"
            np = driver_np(distributed_config(drivers))
        check(shape.instances, shape.ppn)
        return ContainerPlan(
            request=request,
            shape=shape,
            script_line=tuple(str(a) for a in start),
            hyperparameters=hps,
            environment=MappingProxyType(container_environment(shape)),
            entrypoint=True,
            driver_np=np,
            api=api,
        )
    shape = shape_from_request(request, extra_args)
    check(shape.instances, shape.ppn)
    script, module = container_lines(request)
    return ContainerPlan(
        request=request,
        shape=shape,
        script_line=(*script, *extra_args),
        module_line=(*module, *extra_args),
        hyperparameters=hps,
    )
