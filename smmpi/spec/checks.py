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
    ENV_KEY_RE,
    INSTANCE_TYPE_RE,
    JOB_NAME_RE,
    JOB_NAME_SUFFIX_LEN,
    MAX_ENV,
    S3_URI_RE,
    SECURITY_GROUP_RE,
    SUBNET_RE,
    TAG_RE,
    known_instance_types,
    vcpus,
)
from smmpi.bounded import CHANNEL_MAX_BYTES, ascii_int, lookup, regular_tree
from smmpi.errors import BadInput
from smmpi.spec.launch import check_launch_options
from smmpi.spec.secrets import check_env_secrets

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


def parse_pairs(field_name: str, pairs: Sequence[str] | Mapping[str, Any] | None) -> dict[str, str]:
    """``["K=V", ...]`` (the CLI form) or a mapping -> dict; a pair without ``=`` is refused."""
    if pairs is None:
        return {}
    if isinstance(pairs, Mapping):
        return {str(k): _scalar(field_name, k, v) for k, v in pairs.items()}
    if isinstance(pairs, str):
        pairs = [pairs]
    out: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = str(pair).partition("=")
        if not sep or not key:
            raise BadInput(field_name, pair, "KEY=VALUE pairs (an '=' after a non-empty key)")
        out[key] = value
    return out


def _scalar(field_name: str, key: object, value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (str, int, float)):
        return str(value)
    raise BadInput(f"{field_name}[{key}]", value, "a string, number or bool")


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


def check_instance_type(value: object, ppn: int) -> str | None:
    """A training instance type SageMaker knows; returns a note when ppn exceeds its vCPUs."""
    if not isinstance(value, str) or not INSTANCE_TYPE_RE.match(value):
        raise BadInput(
            "instance_type",
            value,
            "a SageMaker training instance type starting with 'ml.', e.g. ml.c5.2xlarge",
        )
    known = known_instance_types()
    if known is not None and value not in known:
        close = difflib.get_close_matches(value, sorted(known), n=3)
        raise BadInput(
            "instance_type",
            value,
            "a SageMaker training instance type"
            + (f" (closest: {', '.join(close)})" if close else ""),
        )
    cpus = vcpus(value)
    if cpus is not None and ppn > cpus:
        return f"ppn {ppn} exceeds the {cpus} vCPUs of {value}: processes will share cores"
    return None


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


Pairs = Mapping[str, Any] | Sequence[str] | None


def check_hyperparameters(raw: Pairs) -> dict[str, str]:
    """User hyperparameters: names the container does not reserve for itself."""
    hps = parse_pairs("hyperparameter", raw)
    for key in hps:
        if key.startswith("sagemaker_") or key == "model_dir":
            raise BadInput(
                "hyperparameter",
                key,
                "a name not starting with 'sagemaker_' and not 'model_dir' "
                "(reserved for the container)",
            )
        if not key or len(key) > 256:
            raise BadInput("hyperparameter", key, "a name of 1-256 characters")
    return hps


def check_env(raw: Pairs) -> dict[str, str]:
    """The container's Environment, within SageMaker's limits."""
    env = parse_pairs("env", raw)
    check_env_secrets(env)
    for key, value in env.items():
        if not ENV_KEY_RE.match(key) or len(key) > 512:
            raise BadInput("env", key, "a variable name matching [A-Za-z_][A-Za-z0-9_]*")
        if len(value) > 512:
            raise BadInput(f"env[{key}]", value[:40] + "...", "a value of at most 512 chars")
    if len(env) > MAX_ENV:
        raise BadInput("env", len(env), f"at most {MAX_ENV} variables")
    return env


def check_tags(raw: Pairs) -> dict[str, str]:
    """The job's tags, as SageMaker's tag rules allow them."""
    tags = parse_pairs("tags", raw)
    for key, value in tags.items():
        if key.startswith("aws:") or not 1 <= len(key) <= 128 or not TAG_RE.match(key):
            raise BadInput(
                "tags",
                key,
                "a tag key of 1-128 letters, digits, spaces and _.:/=+-@, not starting with 'aws:'",
            )
        if len(value) > 256 or not TAG_RE.match(value):
            raise BadInput(
                f"tags[{key}]",
                value,
                "a tag value of at most 256 letters, digits, spaces and _.:/=+-@",
            )
    return tags
