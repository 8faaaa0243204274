"""``smmpi local-jobs list|prune``: the local jobs kept under ``~/.smmpi/local-jobs``."""

from __future__ import annotations

import json

import click


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
