"""CLI for operating submitted jobs, the infra stack and the set-up check.

``status``, ``jobs``, ``stop``, ``logs``, ``fetch``, ``infra deploy|show|delete``
and ``doctor``. Only click is imported at module level: boto3 and the rest
load inside the commands, so ``smmpi --help`` stays fast.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

_region_option = click.option(
    "--region", default=None, help="AWS region (default: SMMPI_REGION, the config, AWS_REGION)."
)


def register(group: click.Group) -> None:
    """Add this module's commands to ``group``."""
    for command in (status_cmd, jobs_cmd, stop_cmd, logs_cmd, fetch_cmd, infra_group, doctor_cmd):
        group.add_command(command)


@click.command("status")
@click.argument("job")
@_region_option
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
def status_cmd(job: str, region: str | None, as_json: bool) -> None:
    """Show a submitted job's state, size, times and artifacts."""
    from smmpi import jobs

    jobs.check_name(job)
    (sm,) = jobs.clients("sagemaker", region=region)
    st = jobs.job_status(sm, job, region)
    if as_json:
        click.echo(json.dumps(st.as_dict(), sort_keys=True))
    else:
        click.echo("\n".join(st.lines()))


@click.command("jobs")
@_region_option
@click.option("--limit", type=int, default=20, show_default=True, help="At most this many jobs.")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON list.")
def jobs_cmd(region: str | None, limit: int, as_json: bool) -> None:
    """List the training jobs smmpi submitted (tagged smmpi:managed=true), newest first."""
    from smmpi import jobs
    from smmpi.errors import BadInput

    if limit < 1:
        raise BadInput("limit", limit, "an integer >= 1")
    (sm,) = jobs.clients("sagemaker", region=region)
    found = jobs.list_jobs(sm, limit=limit)
    if as_json:
        click.echo(
            json.dumps(
                [
                    {
                        "name": j.name,
                        "status": j.status,
                        "created": j.created.isoformat() if j.created else None,
                    }
                    for j in found
                ]
            )
        )
        return
    if not found:
        click.echo("no jobs submitted by smmpi", err=True)
        return
    width = max(len("JOB"), *(len(j.name) for j in found))
    click.echo(f"{'JOB':<{width}}  {'STATUS':<10}  {'CREATED':<19}  TOOK")
    for j in found:
        click.echo(j.line(width))


@click.command("stop")
@click.argument("job")
@_region_option
def stop_cmd(job: str, region: str | None) -> None:
    """Stop a running job (a job that already ended is left alone)."""
    from smmpi import jobs

    jobs.check_name(job)
    (sm,) = jobs.clients("sagemaker", region=region)
    click.echo(jobs.stop(sm, job, region))


@click.command("logs")
@click.argument("job")
@click.option("--rank", type=int, default=None, help="Only this rank's output.")
@click.option(
    "--host",
    default=None,
    metavar="algo-k",
    help="Only this host's stream, including the container toolkit's own lines.",
)
@click.option("--follow", "-f", is_flag=True, help="Keep printing new lines until the job ends.")
@click.option("--interval", type=float, default=5.0, show_default=True, hidden=True)
@_region_option
def logs_cmd(
    job: str, rank: int | None, host: str | None, follow: bool, interval: float, region: str | None
) -> None:
    """Print a job's output from CloudWatch, split by MPI rank.

    Without options, each rank's lines come under a `==> rank R (algo-k) <==`
    header. With --follow, lines print as they arrive, prefixed by their rank,
    and the exit code is the job's (1 if it failed).
    """
    import re

    from smmpi import jobs
    from smmpi.errors import BadInput

    jobs.check_name(job)
    if rank is not None and rank < 0:
        raise BadInput("rank", rank, "an integer >= 0")
    if host is not None and not re.fullmatch(r"algo-[1-9]\d*", host):
        raise BadInput("host", host, "algo-1, algo-2, ... (one per instance)")
    if interval <= 0:
        raise BadInput("interval", interval, "seconds > 0")
    sm, logs = jobs.clients("sagemaker", "logs", region=region)
    st = jobs.job_status(sm, job, region)

    def show(lines: list[jobs.LogLine]) -> None:
        for line in jobs.select(lines, rank):
            if rank is not None:
                click.echo(line.text)
            elif host is not None and line.rank is None:
                click.echo(line.text)
            else:
                click.echo(line.render())

    if host is not None:
        every = jobs.log_streams(logs, job)
        if every and not any(jobs.stream_host(s) == host for s in every):
            hosts = ", ".join(sorted({jobs.stream_host(s) for s in every}))
            raise BadInput("host", host, hosts)

    if follow:
        try:
            log = jobs.JobLog(logs, job, host)
            final = jobs.follow(sm, logs, job, show, host=host, interval=interval, log=log)
        except KeyboardInterrupt:
            click.echo(
                f"smmpi: stopped following; {job} keeps running (`smmpi stop {job}` stops it)",
                err=True,
            )
            sys.exit(130)
        for text in jobs.failure_summary(final, log.scan):
            click.echo(f"smmpi: {text}", err=True)
        click.echo(f"smmpi: {job} {final.status}", err=True)
        sys.exit(1 if final.status == "Failed" else 0)

    log = jobs.JobLog(logs, job, host)
    lines = log.poll(final=True)
    if not log.readers:
        click.echo(f"smmpi: no logs yet for {job} ({st.status}: {st.secondary})", err=True)
        return
    if rank is not None or host is not None:
        show(lines)
        if rank is not None and not jobs.select(lines, rank):
            seen = sorted({ln.rank for ln in lines if ln.rank is not None})
            click.echo(f"smmpi: no output from rank {rank}; ranks seen: {seen}", err=True)
    else:
        for text in jobs.render_demuxed(lines, st.processes_per_host):
            click.echo(text)
    for text in jobs.failure_summary(st, log.scan):
        click.echo(f"smmpi: {text}", err=True)


