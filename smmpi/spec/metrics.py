"""Metric definitions (``--metric NAME=REGEX``, the SDK's ``metric_definitions``), checked.

They become the request's ``AlgorithmSpecification.MetricDefinitions``. SageMaker's
own limits come from botocore's model (at most 40 definitions, a name of 1-255 and
a regex of 1-500 characters); a regex that does not compile, and a name given
twice, are refused here too, before anything is uploaded or run.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from smmpi.errors import BadInput

FIELD = "metric"


@dataclass(frozen=True)
class MetricLimits:
    definitions: int
    name: int
    regex: int


@functools.lru_cache(maxsize=1)
def metric_limits() -> MetricLimits:
    """The limits as botocore's SageMaker model states them (SageMaker's documented ones
    where botocore is not installed: a ``smmpi run``-only install)."""
    from smmpi.aws.facts import service_model

    try:
        shapes = service_model("sagemaker")["shapes"]
    except ImportError:
        return MetricLimits(definitions=40, name=255, regex=500)
    return MetricLimits(
        definitions=int(shapes["MetricDefinitionList"]["max"]),
        name=int(shapes["MetricName"]["max"]),
        regex=int(shapes["MetricRegex"]["max"]),
    )


def regex_problem(regex: str) -> str | None:
    """Why ``regex`` does not compile (None: it does)."""
    try:
        re.compile(regex)
    except (re.error, RecursionError, OverflowError) as err:
        return str(err)
    return None


def _shown(text: str) -> str:
    return text if len(text) <= 60 else f"{text[:40]}... ({len(text)} characters)"


def _pairs(value: object) -> list[tuple[str, str]]:
    """``NAME=REGEX`` strings, ``{"Name", "Regex"}`` mappings, or one ``{name: regex}``."""
    if isinstance(value, Mapping):
        return [(str(k), str(v)) for k, v in value.items()]
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence):
        raise BadInput(FIELD, value, "a list of NAME=REGEX strings or {'Name', 'Regex'} mappings")
    found = []
    for item in value:
        if isinstance(item, Mapping) and set(item) == {"Name", "Regex"}:
            found.append((str(item["Name"]), str(item["Regex"])))
        elif isinstance(item, str) and "=" in item and item.partition("=")[0]:
            name, _, regex = item.partition("=")
            found.append((name, regex))
        else:
            raise BadInput(FIELD, item, "NAME=REGEX (a name, '=', then a regular expression)")
    return found


def check_metrics(value: object) -> tuple[dict[str, str], ...]:
    """The definitions as SageMaker takes them (``Name``, ``Regex``), or one line naming the
    first that SageMaker (or Python's ``re``) would refuse."""
    if value is None or (isinstance(value, (list, tuple)) and not value):
        return ()
    pairs = _pairs(value)
    most = metric_limits()
    if len(pairs) > most.definitions:
        raise BadInput(FIELD, f"{len(pairs)} definitions", f"at most {most.definitions}")
    seen: set[str] = set()
    for name, regex in pairs:
        if len(name) > most.name:
            raise BadInput(FIELD, _shown(name), f"a name of 1-{most.name} characters")
        if not regex or len(regex) > most.regex:
            raise BadInput(
                f"{FIELD} {_shown(name)}", _shown(regex), f"a regex of 1-{most.regex} characters"
            )
        problem = regex_problem(regex)
        if problem is not None:
            raise BadInput(
                f"{FIELD} {_shown(name)}",
                _shown(regex),
                f"a regular expression (Python's re: {problem})",
            )
        if name in seen:
            raise BadInput(FIELD, _shown(name), "each metric name once")
        seen.add(name)
    return tuple({"Name": name, "Regex": regex} for name, regex in pairs)
