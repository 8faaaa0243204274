"""``smmpi local-jobs list|prune``: the local jobs kept under ``~/.smmpi/local-jobs``; and
``smmpi logs`` of a local job."""

from __future__ import annotations

import json
import sys

import click

from smmpi.errors import BadInput


@click.group("local-jobs")
def local_jobs_group() -> None:
    """List or prune local jobs (submit --local); folders smmpi did not create are never touched.

    After each local job the oldest finished ones beyond SMMPI_LOCAL_JOBS_KEEP
    (default 20) are removed.
    """


@local_jobs_group.command("list")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON list.")
def list_cmd(as_json: bool) -> None:
    """The local jobs, newest first: name, status, creation time, folder."""
    from smmpi.ops.local_jobs import jobs_root, list_jobs

    found = list_jobs()
    if as_json:
        click.echo(json.dumps([e.as_dict() for e in found]))
        return
    if not found:
        click.echo(f"no local jobs under {jobs_root()}", err=True)
        return
    width = max(len("JOB"), *(len(e.name) for e in found))
    click.echo(f"{'JOB':<{width}}  {'STATUS':<10}  CREATED")
    for entry in found:
        click.echo(f"{entry.name:<{width}}  {entry.status:<10}  {entry.created}")


@local_jobs_group.command("prune")
@click.option(
    "--keep",
    type=click.UNPROCESSED,
    default=None,
    help="Keep this many of the newest local jobs [SMMPI_LOCAL_JOBS_KEEP, 20].",
)
def prune_cmd(keep: object) -> None:
    """Remove all but the newest local jobs (a job still running is kept)."""
    from smmpi.bounded import ascii_int
    from smmpi.ops.local_jobs import check_keep, configured_keep, jobs_root, prune

    if keep is None:
        count = configured_keep()
    else:
        number = ascii_int(str(keep))
        count = check_keep(keep if number is None else number)
    removed = prune(count)
    for name in removed:
        click.echo(f"removed {jobs_root() / name}")
    click.echo(f"smmpi: {len(removed)} local job(s) removed, at most {count} kept", err=True)


def print_local_log(job: str, rank: int | None, host: str | None, follow: bool) -> bool:
    """``smmpi logs JOB`` of a local job of that name, from its folder (False: none). With
    --follow, the exit code is the job's; a local job still running prints to the terminal
    that runs it, so it cannot be followed here."""
    from smmpi.causes import summary
    from smmpi.mpi_output import printable
    from smmpi.ops.cloudwatch import render_demuxed
    from smmpi.ops.local_logs import local_log

    found = local_log(job)
    if found is None:
        return False
    st, lines = found
    if follow and not st.done:
        raise BadInput("--follow", job, "a local job that has ended (a running one prints here)")
    if rank is not None and st.world is not None and rank >= st.world:
        raise BadInput("rank", rank, f"0 to {st.world - 1} ({job} runs {st.world} ranks)")
    if host is not None and int(host.split("-")[1]) > st.instance_count:
        raise BadInput("host", host, f"algo-1 to algo-{st.instance_count} ({job}'s instances)")
    picked = [ln for ln in lines if rank in (None, ln.rank) and host in (None, ln.host)]
    if rank is not None:
        shown = [ln.text for ln in picked]
    else:
        shown = render_demuxed(picked, st.processes_per_host)
    for text in shown:
        click.echo(printable(text))
    if st.failure_reason:
        click.echo(f"smmpi: {printable(summary(st.failure_reason) or '')}", err=True)
    if follow:
        click.echo(f"smmpi: {job} {st.status}", err=True)
        sys.exit(1 if st.status == "Failed" else 0)
    return True
