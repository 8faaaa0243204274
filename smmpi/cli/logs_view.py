"""What ``smmpi logs`` prints of a SageMaker job's CloudWatch log, and the checks of its
options (boto3 and the log readers load inside, so ``--help`` stays fast)."""

from __future__ import annotations

import re
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, NoReturn

import click

from smmpi.errors import BadInput

if TYPE_CHECKING:
    from smmpi.ops.cloudwatch import LogLine
    from smmpi.ops.status import JobStatus


def check_logs_args(job: str, rank: int | None, host: str | None, interval: float) -> None:
    from smmpi.aws.facts import check_job_name

    check_job_name(job)
    if rank is not None and rank < 0:
        raise BadInput("rank", rank, "an integer >= 0")
    if host is not None and not re.fullmatch(r"algo-[1-9]\d*", host):
        raise BadInput("host", host, "algo-1, algo-2, ... (one per instance)")
    if interval <= 0:
        raise BadInput("interval", interval, "seconds > 0")


def check_rank(rank: int, st: JobStatus) -> None:
    """A rank the job does not have (its world: instances x processes per host) is refused.
    A ModelTrainer job's are read from its sm_drivers channel; where that cannot be read, the
    world is unknown and any rank is looked for."""
    world = st.world
    if world is None:
        return
    if rank >= world:
        raise BadInput("rank", rank, f"0 to {world - 1} ({st.name} runs {world} ranks)")


def check_host(logs: Any, job: str, host: str) -> None:
    """A host the job has no stream for is refused, naming the hosts it has."""
    from smmpi.ops import cloudwatch

    every = cloudwatch.log_streams(logs, job)
    if every and not any(cloudwatch.stream_host(s) == host for s in every):
        hosts = ", ".join(sorted({cloudwatch.stream_host(s) for s in every}))
        raise BadInput("host", host, hosts)


def printer(rank: int | None, host: str | None) -> Callable[[list[LogLine]], None]:
    """One rank's text bare, one host's raw lines bare, everything else with its source.

    Control characters a rank wrote (NUL, terminal escape sequences) are shown as ``\\xNN``.
    """
    from smmpi.mpi_output import printable
    from smmpi.ops import cloudwatch

    def show(lines: list[LogLine]) -> None:
        for line in cloudwatch.select(lines, rank):
            if rank is not None or (host is not None and line.rank is None):
                click.echo(printable(line.text))
            else:
                click.echo(printable(line.render()))

    return show


def follow_logs(
    sm: Any,
    logs: Any,
    job: str,
    host: str | None,
    interval: float,
    show: Callable[[list[LogLine]], None],
) -> NoReturn:
    """Print lines as they arrive until the job ends; exit with the job's outcome."""
    from smmpi.mpi_output import printable
    from smmpi.ops import cloudwatch

    try:
        log = cloudwatch.JobLog(logs, job, host)
        final = cloudwatch.follow(sm, logs, job, show, host=host, interval=interval, log=log)
    except KeyboardInterrupt:
        click.echo(
            f"smmpi: stopped following; {job} keeps running (`smmpi stop {job}` stops it)",
            err=True,
        )
        sys.exit(130)
    for text in cloudwatch.failure_summary(final, log.scan):
        click.echo(f"smmpi: {printable(text)}", err=True)
    click.echo(f"smmpi: {job} {final.status}", err=True)
    sys.exit(1 if final.status == "Failed" else 0)


def print_logs(
    logs: Any,
    st: JobStatus,
    rank: int | None,
    host: str | None,
    show: Callable[[list[LogLine]], None],
) -> None:
    """Everything logged so far: demuxed by rank, or one rank's or one host's lines."""
    from smmpi.mpi_output import printable
    from smmpi.ops import cloudwatch

    log = cloudwatch.JobLog(logs, st.name, host)
    lines = log.poll(final=True)
    if not log.readers:
        click.echo(f"smmpi: no logs yet for {st.name} ({st.status}: {st.secondary})", err=True)
        return
    if rank is not None or host is not None:
        show(lines)
        if rank is not None and not cloudwatch.select(lines, rank):
            seen = sorted({ln.rank for ln in lines if ln.rank is not None})
            click.echo(f"smmpi: no output from rank {rank}; ranks seen: {seen}", err=True)
    else:
        for text in cloudwatch.render_demuxed(lines, st.processes_per_host):
            click.echo(printable(text))
    for text in cloudwatch.failure_summary(st, log.scan):
        click.echo(f"smmpi: {printable(text)}", err=True)
