"""Checks on MPIJob as a whole: each field's type, and SageMaker's own limits.

Python callers can pass anything; a wrong type is :class:`BadInput` naming the
field, never a TypeError from deep inside. SageMaker's limits (hyperparameters,
channels, tags, environment) come from botocore's model
(:mod:`smmpi.aws.limits`) and are checked here, before anything is uploaded.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Mapping
from typing import Any, TypeGuard

from smmpi.aws.facts import MAX_RUN_LIMIT, MAX_RUN_MIN, MAX_RUN_RULE
from smmpi.aws.limits import check_count, check_hyperparameters, limits
from smmpi.bounded import ascii_int, existing_problem
from smmpi.errors import BadInput
from smmpi.spec.checks import parse_mpi_options
from smmpi.spec.pairs import Pairs, check_env
from smmpi.spec.pairs import check_hyperparameters as check_hyperparameter_names
from smmpi.spec.shell import check_shell_words

#: The files a run writes in ``--log-dir``.
_LOG_NAME_RE = re.compile(r"rank-[0-9]+\.log|mpirun\.log")

#: Fields that are a string or None.
_TEXT = (
    "framework",
    "framework_version",
    "py_version",
    "role",
    "bucket",
    "region",
    "job_name",
    "base_job_name",
    "output_path",
    "checkpoint_s3_uri",
    "instance_type",
)
#: Fields given as a mapping or as ``K=V`` strings (the CLI form), and their singular name.
_PAIRS = {"hyperparameters": "hyperparameter", "env": "env", "tags": "tags", "inputs": "inputs"}


def _strings(value: object) -> bool:
    return isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value)


def check_types(fields: Mapping[str, Any]) -> None:
    """Each field has a type MPIJob takes (``fields``: the constructor's values by name)."""
    for name in _TEXT:
        value = fields.get(name)
        if value is not None and not isinstance(value, str):
            raise BadInput(name, value, "a string")
    source_dir = fields.get("source_dir")
    if source_dir is not None and not isinstance(source_dir, (str, os.PathLike)):
        raise BadInput("source_dir", source_dir, "a path to an existing directory")
    options = fields.get("mpi_options")
    if options is not None and not isinstance(options, str) and not _strings(options):
        raise BadInput("mpi_options", options, "a string of mpirun options, or a list of them")
    for name, shown in _PAIRS.items():
        value = fields.get(name)
        if value is None or isinstance(value, (str, Mapping)) or _strings(value):
            continue
        raise BadInput(shown, value, "a mapping, or a list of KEY=VALUE strings")
    _no_repeated_channel(fields.get("inputs"))


def _no_repeated_channel(inputs: object) -> None:
    """``--input train=a --input train=b`` would keep only the last: refuse it."""
    if not isinstance(inputs, (list, tuple)):
        return
    seen: set[str] = set()
    for pair in inputs:
        name = str(pair).partition("=")[0]
        if name in seen:
            raise BadInput("inputs", name, "each channel name once")
        seen.add(name)


def check_limits(
    framework: str,
    hyperparameters: dict[str, str],
    channels: dict[str, str],
    tags: dict[str, str],
    env: dict[str, str],
) -> None:
    """SageMaker's CreateTrainingJob limits, as the SDK will send the request."""
    lim = limits()
    check_hyperparameters(hyperparameters, framework)
    check_count("inputs", channels, lim.channels)
    check_count("tags", tags, lim.tags, own=1)  # smmpi:managed=true
    check_count("env", env, lim.environment)


def run_seconds(name: str, value: object) -> int:
    """``max_run``, ``max_wait``: whole seconds in SageMaker's range for a job's run time;
    an int, or its ASCII digits (the CLI form)."""
    number = ascii_int(value) if isinstance(value, str) else value
    if not _within(number) or not isinstance(number, int):
        raise BadInput(name, value, MAX_RUN_RULE)
    return number


def check_timeout(value: object, name: str = "timeout") -> float | None:
    """A local run's timeout (None: none) stands for the job's ``max_run``, so it takes
    SageMaker's range (fractions too): ``1e-9`` would stop a run before it starts, ``1e30``
    never."""
    if value is None:
        return None
    if not _within(value):
        raise BadInput(name, value, TIMEOUT_RULE)
    return float(value)


#: The range of a local run's ``--timeout``, in words.
TIMEOUT_RULE = f"seconds from {MAX_RUN_MIN} to {MAX_RUN_LIMIT} (28 days, SageMaker's limit)"


def _within(value: object) -> TypeGuard[int | float]:
    """A finite number (not a bool) in SageMaker's range for MaxRuntimeInSeconds."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    finite = isinstance(value, int) or math.isfinite(value)  # 10**400 is no float
    return finite and MAX_RUN_MIN <= value <= MAX_RUN_LIMIT


def check_run_choices(
    framework: str, hyperparameters: Pairs, env: Pairs, mpi_options: str | None
) -> tuple[dict[str, str], dict[str, str], str]:
    """``smmpi run``'s hyperparameters, Environment and mpirun options, checked as MPIJob checks
    ``submit``'s: the same names, limits and refusals (credentials, launch options, no shell)."""
    hps = check_hyperparameter_names(hyperparameters)
    check_shell_words(framework, hps)
    variables = check_env(env)
    if hps or variables:  # botocore's model is read only when there is something to count
        check_limits(framework, hps, {}, {}, variables)
    return hps, variables, " ".join(parse_mpi_options(mpi_options))


def check_region(framework: str, version: str, region: str, source: str = "") -> str:
    """A region the SDK has this framework's training image in (its own table says where).

    The SDK would otherwise fail deep inside ``image_uris`` with a long
    traceback, after smmpi had resolved the account and maybe made a bucket.
    """
    from smmpi.spec.versions import training_versions

    table = training_versions(framework)
    full = table.get("version_aliases", {}).get(version, version)
    regions = sorted(table["versions"].get(full, {}).get("registries", {}))
    if regions and region not in regions:
        shown = ", ".join(r for r in ("us-east-1", "us-west-2", "eu-west-1") if r in regions)
        raise BadInput(
            "region" + source,
            region,
            f"one of the {len(regions)} regions the SageMaker SDK has {framework} "
            f"{version} images in, e.g. {shown}",
        )
    return region


def check_log_dir(path: str | os.PathLike[str]) -> None:
    """A folder for per-rank logs that smmpi can create and write to, before anything runs."""
    folder = os.fspath(path)
    try:
        os.makedirs(folder, exist_ok=True)
    except OSError as err:
        raise BadInput("log_dir", folder, f"a folder smmpi can create ({err.strerror})") from None
    if not os.access(folder, os.W_OK | os.X_OK):
        raise BadInput("log_dir", folder, "a folder smmpi can write to (permission denied)")
    try:
        names = [n for n in os.listdir(folder) if _LOG_NAME_RE.fullmatch(n)]
    except OSError as err:
        raise BadInput("log_dir", folder, f"a folder smmpi can read ({err.strerror})") from None
    for name in sorted(names):  # smmpi rewrites its own logs, never what a link points to
        problem = existing_problem(os.path.join(folder, name))
        if problem:
            raise BadInput(
                "log_dir",
                os.path.join(folder, name),
                f"a folder whose {name} is a plain file or absent ({problem}); "
                "smmpi never writes through a link",
            )
