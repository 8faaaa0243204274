"""Option groups shared by several commands (one decorator applies the whole group)."""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from typing import Any, TypeVar

import click

F = TypeVar("F", bound=Callable[..., Any])

region_option = click.option(
    "--region", default=None, help="AWS region (default: SMMPI_REGION, the config, AWS_REGION)."
)


#: A number in ASCII digits (``float()`` also reads fullwidth and Arabic-Indic digits).
_ASCII_NUMBER_RE = re.compile(r"[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][+-]?[0-9]+)?")


class AsciiInt(click.ParamType):  # type: ignore[type-arg]  # generic only in click >= 8.2
    """An integer in ASCII digits, at least ``low``: anything else is one line, exit 2.

    click's own ``int`` is Python's, which also reads ``'１２'``, ``'١٢'`` and ``'1_000'``.
    """

    name = "INTEGER"

    def __init__(self, field: str, low: int | None = None) -> None:
        self.field, self.low = field, low

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> int:
        if isinstance(value, int) and not isinstance(value, bool):
            number: int | None = value
        else:
            from smmpi.bounded import ascii_int

            number = ascii_int(str(value))
        if number is None or (self.low is not None and number < self.low):
            floor = f" >= {self.low}" if self.low is not None else ""
            self.fail(
                f"invalid {self.field}: {str(value)!r}; allowed: an integer{floor} in ASCII digits",
                param,
                ctx,
            )
        return number


class Seconds(click.ParamType):  # type: ignore[type-arg]  # generic only in click >= 8.2
    """A finite number of seconds > 0 in ASCII digits, or what ``check`` (the spec's check of
    the field, given the number) allows: anything else is one line, exit 2."""

    name = "SECONDS"

    def __init__(self, field: str, check: Callable[[float, str], float] | None = None) -> None:
        self.field, self.check = field, check

    def convert(
        self, value: Any, param: click.Parameter | None, ctx: click.Context | None
    ) -> float:
        from smmpi.errors import BadInput

        text = str(value).strip()
        number = float(text) if _ASCII_NUMBER_RE.fullmatch(text) else math.nan
        try:
            return (self.check or _positive)(number, self.field)
        except BadInput as err:
            self.fail(f"invalid {self.field}: {str(value)!r}; allowed: {err.allowed}", param, ctx)


def _positive(number: float, field: str) -> float:
    from smmpi.errors import BadInput

    if not (math.isfinite(number) and number > 0):
        raise BadInput(field, number, "a finite number of seconds > 0")
    return number


def _run_timeout(number: float, field: str) -> float:
    """A local run's ``--timeout``: the spec's range (it stands for the job's max run)."""
    from smmpi.spec.limits import check_timeout

    check_timeout(number, field)
    return number


def _group(*decorators: Callable[[F], F]) -> Callable[[F], F]:
    def apply(f: F) -> F:
        for decorator in reversed(decorators):
            f = decorator(f)
        return f

    return apply


ISOLATION_HELP = (
    "How emulated instances are made: hosts (each its own hostname, eth0 and /opt/ml; "
    "Linux namespaces), processes (app contexts of one host), auto (hosts where this "
    "machine allows it). Default: SMMPI_ISOLATION, else auto."
)

EXACT_HELP = (
    "Exact mode (isolated hosts, as root, with openssh-server): a real sshd on port 22 of "
    "every instance, and every instance runs the image's sagemaker-training toolkit (built "
    "once under ~/.smmpi/toolkits; SMMPI_TOOLKIT_VENV/SMMPI_TOOLKIT_TF name one, "
    "SMMPI_TOOLKIT_VENV=none runs mpirun through ssh without it), as in the container."
)


def local_run_options(
    timeout_help: str, log_dir_help: str, requirements_help: str
) -> Callable[[F], F]:
    """``--timeout``, ``--log-dir``, ``--install-requirements``, ``--isolation``: a local run."""
    return _group(
        click.option(
            "--timeout", type=Seconds("--timeout", _run_timeout), default=None, help=timeout_help
        ),
        click.option(
            "--isolation",
            type=click.Choice(["auto", "hosts", "processes"]),
            default=None,
            help=ISOLATION_HELP,
        ),
        click.option(
            "--log-dir", type=click.Path(file_okay=False), default=None, help=log_dir_help
        ),
        click.option("--install-requirements", is_flag=True, help=requirements_help),
        click.option("--exact", is_flag=True, help=EXACT_HELP),
    )


def shape_options(instances_help: str, ppn_help: str, required: bool) -> Callable[[F], F]:
    """``--instances/-N`` and ``--ppn/-n``, passed through as given: the spec checks them."""
    defaults: dict[str, Any] = {"required": True} if required else {}
    return _group(
        click.option(
            "--instances",
            "-N",
            type=click.UNPROCESSED,
            help=instances_help,
            **(defaults or {"default": 1, "show_default": True}),
        ),
        click.option(
            "--ppn",
            "-n",
            type=click.UNPROCESSED,
            help=ppn_help,
            **(defaults or {"default": 2, "show_default": True}),
        ),
    )


def pass_env_options() -> Callable[[F], F]:
    """``--pass-env NAME`` and ``--with-credentials``: what of this shell reaches local ranks."""
    return _group(
        click.option(
            "--pass-env",
            "pass_env",
            multiple=True,
            metavar="NAME",
            help="Pass this shell's NAME to every local rank (they get nothing else of it).",
        ),
        click.option(
            "--with-credentials",
            is_flag=True,
            help="Pass this shell's AWS credentials to the local ranks "
            "(on SageMaker they get the execution role's).",
        ),
    )


def request_choice_options() -> Callable[[F], F]:
    """``--mpi-options``, ``--hyperparameter K=V``, ``--env K=V``, ``--metric NAME=REGEX``: what
    the estimator is asked for (``submit``, and ``run``, which stands for a request)."""
    return _group(
        click.option(
            "--mpi-options",
            default=None,
            help='Extra mpirun options, e.g. "-x FOO=1 --NCCL_DEBUG WARN" (no shell).',
        ),
        click.option(
            "--hyperparameter",
            "hyperparameters",
            multiple=True,
            metavar="K=V",
            help="Passed to the program as --K V (repeatable).",
        ),
        click.option(
            "--env",
            "env",
            multiple=True,
            metavar="K=V",
            help="Container environment variable (repeatable).",
        ),
        click.option(
            "--metric",
            "metrics",
            multiple=True,
            metavar="NAME=REGEX",
            help="Training metric: REGEX's first group in the ranks' output, as SageMaker's "
            "MetricDefinitions (repeatable; `smmpi metrics JOB` shows the series).",
        ),
    )
