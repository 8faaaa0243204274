"""What ``smmpi submit`` prints and exits with in each mode: --dry-run, --local, and submit.

Module level imports click only: ``smmpi --help`` must not load the SDK.
"""

from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING, Any

import click

if TYPE_CHECKING:
    from smmpi.spec import MPIJob


def echo_err(line: str) -> None:
    """One line to stderr."""
    click.echo(line, err=True)


def run_here(
    job: MPIJob,
    timeout: float | None,
    log_dir: str | None,
    install: bool,
    as_json: bool,
    passed: dict[str, Any],
    isolation: str | None = None,
) -> None:
    from smmpi import api

    local_job = api.run_local(
        job,
        timeout=timeout,
        log_dir=log_dir,
        out=sys.stderr if as_json else None,
        install_requirements=install,
        **passed,
        isolation=isolation,
    )
    if as_json:
        click.echo(json.dumps(local_job.record, indent=2, default=str))
    sys.exit(local_job.exit_code)


def dry_run(job: MPIJob, as_json: bool) -> None:
    from smmpi import api
    from smmpi.cli.render import plan_json, render_plan

    result = api.plan(job)
    click.echo(
        json.dumps(plan_json(job, result), indent=2) if as_json else render_plan(job, result)
    )


def notices(line: str) -> None:
    """With --json, only what must never go unsaid reaches stderr: warnings, created buckets."""
    if line.startswith(("smmpi: warning", "created bucket")):
        echo_err(line)


def submit(
    job: MPIJob, wait: bool, stop_on_interrupt: bool, as_json: bool, create_bucket: bool
) -> None:
    from smmpi import api

    try:
        sub = api.submit(
            job,
            wait=wait,
            echo=notices if as_json else echo_err,
            on_log=None if as_json else click.echo,
            stop_on_interrupt=stop_on_interrupt,
            create_bucket=create_bucket,
        )
    except KeyboardInterrupt:
        echo_err("smmpi: interrupted; a created job keeps running (smmpi stop JOB)")
        sys.exit(130)
    if as_json:
        click.echo(json.dumps(sub.to_json(), indent=2, default=str))
    else:
        click.echo(sub.job_name)
        if sub.status in ("Failed", "Stopped"):
            echo_err(
                f"smmpi: job {sub.job_name} {sub.status}: {sub.failure_reason or 'no reason given'}"
            )
    if wait:
        sys.exit(sub.exit_code)
