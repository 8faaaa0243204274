"""``--backend slurm`` for ``submit`` and the job commands (status, jobs, logs, stop, fetch).

JOB is SLURM's job id. States are SLURM's words; exit codes are smmpi's (0 COMPLETED,
1 another end, 124 TIMEOUT, 2 bad input).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

import click

from smmpi.errors import BadInput

if TYPE_CHECKING:
    from smmpi.runners.slurm.operate import JobState
    from smmpi.runners.slurm.profile import Profile
    from smmpi.spec import MPIJob

F = TypeVar("F", bound=Callable[..., Any])
BACKENDS = ("sagemaker", "slurm")
_SLURM_FLAGS = ("partition", "account", "time", "profile")
#: Ends that SLURM brought about, not a rank: said as local runs say a --timeout
ENDED_BY = {"TIMEOUT": "timed out at the job's time limit (--time); SLURM stopped every rank"}


@dataclass(frozen=True)
class SlurmFlags:
    partition: str | None
    account: str | None
    time: str | None
    profile: str | None

    def load(self) -> Profile:
        from smmpi.runners.slurm import profile

        return profile.load(
            self.profile, partition=self.partition, account=self.account, time=self.time
        )


def _backend(value: str) -> str:
    if value not in BACKENDS:
        raise BadInput("--backend", value, " | ".join(BACKENDS))
    return value


def backend_options(submit: bool = False) -> Callable[[F], F]:
    """``--backend`` and ``--profile``; with ``submit``, SLURM's --partition/--account/--time."""

    def decorate(f: F) -> F:
        names = ("partition", "account", "time") if submit else ()
        for name in reversed(names):
            f = click.option(f"--{name}", default=None, help=f"SLURM: the job's {name}.")(f)
        f = click.option("--profile", default=None, help="SLURM: a profile of the config file.")(f)
        return click.option(
            "--backend", default="sagemaker", show_default=True, help="sagemaker | slurm."
        )(f)

    return decorate


def take(fields: dict[str, Any]) -> SlurmFlags | None:
    """SLURM's flags out of ``fields``; None for SageMaker (where they are refused)."""
    backend = _backend(fields.pop("backend"))
    values = {name: fields.pop(name, None) for name in _SLURM_FLAGS}
    if backend == "slurm":
        return SlurmFlags(**values)
    given = [name for name, value in values.items() if value is not None]
    if given:
        raise BadInput(f"--{given[0]}", values[given[0]], "only with --backend slurm")
    return None


def submit(job: MPIJob, flags: SlurmFlags, *, dry_run: bool, wait: bool, as_json: bool) -> None:
    """The batch script (--dry-run), or the job submitted and, with --wait, followed."""
    from smmpi.runners.slurm import operate, script
    from smmpi.runners.slurm import submit as slurm_submit

    profile = flags.load()
    if dry_run:
        name = slurm_submit.job_name(job)
        b = slurm_submit.batch(job, profile, name)
        text = script.render(b)
        shown = {"script": text, "job_name": name, "world_size": b.world_size}
        click.echo(json.dumps(shown, indent=2) if as_json else text, nl=as_json)
        return
    done = slurm_submit.submit(job, profile)
    if not wait:
        click.echo(json.dumps(vars(done)) if as_json else done.job_id)
        return
    click.echo(done.job_id)
    final = operate.follow(profile, done.job_id, _say_state)
    sys.exit(_ended(final))


def _say_state(st: JobState) -> None:
    where = f" on {st.nodes}" if st.nodes else ""
    click.echo(f"smmpi: job {st.job_id} {st.state}{where}", err=True)


def _ended(st: JobState) -> int:
    from smmpi.runners.slurm.verdict import failure_line

    if st.state != "COMPLETED":
        why = failure_line(st) or ENDED_BY.get(st.state) or f"exit code {st.exit_code}"
        click.echo(f"smmpi: job {st.job_id} {st.state}: {why}", err=True)
    return st.smmpi_exit


def status(job: str, flags: SlurmFlags, as_json: bool) -> None:
    from smmpi.runners.slurm import operate

    st = operate.state(flags.load(), job)
    if as_json:
        click.echo(json.dumps({**vars(st), "exit": st.smmpi_exit}, sort_keys=True))
        return
    from smmpi.runners.slurm.verdict import BLAMED, failure_line

    click.echo(f"job {st.job_id} ({st.name}): {st.state}")
    click.echo(f"nodes: {st.nodes or '-'}  exit code: {st.exit_code or '-'}")
    click.echo(f"folder: {st.work_dir}")
    if st.state in BLAMED:
        click.echo(f"failure: {failure_line(st) or 'no rank recorded a failure'}")


def stop(job: str, flags: SlurmFlags) -> None:
    from smmpi.runners.slurm import operate

    before = operate.stop(flags.load(), job)
    verb = "was already" if before.ended else "stopping; it was"
    click.echo(f"job {job} {verb} {before.state}")


def logs(job: str, flags: SlurmFlags, rank: int | None, follow: bool) -> None:
    from smmpi.mpi_output import printable
    from smmpi.runners.slurm import operate

    profile = flags.load()
    if follow:
        final = operate.follow_logs(profile, job, lambda line: click.echo(printable(line)), rank)
        sys.exit(_ended(final))
    st = operate.state(profile, job)
    for line in operate.log_lines(st.work_dir, rank):
        click.echo(printable(line))


def jobs(flags: SlurmFlags, as_json: bool) -> None:
    from smmpi.runners.slurm import operate

    found = operate.jobs(flags.load())
    if as_json:
        click.echo(json.dumps([vars(j) for j in found]))
        return
    width = max([len("NAME"), *(len(j.name) for j in found)])
    click.echo(f"{'JOB':<8}  {'NAME':<{width}}  {'STATE':<13}  NODES")
    for j in found:
        click.echo(f"{j.job_id:<8}  {j.name:<{width}}  {j.state:<13}  {j.nodes or '-'}")


def fetch(job: str, flags: SlurmFlags, to: str | None) -> None:
    from pathlib import Path

    from smmpi.runners.slurm import operate

    dest = Path(to or job)
    copied = operate.fetch(flags.load(), job, dest)
    click.echo(f"{len(copied)} file(s) in {dest} (logs, model, output)")
