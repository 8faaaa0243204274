"""The checks behind MPIJob's fields: each turns a user's value into a valid one or raises.

A bad value raises :class:`~smmpi.errors.BadInput` naming the field, the value
and what is allowed. SageMaker's own patterns and limits come from
:mod:`smmpi.aws.facts`.
"""

from __future__ import annotations

import dataclasses
import difflib
import functools
import re
import shlex
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

from smmpi.aws.facts import (
    CHANNEL_MAX,
    CHANNEL_RE,
    JOB_NAME_RE,
    JOB_NAME_SUFFIX_LEN,
    S3_URI_RE,
    SECURITY_GROUP_RE,
    SUBNET_RE,
)
from smmpi.bounded import CHANNEL_MAX_BYTES, ascii_int, lookup, regular_tree
from smmpi.errors import BadInput
from smmpi.spec.launch import check_launch_options
from smmpi.spec.pairs import parse_pairs

# Characters a shell would act on. The container splits custom MPI options on
# whitespace and never runs a shell, so quotes cannot work either: refuse them.
MPI_OPTION_FORBIDDEN = frozenset(";&|<>$`\\(){}*?!~#'\"\n\r")

_T = TypeVar("_T")
# The SDK's names for our fields, and its classic misspelling, point to ours.
_ALIASES = {
    "processes_per_host": "ppn",
    "process_per_host": "ppn",
    "instance_count": "instances",
    "entry_point": "entry",
    "environment": "env",
    "custom_mpi_options": "mpi_options",
    "use_spot_instances": "use_spot",
    "keep_alive_period_in_seconds": "keep_alive",
    "enable_network_isolation": "network_isolation",
    "security_group_ids": "security_groups",
    "volume_size_in_gb": "volume_size",
}


class UnknownField(BadInput, TypeError):
    """A keyword MPIJob does not have (a TypeError too, as Python would raise)."""


def strict_kwargs(cls: type[_T]) -> type[_T]:
    """Make unknown keywords fail with the list of valid ones, not a bare TypeError."""
    names = [f.name for f in dataclasses.fields(cls) if f.init]  # type: ignore[arg-type]
    original: Callable[..., None] = cls.__init__  # type: ignore[misc]

    @functools.wraps(original)
    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        for key in kwargs:
            if key not in names:
                close = [_ALIASES[key]] if key in _ALIASES else []
                close = close or difflib.get_close_matches(key, names, n=1)
                hint = f" (did you mean {close[0]!r}?)" if close else ""
                raise UnknownField(key, kwargs[key], "one of " + ", ".join(names) + hint)
        original(self, *args, **kwargs)

    cls.__init__ = __init__  # type: ignore[method-assign,misc]
    return cls


def parse_mpi_options(options: str | Sequence[str] | None) -> tuple[str, ...]:
    """Custom mpirun options as an argv tuple, never passing through a shell.

    The container toolkit splits the string on whitespace, so anything a shell
    or a quote would change is refused rather than silently mangled.
    """
    if options is None:
        return ()
    text = options if isinstance(options, str) else " ".join(options)
    bad = sorted({c for c in text if c in MPI_OPTION_FORBIDDEN})
    if bad:
        shown = " ".join(repr(c) for c in bad)
        raise BadInput(
            "mpi_options",
            text,
            "plain mpirun options separated by spaces "
            f"(no shell metacharacters or quotes; found {shown})",
        )
    argv = tuple(shlex.split(text, posix=True))
    if argv and not argv[0].startswith("-"):
        raise BadInput("mpi_options", text, "mpirun options starting with '-'")
    check_launch_options(argv, text)
    return argv


def positive_int(name: str, value: object, upper: int | None = None) -> int:
    """An integer from 1 to ``upper``: an int, or its ASCII digits (the CLI form)."""
    if isinstance(value, str) and ascii_int(value) is not None:
        value = ascii_int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise BadInput(name, value, "an integer >= 1 in ASCII digits")
    if value < 1 or (upper is not None and value > upper):
        raise BadInput(name, value, f"an integer from 1 to {upper}" if upper else "an integer >= 1")
    return value


def s3_uri(name: str, value: str | None) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or not S3_URI_RE.fullmatch(value):
        raise BadInput(name, value, "an s3://bucket/prefix URI")
    return value


