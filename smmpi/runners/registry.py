"""Runners by name: where :mod:`smmpi.api` finds the place a job goes.

Each entry names the module and class of one :class:`~smmpi.runners.base.Runner`, imported
only when asked for, so ``smmpi run`` loads no SDK or SLURM code. A new runner is one more
package under ``smmpi/runners/`` and one more line in :data:`PLACES`.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Literal, overload

from smmpi.errors import BadInput

if TYPE_CHECKING:
    from smmpi.aws.types import Request
    from smmpi.catalog import Program
    from smmpi.runners.base import Runner, RunOptions
    from smmpi.runners.local.records import LocalJob
    from smmpi.runners.local.supervise import RunResult
    from smmpi.runners.plan import PlanRunner
    from smmpi.runners.sagemaker.runner import SageMakerJobs
    from smmpi.runners.slurm.runner import SlurmJobs
    from smmpi.spec import MPIJob

#: Each runner's name -> ``module:class``.
PLACES = {
    "plan": "smmpi.runners.plan:PlanRunner",
    "local": "smmpi.runners.registry:LocalJobs",
    "sagemaker": "smmpi.runners.sagemaker.runner:SageMakerJobs",
    "slurm": "smmpi.runners.slurm.runner:SlurmJobs",
}
NAMES = tuple(PLACES)


class LocalJobs:
    """:class:`~smmpi.runners.base.Runner` that runs the job here as N emulated instances.

    The local runner's entries are named here once each (imported when called), so a
    change of one of them in :mod:`smmpi.runners.local` is one line here.
    """

    name = "local"

    def start(self, job: MPIJob, *, options: RunOptions, job_name: str | None = None) -> LocalJob:
        """The SDK's ``fit`` with its CreateTrainingJob answered by a run here; with
        ``api="model-trainer"``, ModelTrainer's ``train`` and the SDK's MPI driver."""
        from smmpi.runners.local.sdk import submit_local, submit_trainer_local

        if job.api == "model-trainer":
            return submit_trainer_local(job, options)
        return submit_local(job, options, job_name=job_name)

    def run(self, request: Request, source: bytes, options: RunOptions) -> LocalJob:
        """A request and its ``sourcedir.tar.gz`` run here (``run --from-job``)."""
        from smmpi.runners.local.job import run

        return run(request, source, options)

    def from_job(
        self, name: str, region: str | None, options: Callable[[], RunOptions]
    ) -> LocalJob:
        """A submitted job's request and code (read through clients that honour
        ``AWS_ENDPOINT_URL``) run here; ``options`` are made once both are read. SIGTERM
        ends it as Ctrl-C does, at any step."""
        from smmpi.platform.inputs import fetch_source
        from smmpi.runners.local.job import run
        from smmpi.runners.local.records import interruptible
        from smmpi.runners.local.remote import describe_remote, request_from_description

        with interruptible() as stops:
            description, s3 = describe_remote(name, region)
            request = request_from_description(description)
            source = fetch_source(request, s3)
            stops.name = request.get("TrainingJobName") or None
            return run(request, source, options())

    def run_program(self, program: Program, request: Request, options: RunOptions) -> RunResult:
        """``smmpi run``: ``program``'s code with the request built offline from its flags,
        run in a throwaway folder (``options.throwaway``); its last lines said here."""
        from smmpi.archives import pack
        from smmpi.catalog import missing_module_hint
        from smmpi.runners.local.job import run
        from smmpi.runners.local.throwaway import ending_lines

        source = pack(program.files(), "source_dir" if program.whole_dir else "ENTRY")
        job = run(request, source, options)
        hint = missing_module_hint(program, job.result.failure_line or "")
        count = int(request["ResourceConfig"]["InstanceCount"])
        for line in ending_lines(job, count, hint, options.keep):
            options.progress(line)
        return job.result

    def estimator(self, job: MPIJob, options: RunOptions, job_name: str | None) -> Any:
        """The job's SDK estimator, whose ``fit`` runs the job here."""
        from smmpi.runners.local.sdk import local_estimator

        return local_estimator(job, options, job_name=job_name)


@overload
def runner(name: Literal["plan"]) -> PlanRunner: ...
@overload
def runner(name: Literal["local"]) -> LocalJobs: ...
@overload
def runner(name: Literal["sagemaker"]) -> SageMakerJobs: ...
@overload
def runner(name: Literal["slurm"]) -> SlurmJobs: ...
@overload
def runner(name: str) -> Runner[Any]: ...


def runner(name: str) -> Runner[Any]:
    """The runner called ``name``; any other name is one line listing the runners."""
    if not isinstance(name, str) or name not in PLACES:
        raise BadInput("runner", name, "one of " + ", ".join(NAMES))
    module, _, cls = PLACES[name].partition(":")
    made: Runner[Any] = getattr(importlib.import_module(module), cls)()
    return made


if TYPE_CHECKING:  # each runner is a Runner of what its start gives back
    from smmpi.runners.plan import Plan
    from smmpi.runners.sagemaker.submit import Submission
    from smmpi.runners.slurm.operate import JobState

    _conforms: tuple[Runner[Plan], Runner[LocalJob], Runner[Submission], Runner[JobState]] = (
        PlanRunner(),
        LocalJobs(),
        SageMakerJobs(),
        SlurmJobs(),
    )
