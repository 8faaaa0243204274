"""The ``smmpi`` group: one line per error, exit codes by kind, and ``entry-points``."""

from __future__ import annotations

import sys
from typing import Any

import click

from smmpi.errors import SmmpiError


def _fail(err: SmmpiError) -> None:
    from smmpi.aws.errors import redact  # no endpoint's password in any line

    click.echo(f"smmpi: {redact(str(err))}", err=True)
    sys.exit(err.exit_code)


#: A bare `smmpi` under click >= 8.2 raises this; click 8.1 prints the help and exits 0 itself
_NO_ARGS_IS_HELP: Any = getattr(click.exceptions, "NoArgsIsHelpError", ())


class _Group(click.Group):
    """Bad input is one line and exit code 2; smmpi's own errors are one line and their code."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except SmmpiError as err:
            _fail(err)
        except Exception as err:
            from smmpi.aws.errors import error_line, is_aws_failure

            if not is_aws_failure(err):
                raise
            click.echo(f"smmpi: {error_line(err)}", err=True)  # scrubbed: no credential
            sys.exit(1)

    def main(self, *args: Any, **kwargs: Any) -> Any:
        kwargs["standalone_mode"] = False
        try:
            code = super().main(*args, **kwargs)
        except _NO_ARGS_IS_HELP as err:
            click.echo(err.ctx.get_help())  # a bare `smmpi`: its help, as click's convention
            sys.exit(0)
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


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="smmpi")
def main() -> None:
    """Run mpi4py programs on Amazon SageMaker as N instances x n processes.

    Build the job once; print it (submit --dry-run), run it here Docker-free at
    the same world size (run, submit --local), or submit it to SageMaker.
    """
    from smmpi.config import ensure_home
    from smmpi.ops.settings import check_settings

    ensure_home()
    if not {"-h", "--help"} & set(sys.argv[1:]):
        # every SMMPI_* setting, before any command does work (doctor reports on mpirun itself)
        check_settings(mpirun=click.get_current_context().invoked_subcommand != "doctor")


@main.command("entry-points")
def entry_points_cmd() -> None:
    """List the packaged entry points, one line each."""
    from smmpi.catalog import packaged

    eps = packaged()
    width = max(len(ep.name) for ep in eps)
    for ep in eps:
        click.echo(f"{ep.name:<{width}}  {ep.description}")
