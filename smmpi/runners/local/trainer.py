"""Local mode for ModelTrainer's requests: the container's own start on every instance.

A request with ``AlgorithmSpecification.ContainerEntrypoint`` (SDK v2's
``sagemaker.modules.train`` and v3's ``sagemaker.train`` send one) runs on the local
job's one route (:func:`smmpi.runners.local.job.run`) as SageMaker would run it:
- the platform's part: each instance's ``/opt/ml/input/config/*.json`` as SageMaker
  writes them, and every channel of ``InputDataConfig`` (``code`` and ``sm_drivers``
  among them) under ``/opt/ml/input/data/<channel>``; ``channels`` gives a folder for a
  channel whose URI is not read here (``submit --local``: what the SDK would upload);
- the container's part: ``ContainerEntrypoint`` + ``ContainerArguments`` on every
  isolated instance, with a real sshd configured (:mod:`.trainer_pod`, the container
  :class:`~smmpi.runners.local.containers.Entrypoint`); the SDK's MPI driver does the rest,
  unchanged.

smmpi keeps its promises around it: the failed rank is named (rank, host, cause) beside the
driver's own failure text (algo-1's ``/opt/ml/output/failure``), ``--timeout`` dumps every
rank's stack, the ranks' world is checked against N x n, and nothing outlives the run. This
module holds what its end adds to the route's: the short world, and the driver's text.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from smmpi.errors import BadInput
from smmpi.mpi_output import printable
from smmpi.platform.instance_endpoint import VARIABLE as ENDPOINT_VARIABLE
from smmpi.runners.base import RunOptions
from smmpi.runners.local.records import LocalJob
from smmpi.runners.local.short_world import LOCAL_WORLD, settle_world
from smmpi.supervision.result import RunResult
from smmpi.toolkit.plan import ContainerPlan, is_entrypoint_request

__all__ = ["check_remote", "driver_failure", "ending", "is_trainer_request", "settle"]

#: A request that names its own container start (ModelTrainer's).
is_trainer_request = is_entrypoint_request


def settle(
    planned: ContainerPlan, result: RunResult, options: RunOptions, record: dict[str, Any]
) -> None:
    """The driver's world after its run: the short world SageMaker would run (said, and
    recorded), or the run's failure."""
    shape = planned.shape
    short = settle_world(
        result, shape.instances, shape.ppn, planned.driver_np, options.as_sagemaker, planned.api
    )
    if short:
        options.progress(f"smmpi: {short}")
        record[LOCAL_WORLD] = short


def check_remote(planned: ContainerPlan, options: RunOptions) -> None:
    """``@remote``'s job runs under smmpi serve only: its ranks reach S3 through the job's own
    endpoint and key, which serve gives them; BadInput (exit 2) elsewhere."""
    if planned.api == "remote" and ENDPOINT_VARIABLE not in options.env:
        raise BadInput(
            "request", "@remote's job script", "a run under smmpi serve (its ranks reach S3 "
            "through the job's own endpoint and key, which serve gives them)",
        )  # fmt: skip


def driver_failure(run_dir: Path) -> str | None:
    """The driver's own text in algo-1's ``/opt/ml/output/failure`` (never read via a link)."""
    path = run_dir / "algo-1" / "opt" / "ml" / "output" / "failure"
    if not path.is_file() or path.is_symlink():
        return None
    text = path.read_text(encoding="utf-8", errors="replace").strip()
    return text or None


def ending(job: LocalJob, driver_text: str | None) -> list[str]:
    """The lines a failed job of a request's own start ends with (``driver_text``: the
    driver's failure file)."""
    lines = [
        f"smmpi: local job {job.name} {job.status} (the instances' files: {job.folder / 'hosts'})",
        f"smmpi: {job.result.failure_line or job.status}",
    ]
    if driver_text:
        last = driver_text.splitlines()[-1]
        lines.append(f"smmpi: the MPI driver's failure file (algo-1): {printable(last)}")
    return lines
