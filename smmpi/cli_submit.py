"""``smmpi submit``: validate, then print (--dry-run), or submit and follow.

Module level imports click only: ``smmpi --help`` must not load the SDK.
"""

from __future__ import annotations

import json
import shlex
import sys
from typing import TYPE_CHECKING, Any

import click

if TYPE_CHECKING:
    from smmpi.plan import Plan
    from smmpi.spec import MPIJob


def register(group: click.Group) -> None:
    """Add this module's commands to ``group``."""
    group.add_command(submit_cmd)


def _echo_err(line: str) -> None:
    click.echo(line, err=True)


@click.command("submit")
@click.argument("entry")
@click.option(
    "--instances",
    "-N",
    type=click.UNPROCESSED,
    required=True,
    help="Number of instances (hosts algo-1..algo-N).",
)
@click.option(
    "--ppn", "-n", type=click.UNPROCESSED, required=True, help="MPI processes per instance."
)
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
@click.option(
    "--mpi-options",
    default=None,
    help='Extra mpirun options, e.g. "-x FOO=1 --NCCL_DEBUG WARN" (no shell).',
)
@click.option(
    "--hyperparameter",
    "hyperparameters",
    multiple=True,
    metavar="K=V",
    help="Passed to the program as --K V (repeatable).",
)
@click.option(
    "--env",
    "env",
    multiple=True,
    metavar="K=V",
    help="Container environment variable (repeatable).",
)
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
@click.option(
    "--timeout",
    type=float,
    default=None,
    help="With --local: seconds before every rank's stack is printed and all stop (exit 124).",
)
@click.option(
    "--log-dir",
    default=None,
    help="With --local: one log file per rank here [the local job's logs/].",
)
@click.option(
    "--install-requirements",
    is_flag=True,
    help="With --local: pip-install the code's requirements.txt into the local job's folder.",
)
@click.option("--json", "as_json", is_flag=True, help="One JSON object on stdout.")
def submit_cmd(
    entry: str,
    instances: Any,
    ppn: Any,
    framework: str | None,
    framework_version: str | None,
    py_version: str | None,
    instance_type: str | None,
    role: str | None,
    bucket: str | None,
    region: str | None,
    mpi_options: str | None,
    hyperparameters: tuple[str, ...],
    env: tuple[str, ...],
    max_run: Any,
    inputs: tuple[str, ...],
    spot: bool,
    max_wait: Any,
    checkpoint_s3_uri: str | None,
    keep_alive: Any,
    subnets: tuple[str, ...],
    security_groups: tuple[str, ...],
    source_dir: str | None,
    job_name: str | None,
    wait: bool,
    stop_on_interrupt: bool,
    dry_run: bool,
    local: bool,
    timeout: float | None,
    log_dir: str | None,
    install_requirements: bool,
    as_json: bool,
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
    from smmpi.errors import BadInput
    from smmpi.spec import MPIJob

    if dry_run and local:
        raise BadInput("--dry-run/--local", "both", "at most one of --dry-run and --local")
    if timeout is not None and (timeout <= 0 or not local):
        raise BadInput("--timeout", timeout, "seconds > 0, with --local")
    if log_dir is not None and not local:
        raise BadInput("--log-dir", log_dir, "a folder, with --local")
    if install_requirements and not local:
        raise BadInput("--install-requirements", True, "only with --local")
    if stop_on_interrupt and (not wait or dry_run or local):
        raise BadInput("--stop-on-interrupt", True, "only when following a submitted job (--wait)")
    kwargs: dict[str, Any] = dict(
        instances=instances,
        ppn=ppn,
        framework=framework,
        framework_version=framework_version,
        py_version=py_version,
        role=role,
        bucket=bucket,
        region=region,
        mpi_options=mpi_options,
        hyperparameters=list(hyperparameters),
        env=list(env),
        source_dir=source_dir,
        job_name=job_name,
        inputs=list(inputs),
        use_spot=spot,
        max_wait=max_wait,
        checkpoint_s3_uri=checkpoint_s3_uri,
        keep_alive=keep_alive,
        subnets=list(subnets),
        security_groups=list(security_groups),
    )
    if instance_type is not None:
        kwargs["instance_type"] = instance_type
    if max_run is not None:
        kwargs["max_run"] = max_run
    import warnings

    with warnings.catch_warnings(record=True):
        warnings.simplefilter("ignore")
        job = MPIJob(entry, **kwargs)
    for note in job.notes:
        _echo_err(f"smmpi: warning: {note}")
    if local:
        local_job = job.submit(
            local=True,
            timeout=timeout,
            log_dir=log_dir,
            out=sys.stderr if as_json else None,
            install_requirements=install_requirements,
        )
        if as_json:
            click.echo(json.dumps(local_job.record, indent=2, default=str))
        sys.exit(local_job.exit_code)
    if dry_run:
        result = job.plan()
        if as_json:
            from dataclasses import asdict

            from smmpi.local.translate import translate

            data = result.to_json()
            data["cost"] = cost_estimate(job, result)
            data["local_mpirun"] = [asdict(r) for r in translate(result.mpirun, sys.executable)]
            click.echo(json.dumps(data, indent=2))
        else:
            click.echo(render_plan(job, result))
        return
    from smmpi.submit import submit

    try:
        sub = submit(
            job,
            wait=wait,
            echo=None if as_json else _echo_err,
            on_log=None if as_json else click.echo,
            stop_on_interrupt=stop_on_interrupt,
        )
    except KeyboardInterrupt:
        _echo_err("smmpi: interrupted; a created job keeps running (smmpi stop JOB)")
        sys.exit(130)
    if as_json:
        click.echo(json.dumps(sub.to_json(), indent=2, default=str))
    else:
        click.echo(sub.job_name)
        if sub.status in ("Failed", "Stopped"):
            _echo_err(
                f"smmpi: job {sub.job_name} {sub.status}: {sub.failure_reason or 'no reason given'}"
            )
    if wait:
        sys.exit(sub.exit_code)


def plan_channels(request: dict[str, Any]) -> dict[str, str]:
    """Input channel name -> S3 URI, as the request carries them."""
    out: dict[str, str] = {}
    for channel in request.get("InputDataConfig") or []:
        source = channel.get("DataSource", {}).get("S3DataSource", {})
        out[str(channel["ChannelName"])] = str(source.get("S3Uri", "?"))
    return out


def _side_by_side(container: list[str]) -> list[str]:
    """Each part of the container's line, what it becomes locally, and why (SM_* as one row)."""
    from smmpi.local.translate import Row, translate

    rows: list[Row] = []
    translated = translate(container, sys.executable)
    sm = [r for r in translated if r.container[:1] == ("-x",) and r.container[1].startswith("SM_")]
    for row in translated:
        if row in sm:
            if row is sm[0]:
                rows.append(
                    Row((f"-x SM_... ({len(sm)} variables)",), ("-x SM_...=<per host>",), row.why)
                )
            continue
        rows.append(row)
    width = min(44, max(len(" ".join(r.container)) for r in rows))
    out = [f"  {'container (Open MPI 4)':<{width}}  {'local (Open MPI 5)':<36}  why"]
    for row in rows:
        left = " ".join(row.container) or "-"
        right = " ".join(row.local) or "(dropped)"
        out.append(f"  {left:<{width}}  {right:<36}  {row.why}")
    return out


def cost_estimate(job: MPIJob, plan: Plan) -> dict[str, Any]:
    """On-demand price of the instances and the ceiling for max run (see smmpi.pricing).

    A spot job is usually billed less, but its price is not known in advance,
    so the ceiling stays the on-demand one and ``spot`` says so.
    """
    from smmpi import pricing

    est = pricing.estimate(job.instance_type, job.instances, job.max_run, plan.region)
    est["spot"] = job.use_spot
    if job.use_spot:
        est["spot_note"] = (
            "spot is usually cheaper than on-demand; the ceiling shown is the on-demand one"
        )
    return est


def cost_lines(est: dict[str, Any]) -> list[str]:
    """The dry run's cost rows: the dated estimate, then the spot caveat if any."""
    from smmpi import pricing

    text = pricing.describe(est)
    lines = [f"  cost         {text.removeprefix('cost: ').removeprefix('cost ')}"]
    if est.get("spot_note"):
        lines.append(f"  spot         {est['spot_note']}")
    return lines


def render_plan(job: MPIJob, plan: Plan) -> str:
    """Summary first (what a person checks), then the full request and mpirun line."""
    req = plan.request
    image = req["AlgorithmSpecification"]["TrainingImage"]
    others = [f for f in plan.files if f != job.program.script]
    lines = [
        "smmpi submit --dry-run: nothing was created",
        f"  job          {plan.job_name}",
        f"  program      {job.program.script}" + (f" (+ {', '.join(others)})" if others else ""),
        f"  world        {job.instances} x {job.instance_type}, {job.ppn} processes each "
        f"= {plan.world_size} ranks",
        f"  framework    {job.framework} {job.framework_version} ({job.py_version})",
        f"  image        {image}",
        f"  role         {req['RoleArn']}",
        f"  source dir   {plan.code_uri}",
        f"  output       {req['OutputDataConfig']['S3OutputPath']}",
        f"  max run      {req['StoppingCondition']['MaxRuntimeInSeconds']} s",
    ]
    for name, channel in plan_channels(req).items():
        lines.append(f"  input        {name} = {channel}")
    if "VpcConfig" in req:
        vpc = req["VpcConfig"]
        lines.append(
            f"  vpc          subnets {', '.join(vpc['Subnets'])}; "
            f"security groups {', '.join(vpc['SecurityGroupIds'])}"
        )
    if job.use_spot:
        spot = f"managed spot training, max wait {job.max_wait} s"
        lines.append(f"  spot         {spot}")
    if job.checkpoint_s3_uri:
        lines.append(f"  checkpoints  {job.checkpoint_s3_uri}")
    if job.keep_alive:
        lines.append(f"  warm pool    instances kept {job.keep_alive} s after the job for the next")
    lines += cost_lines(cost_estimate(job, plan))
    lines += [f"  note         {note}" for note in plan.notes]
    lines += [
        "",
        "mpirun on algo-1 (built by the container's sagemaker-training toolkit):",
        "  " + shlex.join(plan.mpirun),
        "",
        "The same line here (`submit --local`, Open MPI 5, one app context per emulated host):",
        *_side_by_side(plan.mpirun),
        "",
        "CreateTrainingJob request:",
        json.dumps(req, indent=2),
    ]
    return "\n".join(lines)