@click.command("fetch")
@click.argument("job")
@click.option(
    "--to",
    "to",
    type=click.Path(file_okay=False),
    default=None,
    help="Directory to extract into (default: ./JOB).",
)
@_region_option
def fetch_cmd(job: str, to: str | None, region: str | None) -> None:
    """Download a job's model and output archives and extract them (DIR/model, DIR/output)."""
    from smmpi import jobs

    jobs.check_name(job)
    sm, s3 = jobs.clients("sagemaker", "s3", region=region)
    for got in jobs.fetch(sm, s3, job, Path(to or job), region):
        if got.directory is None:
            click.echo(f"{got.kind}: no archive at {got.uri}", err=True)
        else:
            click.echo(f"{got.kind}: {len(got.files)} file(s) in {got.directory}")


@click.group("infra")
def infra_group() -> None:
    """Deploy, show or delete smmpi's CloudFormation stack (execution role + bucket)."""


@infra_group.command("deploy")
@click.option("--stack-name", default="smmpi", show_default=True)
@click.option("--vpc-id", default=None, help="Also create a security group in this VPC.")
@click.option("--subnet", "subnets", multiple=True, help="Subnet for jobs (with --vpc-id).")
@click.option(
    "--retention-days",
    type=int,
    default=None,
    help="Delete job data older than this (template default: 90).",
)
@_region_option
def infra_deploy_cmd(
    stack_name: str,
    vpc_id: str | None,
    subnets: tuple[str, ...],
    retention_days: int | None,
    region: str | None,
) -> None:
    """Create or update the stack and save its role and bucket in smmpi's config."""
    from smmpi import infra, jobs

    infra.check_inputs(stack_name, vpc_id, list(subnets), retention_days)
    (cfn,) = jobs.clients("cloudformation", region=region)
    outputs = infra.deploy(
        cfn,
        stack_name,
        vpc_id=vpc_id,
        retention_days=retention_days,
        progress=lambda msg: click.echo(msg, err=True),
    )
    saved = infra.save_outputs(
        outputs, region=cfn.meta.region_name, stack=stack_name, subnets=list(subnets)
    )
    for key, value in sorted(outputs.items()):
        click.echo(f"{key}: {value}")
    click.echo(f"saved role and bucket to {saved}")


@infra_group.command("show")
@click.option("--stack-name", default="smmpi", show_default=True)
@_region_option
def infra_show_cmd(stack_name: str, region: str | None) -> None:
    """Show the stack's state and outputs, and what smmpi's config holds."""
    from smmpi import config, infra, jobs

    infra.check_inputs(stack_name)
    (cfn,) = jobs.clients("cloudformation", region=region)
    state, outputs = infra.show(cfn, stack_name)
    click.echo(f"stack: {stack_name} ({state}) in {cfn.meta.region_name}")
    for key, value in sorted(outputs.items()):
        click.echo(f"{key}: {value}")
    saved = config.load()
    click.echo(
        f"config: {config.path()}: role={saved.get('role', '-')} bucket={saved.get('bucket', '-')}"
    )


@infra_group.command("delete")
@click.option("--stack-name", default="smmpi", show_default=True)
@click.option("--yes", is_flag=True, help="Do not ask for confirmation.")
@_region_option
def infra_delete_cmd(stack_name: str, yes: bool, region: str | None) -> None:
    """Delete the stack (the bucket and its job data are kept) and forget its outputs."""
    from smmpi import infra, jobs

    infra.check_inputs(stack_name)
    (cfn,) = jobs.clients("cloudformation", region=region)
    if not yes and not click.confirm(f"Delete stack {stack_name} in {cfn.meta.region_name}?"):
        click.echo(f"smmpi: stack {stack_name} not deleted", err=True)
        sys.exit(1)
    kept = infra.delete(cfn, stack_name, progress=lambda msg: click.echo(msg, err=True))
    click.echo(f"deleted stack {stack_name}")
    if kept:
        logs = f", and bucket {kept[1]} with its access logs" if len(kept) > 1 else ""
        click.echo(
            f"bucket {kept[0]} was kept with its job data{logs}; when no longer needed, "
            "delete every object version, then the bucket"
        )


@click.command("doctor")
@click.option("--no-smoke", is_flag=True, help="Skip the 2-rank mpirun smoke run.")
@_region_option
def doctor_cmd(no_smoke: bool, region: str | None) -> None:
    """Check MPI, AWS credentials/region/endpoint, role and bucket; one line each with a fix."""
    from smmpi import doctor

    checks = doctor.run(smoke=not no_smoke, region=region)
    for check in checks:
        click.echo(check.line())
    sys.exit(0 if all(c.state != "fail" for c in checks) else 1)