def seconds(name: str, value: object, low: int, high: int) -> int:
    """An integer number of seconds in [low, high]; digit strings (the CLI form) are accepted."""
    if isinstance(value, str) and ascii_int(value) is not None:
        value = ascii_int(value)
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise BadInput(name, value, f"seconds from {low} to {high}")
    return value


# VpcConfig limits in the SageMaker API: 1-16 subnets, 1-5 security groups.
_VPC_RULES = {
    "subnets": (SUBNET_RE, 16, "subnet IDs like subnet-0123abcd"),
    "security_groups": (SECURITY_GROUP_RE, 5, "security group IDs like sg-0123abcd"),
}


def check_vpc_ids(name: str, values: object, source: str = "") -> tuple[str, ...]:
    """Subnet or security group IDs as a tuple; ``source`` says where they came from."""
    pattern, limit, allowed = _VPC_RULES[name]
    if values is None:
        return ()
    items = (values,) if isinstance(values, str) else values
    if not isinstance(items, (list, tuple)):
        raise BadInput(name + source, values, "a list of " + allowed)
    for item in items:
        if not isinstance(item, str) or not pattern.match(item):
            raise BadInput(name + source, item, allowed)
    if len(items) > limit:
        raise BadInput(name + source, len(items), f"at most {limit} {allowed}")
    return tuple(items)


def parse_inputs(inputs: Mapping[str, Any] | Sequence[str] | None) -> dict[str, str]:
    """Input channels as ``{name: uri}``: the name is SageMaker's channel pattern.

    The URI must be ``s3://bucket/prefix`` or ``file:///path`` (an existing
    path). ``file://`` runs only locally; :func:`require_s3_inputs` refuses it
    for SageMaker, because the spec does not know yet where it will run.
    """
    channels = parse_pairs("inputs", inputs)
    for name, uri in channels.items():
        if not CHANNEL_RE.match(name) or len(name) > CHANNEL_MAX:
            raise BadInput(
                "inputs",
                name,
                f"a channel name of 1-{CHANNEL_MAX} letters, digits and . - _",
            )
        if uri.startswith("file://"):
            path = Path(uri[len("file://") :])
            if not path.is_absolute() or not lookup(f"inputs.{name}", path):
                raise BadInput(f"inputs.{name}", uri, "file:// and an existing absolute path")
            regular_tree(path, f"inputs.{name}", CHANNEL_MAX_BYTES)  # no FIFO, device, ...
        elif not S3_URI_RE.fullmatch(uri):
            raise BadInput(
                f"inputs.{name}", uri, "an s3://bucket/prefix URI (or file:///path with --local)"
            )
    return channels


def check_pattern(name: str, value: str | None, pattern: re.Pattern[str], rule: str) -> None:
    """A value given (None is "not given") must match SageMaker's pattern for it."""
    if value is not None and not pattern.match(value):
        raise BadInput(name, value, rule)


def check_job_names(job_name: str | None, base_job_name: str | None) -> None:
    """A job name, or a base name that leaves room for the date the SDK appends."""
    for name, value in (("job_name", job_name), ("base_job_name", base_job_name)):
        if value is not None and not JOB_NAME_RE.match(value):
            raise BadInput(
                name,
                value,
                "1-63 of a-z A-Z 0-9 and '-', starting and ending with a letter or digit",
            )
    if base_job_name and len(base_job_name) > 63 - JOB_NAME_SUFFIX_LEN:
        raise BadInput(
            "base_job_name",
            base_job_name,
            f"at most {63 - JOB_NAME_SUFFIX_LEN} characters (a date is appended)",
        )


APIS = ("estimator", "model-trainer")


def check_api(api: object, job_name: str | None, as_sagemaker: object = False) -> None:
    """Which SDK API builds the request: the framework estimator, or ModelTrainer (whose
    driver's per-node ``-np`` smmpi leaves as it is with ``as_sagemaker``)."""
    if api not in APIS:
        raise BadInput("api", api, " or ".join(APIS))
    if not isinstance(as_sagemaker, bool):
        raise BadInput("as_sagemaker", as_sagemaker, "True or False")
    if as_sagemaker and api != "model-trainer":
        raise BadInput(
            "as_sagemaker",
            as_sagemaker,
            "only with api model-trainer (the estimators' container starts all N x n ranks)",
        )
    if api == "model-trainer" and job_name is not None:
        raise BadInput(
            "job_name",
            job_name,
            "none with api model-trainer (ModelTrainer names each job BASE-TIMESTAMP: "
            "set base_job_name / --base-job-name)",
        )
