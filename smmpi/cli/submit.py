"""``smmpi submit``: validate, then print (--dry-run), run here (--local), or submit and follow.

Module level imports click only: ``smmpi --help`` must not load the SDK.
"""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING, Any

import click

from smmpi.cli import slurm_jobs, submit_modes
from smmpi.cli.options import (
    local_run_options,
    pass_env_options,
    request_choice_options,
    shape_options,
)
from smmpi.errors import BadInput

if TYPE_CHECKING:
    from smmpi.spec import MPIJob

#: CLI flag -> MPIJob field, where they differ.
_FIELD_OF = {"spot": "use_spot", "metrics": "metric_definitions"}
#: Flags left to MPIJob's default when not given.
_DEFAULTED = ("instance_type", "max_run", "api")


@click.command("submit")
@click.argument("entry")
@shape_options("Number of instances (hosts algo-1..algo-N).", "MPI processes per instance.", True)
@click.option("--framework", default=None, help="tensorflow (default) or pytorch.")
@click.option("--framework-version", default=None, help="Framework version of the image.")
@click.option("--py-version", default=None, help="Python version of the image, e.g. py312.")
@click.option("--instance-type", default=None, help="Training instance type [ml.c5.2xlarge].")
@click.option("--role", default=None, help="Execution role ARN [SMMPI_ROLE, config file].")
@click.option(
    "--bucket",
    default=None,
    help="S3 bucket [SMMPI_BUCKET, config file, sagemaker-REGION-ACCOUNT].",
)
@click.option("--region", default=None, help="AWS region [SMMPI_REGION, config, AWS profile].")
@request_choice_options()
@click.option(
    "--max-run",
    type=click.UNPROCESSED,
    default=None,
    help="Seconds before SageMaker stops the job [3600].",
)
@click.option(
    "--input",
    "inputs",
    multiple=True,
    metavar="NAME=URI",
    help="Input channel: s3://bucket/prefix (file:///path with --local), "
    "seen as SM_CHANNEL_NAME (repeatable).",
)
@click.option(
    "--spot",
    is_flag=True,
    help="Managed spot training (usually cheaper; may wait for capacity).",
)
@click.option(
    "--max-wait",
    type=click.UNPROCESSED,
    default=None,
    help="With --spot: seconds to wait for spot capacity plus run, >= max run [max run].",
)
@click.option(
    "--checkpoint-s3-uri",
    default=None,
    help="s3:// URI that /opt/ml/checkpoints syncs to (lets spot jobs resume).",
)
@click.option(
    "--keep-alive",
    type=click.UNPROCESSED,
    default=None,
    help="Warm pool: seconds (0-3600) to keep the instances for the next job; not with --spot.",
)
@click.option(
    "--subnet",
    "subnets",
    multiple=True,
    help="VPC subnet ID (repeatable) [config file from `smmpi infra deploy --vpc-id`].",
)
@click.option(
    "--security-group",
    "security_groups",
    multiple=True,
    help="VPC security group ID (repeatable) [config file].",
)
@click.option("--source-dir", default=None, help="Folder uploaded with a user's script.")
@click.option("--job-name", default=None, help="Training job name [smmpi-ENTRY-DATE].")
@click.option(
    "--base-job-name", default=None, help="Job name before the date the SDK appends [smmpi-ENTRY]."
)
@click.option(
    "--api",
    default=None,
    help="The SDK API that builds the request: estimator (default; TensorFlow/PyTorch with "
    "distribution mpi) or model-trainer (ModelTrainer with distributed=MPI).",
)
@click.option(
    "--as-sagemaker",
    is_flag=True,
    help="With --api model-trainer: the SDK driver's per-node -np as it is (its ranks on "
    "algo-1 only, as on SageMaker); by default smmpi adds -np N*n.",
)
@click.option(
    "--create-bucket",
    is_flag=True,
    help="Create --bucket if it does not exist (by default a missing bucket is refused).",
)
@click.option(
    "--wait/--no-wait",
    default=True,
    show_default=True,
    help="Follow the job until it ends (exit 0 Completed, 1 Failed/Stopped).",
)
@click.option(
    "--stop-on-interrupt",
    is_flag=True,
    help="With --wait: Ctrl-C stops the job too (by default it keeps running).",
)
@click.option(
    "--dry-run",
    is_flag=True,
    help="Print the request and the container's mpirun line; create nothing.",
)
@click.option(
    "--local",
    is_flag=True,
    help="Run this very request here, Docker-free, as N emulated hosts (no AWS needed).",
)
@local_run_options(
    "With --local: seconds before every rank's stack is printed and all stop (exit 124).",
    "With --local: one log file per rank here [the local job's logs/].",
    "With --local: pip-install the code's requirements.txt into the local job's folder.",
)
@pass_env_options()
@slurm_jobs.backend_options(submit=True)
@click.option("--json", "as_json", is_flag=True, help="One JSON object on stdout.")
def submit_cmd(
    entry: str,
    wait: bool,
    stop_on_interrupt: bool,
    dry_run: bool,
    local: bool,
    timeout: float | None,
    isolation: str | None,
    log_dir: str | None,
    install_requirements: bool,
    exact: bool,
    as_json: bool,
    create_bucket: bool,
    pass_env: tuple[str, ...],
    with_credentials: bool,
    **fields: Any,
) -> None:
    """Submit ENTRY to SageMaker as N instances x n MPI processes.

    ENTRY is a packaged entry point (see `smmpi entry-points`) or a path to a
    .py file. Everything is validated before anything is created. Role, bucket
    and region come from the flag, then SMMPI_ROLE/SMMPI_BUCKET/SMMPI_REGION,
    then the config file; the endpoint from AWS_ENDPOINT_URL. Subnets and
    security groups come from the flags, then the config file.

    With --wait, Ctrl-C stops following (exit 130) and leaves the job running
    unless --stop-on-interrupt.
    """
    _check_modes(dry_run, local, wait, stop_on_interrupt, timeout, log_dir, install_requirements)
    if create_bucket and (dry_run or local):
        raise BadInput("--create-bucket", True, "only when submitting (not with --dry-run/--local)")
    if (pass_env or with_credentials) and not local:
        flag = "--pass-env" if pass_env else "--with-credentials"
        raise BadInput(flag, " ".join(pass_env) or True, "only with --local")
    if isolation is not None and not local:
        raise BadInput("--isolation", isolation, "only with --local")
    if exact and not local:
        raise BadInput("--exact", True, "only with --local")
    slurm = slurm_jobs.take(fields)
    if slurm is not None and local:
        raise BadInput("--local", True, "not with --backend slurm (try `smmpi slurm up`)")
    if slurm is not None and fields.get("metrics"):
        raise BadInput("--metric", fields["metrics"][0], "not with --backend slurm (no metrics)")
    job = _job(entry, fields)
    if slurm is not None:
        slurm_jobs.submit(job, slurm, dry_run=dry_run, wait=wait, as_json=as_json)
    elif local:
        passed = {"pass_env": list(pass_env), "with_credentials": with_credentials, "exact": exact}
        submit_modes.run_here(
            job, timeout, log_dir, install_requirements, as_json, passed, isolation
        )
    elif dry_run:
        submit_modes.dry_run(job, as_json)
    else:
        submit_modes.submit(job, wait, stop_on_interrupt, as_json, create_bucket)


