"""A driver's world after its run: the short world SageMaker would run, or the run's failure.

SageMaker runs the SDK driver's line as it is: ``-np <processes per node>`` starts that many
ranks on algo-1, and the job completes with them. ``as_sagemaker`` runs (serve's jobs, and
``submit --local --as-sagemaker``) do the same and say so in one line, kept in the job's
record; smmpi's own runs fail a world other than N x n, naming the driver's ``-np``.
"""

from __future__ import annotations

from smmpi.ops.drivers import LOCAL_WORLD
from smmpi.supervision.result import RunResult
from smmpi.toolkit.driver_world import short_world

__all__ = ["LOCAL_WORLD", "settle_world"]


def settle_world(
    result: RunResult, instances: int, ppn: int, np: int | None, as_sagemaker: bool, api: str
) -> str | None:
    """The line of a short world that runs as on SageMaker (None: none to say). A run that
    failed smmpi's own world check names the driver's ``-np`` in its reason."""
    if as_sagemaker:
        return short_world(instances, ppn, np, api)
    if result.failed_rank is None and (result.reason or "").startswith("the job asked for"):
        result.reason = f"{result.reason}: the MPI driver's mpirun has -np {np}"
    return None
