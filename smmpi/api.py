"""The façade: one job, planned, run here, or submitted (the Python API and the CLI use it).

``MPIJob.plan()``, ``.run_local()``, ``.submit()`` and ``.estimator()`` call
these functions. Each chooses where progress goes (``err``, else this
process's stderr): the runners themselves only report through a callback.
"""

from __future__ import annotations

import dataclasses
import os
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, cast

from smmpi import config
from smmpi.aws.clients import resolve_region
from smmpi.aws.facts import BUCKET_RE, BUCKET_RULE
from smmpi.catalog import resolve
from smmpi.errors import BadInput
from smmpi.ops.settings import check_settings
from smmpi.platform.layout import passed_variables
from smmpi.runners.base import Progress, RunOptions, writer
from smmpi.runners.registry import runner
from smmpi.sdk.settings import BUCKET_PLACEHOLDER, FALLBACK_REGION, code_key, new_upload_id
from smmpi.spec import DEFAULT_INSTANCE_TYPE, MPIJob
from smmpi.spec.limits import check_log_dir
from smmpi.spec.metrics import check_metrics
from smmpi.spec.pairs import Pairs
from smmpi.toolkit.offline import Choices, Framework, request_from_program, run_job_name

# Each entry imports what only it uses, when called: `smmpi run` starts no SDK or submit code.
if TYPE_CHECKING:
    from smmpi.aws.types import Request
    from smmpi.runners.local.records import LocalJob
    from smmpi.runners.local.supervise import RunResult
    from smmpi.runners.plan import Plan
    from smmpi.runners.sagemaker.submit import Submission
    from smmpi.runners.slurm.operate import JobState


def options(
    *,
    progress: Progress | None = None,
    pass_env: Sequence[str] = (),
    with_credentials: bool = False,
    **fields: Any,
) -> RunOptions:
    """Run options from keywords; progress goes to ``progress``, else to ``err``, else stderr.

    ``pass_env`` names variables of this process's environment for the ranks;
    ``with_credentials`` adds its AWS credentials (the ranks get nothing else of it).
    """
    check_settings()  # every SMMPI_* setting before anything runs
    chosen = RunOptions(**fields, env=passed_variables(pass_env, with_credentials, os.environ))
    if chosen.log_dir is not None:
        check_log_dir(chosen.log_dir)
    return dataclasses.replace(chosen, progress=progress or writer(chosen.err or sys.stderr))


def plan(job: MPIJob, *, job_name: str | None = None) -> Plan:
    """The CreateTrainingJob request and container mpirun argv, offline (no credentials)."""
    return runner("plan").start(job, job_name=job_name)


def run_local(job: MPIJob, *, job_name: str | None = None, **local_options: Any) -> LocalJob:
    """The SDK's ``fit`` with its CreateTrainingJob answered by a run here (``submit --local``);
    with ``api="model-trainer"``, ModelTrainer's ``train`` and the SDK's MPI driver."""
    chosen = options(**local_options)
    return runner("local").start(job, options=chosen, job_name=job_name or job.job_name)


def estimator(
    job: MPIJob, *, offline: bool = False, local: bool = False, **local_options: Any
) -> Any:
    """The SDK estimator for ``job``; with ``local``, its ``fit`` runs the job here."""
    from smmpi.sdk.estimator import build

    if local:
        return runner("local").estimator(job, options(**local_options), job.job_name)
    return build(job, offline=offline).estimator


def submit(
    job: MPIJob,
    *,
    wait: bool = True,
    echo: Progress | None = None,
    stop_on_interrupt: bool = False,
    **more: Any,
) -> Submission:
    """Upload the source dir, create the training job on SageMaker, and follow it if ``wait``;
    with ``api="model-trainer"``, the request ModelTrainer's ``train`` builds, with the
    ``code`` and ``sm_drivers`` channels it uploads."""
    check_settings()
    sagemaker = runner("sagemaker")
    return sagemaker.start(job, wait=wait, echo=echo, stop_on_interrupt=stop_on_interrupt, **more)


def run_from_job(name: str, *, region: str | None = None, **local_options: Any) -> LocalJob:
    """A submitted job's request and uploaded ``sourcedir.tar.gz``, run here (``run --from-job``).

    Its description and code come through clients that honour ``AWS_ENDPOINT_URL``.
    """
    check_settings()
    made = runner("local")
    return made.from_job(name, region, lambda: options(region=region, **local_options))


def run_entry(
    entry: str,
    *,
    instances: object = 1,
    ppn: object = 2,
    args: Sequence[str] = (),
    source_dir: str | None = None,
    instance_type: str | None = None,
    framework: str | None = None,
    framework_version: str | None = None,
    py_version: str | None = None,
    hyperparameters: Pairs = None,
    env: Pairs = None,
    mpi_options: str | None = None,
    metrics: object = None,
    **local_options: Any,
) -> RunResult:
    """``smmpi run``: a packaged entry point or a script on N emulated hosts x n processes.

    ``framework``, ``framework_version`` and ``py_version`` choose the estimator the
    run stands for, as ``submit`` does (its image's variables; TensorFlow's ``--model_dir``);
    ``hyperparameters``, ``env`` and ``mpi_options`` the rest of what a rank sees, as
    MPIJob's fields of those names (``K=V`` strings or a mapping); ``metrics`` its
    ``metric_definitions`` (``NAME=REGEX`` strings), applied to the ranks' output.
    """
    chosen_metrics = check_metrics(metrics)
    program = resolve(entry, source_dir)
    instance_type = DEFAULT_INSTANCE_TYPE if instance_type is None else instance_type
    chosen = Framework(framework, framework_version, py_version)
    choices = Choices(hyperparameters, env, mpi_options)
    region, submit_directory = request_defaults(run_job_name(program))
    request = request_from_program(
        program, instances, ppn, instance_type, region, submit_directory, chosen, choices
    )
    local_options.setdefault("keep", False)
    chosen_options = options(
        **local_options, throwaway=True, args=tuple(args), metrics=chosen_metrics
    )
    return runner("local").run_program(program, cast("Request", request), chosen_options)


def request_defaults(job_name: str) -> tuple[str, str]:
    """``sagemaker_region`` and ``sagemaker_submit_directory`` as ``submit --local`` sends them.

    The same settings in the same order (``SMMPI_REGION``, the config file, then
    AWS's own; ``us-east-1`` when none is set, as a dry run shows), the bucket or its
    marked placeholder, and the SDK's layout for the code (``JOB/source/ID/sourcedir.tar.gz``).
    """
    region = resolve_region() or FALLBACK_REGION
    bucket = config.setting("bucket")
    if bucket is not None and not BUCKET_RE.match(bucket):
        raise BadInput(
            f"bucket (from {config.ENV_OF['bucket']} or {config.path()})", bucket, BUCKET_RULE
        )
    return region, f"s3://{bucket or BUCKET_PLACEHOLDER}/{code_key(job_name, new_upload_id())}"


def submit_slurm(
    job: MPIJob, *, profile: str | None = None, wait: bool = False, **overrides: str | None
) -> JobState:
    """``submit --backend slurm``: the job checked against the cluster of config profile
    ``profile`` (``overrides``: partition, account, time), submitted with ``sbatch``; its
    ``JobState`` (SLURM's state, job id, nodes, job folder), at its end with ``wait``."""
    return runner("slurm").start(job, profile=profile, wait=wait, **overrides)