def _check_modes(
    dry_run: bool,
    local: bool,
    wait: bool,
    stop_on_interrupt: bool,
    timeout: float | None,
    log_dir: str | None,
    install_requirements: bool,
) -> None:
    """Flags that only make sense with another one are refused without it."""
    if dry_run and local:
        raise BadInput("--dry-run/--local", "both", "at most one of --dry-run and --local")
    if timeout is not None and not local:
        raise BadInput("--timeout", timeout, "only with --local")
    if log_dir is not None and not local:
        raise BadInput("--log-dir", log_dir, "a folder, with --local")
    if install_requirements and not local:
        raise BadInput("--install-requirements", True, "only with --local")
    if stop_on_interrupt and (not wait or dry_run or local):
        raise BadInput("--stop-on-interrupt", True, "only when following a submitted job (--wait)")


def _job(entry: str, fields: dict[str, Any]) -> MPIJob:
    """The validated job; its notes (warnings) are printed as ``smmpi: warning:`` lines."""
    from smmpi.spec import MPIJob

    kwargs: dict[str, Any] = {
        _FIELD_OF.get(k, k): list(v) if isinstance(v, tuple) else v
        for k, v in fields.items()
        if v is not None or k not in _DEFAULTED
    }
    with warnings.catch_warnings(record=True):
        warnings.simplefilter("ignore")
        job = MPIJob(entry, **kwargs)
    for note in job.notes:
        submit_modes.echo_err(f"smmpi: warning: {note}")
    return job
