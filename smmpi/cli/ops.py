"""CLI for operating submitted jobs: ``status``, ``jobs``, ``stop``, ``logs``, ``fetch``
(only click at module level: boto3 and the rest load inside, so ``--help`` stays fast)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

import click

from smmpi.cli import logs_view, slurm_jobs
from smmpi.cli.options import AsciiInt, Seconds, region_option
from smmpi.errors import BadInput

if TYPE_CHECKING:
    pass


@click.command("status")
@click.argument("job")
@region_option
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
@click.option(
    "--metrics", "series", is_flag=True, help="Also print its metrics' series (smmpi metrics)."
)
@slurm_jobs.backend_options()
def status_cmd(
    job: str, region: str | None, as_json: bool, series: bool, **backend: str | None
) -> None:
    """Show a job's state, size, times, artifacts and final metrics.

    A local job of that name (submit --local) is read from its folder, as smmpi
    metrics reads it; any other from SageMaker (AWS_ENDPOINT_URL: smmpi serve).
    """
    slurm = slurm_jobs.take(backend)
    if slurm is not None:
        if series:
            raise BadInput("--metrics", True, "not with --backend slurm (no MetricDefinitions)")
        return slurm_jobs.status(job, slurm, as_json)
    from smmpi.aws.facts import check_job_name
    from smmpi.cli.metrics import as_points, job_series, table
    from smmpi.ops import status

    check_job_name(job)
    st = status.local_status(job)
    local = st is not None
    if st is None:
        from smmpi.aws.clients import clients

        sm, s3 = clients("sagemaker", "s3", region=region)
        st = status.job_status(sm, job, region, s3)
    shown = {**st.as_dict(), "local": local}
    if series:
        found, _ = job_series(job, region)
        shown["metrics"] = as_points(found)
    if as_json:
        click.echo(json.dumps(shown, sort_keys=True))
        return
    click.echo("\n".join(st.lines()))
    if series and found:
        click.echo("\n".join(["", *table(found)]))


@click.command("jobs")
@region_option
@click.option(
    "--limit", type=AsciiInt("limit"), default=20, show_default=True, help="At most this many jobs."
)
@click.option("--json", "as_json", is_flag=True, help="Print a JSON list.")
@slurm_jobs.backend_options()
def jobs_cmd(region: str | None, limit: int, as_json: bool, **backend: str | None) -> None:
    """List the training jobs smmpi submitted (tagged smmpi:managed=true), newest first."""
    slurm = slurm_jobs.take(backend)
    if slurm is not None:
        return slurm_jobs.jobs(slurm, as_json)
    from smmpi.aws.clients import clients
    from smmpi.ops import listing

    if limit < 1:
        raise BadInput("limit", limit, "an integer >= 1")
    (sm,) = clients("sagemaker", region=region)
    found = listing.list_jobs(sm, limit=limit)
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
@region_option
@slurm_jobs.backend_options()
def stop_cmd(job: str, region: str | None, **backend: str | None) -> None:
    """Stop a running job (a job that already ended is left alone).

    A local job of that name (submit --local, running in another terminal) is stopped
    as Ctrl-C there would stop it.
    """
    slurm = slurm_jobs.take(backend)
    if slurm is not None:
        return slurm_jobs.stop(job, slurm)
    from smmpi.aws.facts import check_job_name
    from smmpi.ops.local_jobs import stop_local

    check_job_name(job)
    said = stop_local(job)  # a local job of that name first, as status and logs read it
    if said is not None:
        click.echo(said)
        return
    from smmpi.aws.clients import clients
    from smmpi.ops import status

    (sm,) = clients("sagemaker", region=region)
    click.echo(status.stop(sm, job, region))


@click.command("logs")
@click.argument("job")
@click.option("--rank", type=AsciiInt("rank"), default=None, help="Only this rank's output.")
@click.option(
    "--host",
    default=None,
    metavar="algo-k",
    help="Only this host's stream, including the container toolkit's own lines.",
)
@click.option("--follow", "-f", is_flag=True, help="Keep printing new lines until the job ends.")
@click.option("--interval", type=Seconds("--interval"), default=5.0, show_default=True, hidden=True)
@region_option
@slurm_jobs.backend_options()
def logs_cmd(
    job: str,
    rank: int | None,
    host: str | None,
    follow: bool,
    interval: float,
    region: str | None,
    **backend: str | None,
) -> None:
    """Print a job's output from CloudWatch (a local job's from its folder), split by MPI rank.

    Without options, each rank's lines come under a `==> rank R (algo-k) <==`
    header. With --follow, lines print as they arrive, prefixed by their rank,
    and the exit code is the job's (1 if it failed).
    """
    slurm = slurm_jobs.take(backend)
    if slurm is not None:
        return slurm_jobs.logs(job, slurm, rank, follow)
    from smmpi.aws.clients import clients
    from smmpi.cli.local_jobs import print_local_log
    from smmpi.ops import status

    logs_view.check_logs_args(job, rank, host, interval)
    if print_local_log(job, rank, host, follow):  # a local job of that name, from its folder
        return
    sm, logs, s3 = clients("sagemaker", "logs", "s3", region=region)
    st = status.job_status(sm, job, region, s3)
    if rank is not None:
        logs_view.check_rank(rank, st)
    if host is not None:
        logs_view.check_host(logs, job, host)
    show = logs_view.printer(rank, host)
    if follow:
        logs_view.follow_logs(sm, logs, job, host, interval, show)
    logs_view.print_logs(logs, st, rank, host, show)


@click.command("fetch")
@click.argument("job")
@click.option(
    "--to", type=click.Path(file_okay=False), help="Directory to extract into (default: ./JOB)."
)
@region_option
@slurm_jobs.backend_options()
def fetch_cmd(job: str, to: str | None, region: str | None, **backend: str | None) -> None:
    """Download a job's model and output archives and extract them (DIR/model, DIR/output)."""
    slurm = slurm_jobs.take(backend)
    if slurm is not None:
        return slurm_jobs.fetch(job, slurm, to)
    from smmpi.aws.clients import clients
    from smmpi.aws.facts import check_job_name
    from smmpi.ops import artifacts

    check_job_name(job)
    sm, s3 = clients("sagemaker", "s3", region=region)
    for got in artifacts.fetch(sm, s3, job, Path(to or job), region):
        if got.directory is None:
            click.echo(f"{got.kind}: no archive at {got.uri}", err=True)
        else:
            click.echo(f"{got.kind}: {len(got.files)} file(s) in {got.directory}")
