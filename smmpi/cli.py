"""The ``smmpi`` command: a thin layer of click over the library.

Start-up must stay fast (``smmpi --help`` < 0.3 s): import nothing heavy at
module level. The SageMaker SDK, boto3 and numpy are imported inside commands.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any, TypeVar

import click

from smmpi.errors import SmmpiError

F = TypeVar("F", bound=Callable[..., Any])


def _fail(err: SmmpiError) -> None:
    click.echo(f"smmpi: {err}", err=True)
    sys.exit(err.exit_code)


class _Group(click.Group):
    """Bad input is one line and exit code 2; smmpi's own errors are one line and their code."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except SmmpiError as err:
            _fail(err)

    def main(self, *args: Any, **kwargs: Any) -> Any:
        kwargs["standalone_mode"] = False
        try:
            code = super().main(*args, **kwargs)
        except click.exceptions.BadParameter as err:
            message = err.message if err.message.startswith("invalid ") else err.format_message()
            click.echo(f"smmpi: {message}", err=True)
            sys.exit(2)
        except click.exceptions.UsageError as err:
            click.echo(f"smmpi: {err.format_message()} (see --help)", err=True)
            sys.exit(2)
        except click.exceptions.Abort:
            click.echo("smmpi: interrupted", err=True)
            sys.exit(130)
        sys.exit(code if isinstance(code, int) else 0)


class PositiveInt(click.ParamType):  # type: ignore[type-arg]  # generic only in click >= 8.2
    """An integer >= 1; anything else is one line naming the field."""

    name = "N"

    def __init__(self, field: str) -> None:
        self.field = field

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> int:
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value
        try:
            number = int(str(value), 10)
        except ValueError:
            number = 0
        if number <= 0:
            self.fail(f"invalid {self.field}: {value!r}; allowed: an integer >= 1", param, ctx)
        return number


def positive_int(field: str) -> PositiveInt:
    return PositiveInt(field)


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="smmpi")
def main() -> None:
    """Run mpi4py programs on Amazon SageMaker as N instances x n processes.

    Build the job once; print it (submit --dry-run), run it here Docker-free at
    the same world size (run, submit --local), or submit it to SageMaker.
    """


@main.command("entry-points")
def entry_points_cmd() -> None:
    """List the packaged entry points, one line each."""
    from smmpi.catalog import packaged

    eps = packaged()
    width = max(len(ep.name) for ep in eps)
    for ep in eps:
        click.echo(f"{ep.name:<{width}}  {ep.description}")


@main.command("run", context_settings={"ignore_unknown_options": False})
@click.argument("entry", required=False)
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
@click.option(
    "--instances",
    "-N",
    type=positive_int("instances"),
    default=1,
    show_default=True,
    help="Emulated instances (hosts algo-1..algo-N).",
)
@click.option(
    "--ppn",
    "-n",
    type=positive_int("ppn"),
    default=2,
    show_default=True,
    help="Processes per instance.",
)
@click.option(
    "--timeout",
    type=float,
    default=None,
    help="Seconds before every rank's stack is printed and the run is killed (exit 124).",
)
@click.option(
    "--log-dir",
    type=click.Path(file_okay=False),
    default=None,
    help="Write one log file per rank here (rank-R.log).",
)
@click.option(
    "--source-dir",
    type=click.Path(),
    default=None,
    help="Folder to lay out as the code dir with a user script.",
)
@click.option(
    "--keep",
    is_flag=True,
    help="Keep the emulated hosts' /opt/ml trees (local jobs from --from-job always keep them).",
)
@click.option(
    "--from-job",
    "from_job",
    default=None,
    metavar="NAME",
    help="Run a submitted training job's request and uploaded code here instead.",
)
@click.option("--region", default=None, help="AWS region of --from-job's job.")
@click.option(
    "--install-requirements",
    is_flag=True,
    help="With --from-job: pip-install the code's requirements.txt into the local job's folder.",
)
def run_cmd(
    entry: str | None,
    args: tuple[str, ...],
    instances: int,
    ppn: int,
    timeout: float | None,
    log_dir: str | None,
    source_dir: str | None,
    keep: bool,
    from_job: str | None,
    region: str | None,
    install_requirements: bool,
) -> None:
    """Run ENTRY here as N emulated SageMaker instances x n processes (local mpirun).

    ENTRY is a packaged entry point (see `smmpi entry-points`) or a path to a
    .py file. Arguments after `--` go to the program.

    With --from-job NAME, fetch a submitted job's description and uploaded
    sourcedir.tar.gz (through AWS_ENDPOINT_URL if set) and run exactly that.
    """
    from smmpi.catalog import resolve
    from smmpi.errors import BadInput

    if timeout is not None and timeout <= 0:
        raise BadInput("timeout", timeout, "a number of seconds > 0")
    if from_job is not None:
        if entry is not None or args:
            raise BadInput("ENTRY", entry or " ".join(args), "nothing with --from-job")
        from smmpi.local.job import (
            describe_remote,
            fetch_source,
            request_from_description,
            run_request,
        )

        description, s3 = describe_remote(from_job, region)
        request = request_from_description(description)
        source = fetch_source(request, s3)
        job = run_request(
            request,
            source,
            timeout=timeout,
            log_dir=log_dir,
            keep=True,
            region=region,
            install_requirements=install_requirements,
        )
        sys.exit(job.exit_code)
    from smmpi.local.launcher import LocalRun

    if entry is None:
        raise BadInput("ENTRY", "", "a packaged entry point name or a path to a .py file")
    program = resolve(entry, source_dir)
    result = LocalRun(
        program,
        instances=instances,
        ppn=ppn,
        args=list(args),
        timeout=timeout,
        log_dir=log_dir,
        keep=keep,
    ).run()
    sys.exit(result.exit_code)


def _register_commands() -> None:
    """Commands that live in their own modules (each imports only click at module level)."""
    from smmpi import cli_ops, cli_submit

    cli_submit.register(main)
    cli_ops.register(main)


_register_commands()

if __name__ == "__main__":
    main()
