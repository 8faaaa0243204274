"""SageMaker's API model (botocore's): what each operation accepts, checked as SageMaker checks.

botocore's :class:`~botocore.validate.ParamValidator` checks required members,
types and minimums; the maximums, patterns and enums it leaves to the service
are checked here from the same shapes. An error reads as SageMaker's does
("1 validation error detected: Value ... at 'field' failed to satisfy constraint: ...").
"""

from __future__ import annotations

import functools
import re
from typing import Any

from botocore.model import OperationModel, ServiceModel
from botocore.validate import ParamValidator

from smmpi.aws.facts import shared_loader
from smmpi.serve.errors import validation

_MAX_ERRORS = 10


@functools.lru_cache(maxsize=1)
def service_model() -> ServiceModel:
    return ServiceModel(shared_loader().load_service_model("sagemaker", "service-2"), "sagemaker")


@functools.lru_cache(maxsize=64)
def operation(name: str) -> OperationModel:
    return service_model().operation_model(name)


@functools.lru_cache(maxsize=512)
def _pattern(pattern: str) -> re.Pattern[str] | None:
    try:
        return re.compile(pattern)
    except re.error:  # a Java-only construct: the service's own check is not reproducible
        return None


def _constraint(value: Any, shape: Any) -> str | None:
    meta = shape.metadata
    if shape.type_name == "string" and isinstance(value, str):
        if "max" in meta and len(value) > meta["max"]:
            return f"Member must have length less than or equal to {meta['max']}"
        if shape.enum and value not in shape.enum:
            return f"Member must satisfy enum value set: [{', '.join(shape.enum)}]"
        compiled = _pattern(meta["pattern"]) if "pattern" in meta else None
        if compiled is not None and compiled.fullmatch(value) is None:
            return f"Member must satisfy regular expression pattern: {meta['pattern']}"
    elif shape.type_name in ("integer", "long", "float", "double"):
        if isinstance(value, (int, float)) and "max" in meta and value > meta["max"]:
            return f"Member must have value less than or equal to {meta['max']}"
    elif shape.type_name in ("list", "map") and isinstance(value, (list, dict)):
        if "max" in meta and len(value) > meta["max"]:
            return f"Member must have length less than or equal to {meta['max']}"
    return None


def _walk(value: Any, shape: Any, where: str, errors: list[str]) -> None:
    if len(errors) >= _MAX_ERRORS:
        return
    problem = _constraint(value, shape)
    if problem:
        shown = value if isinstance(value, (str, int, float)) else "..."
        errors.append(
            f"Value '{str(shown)[:200]}' at '{where}' failed to satisfy constraint: {problem}"
        )
    if shape.type_name == "structure" and isinstance(value, dict):
        for name, member in shape.members.items():
            if name in value:
                _walk(
                    value[name], member, f"{where}.{name[:1].lower()}{name[1:]}".lstrip("."), errors
                )
    elif shape.type_name == "list" and isinstance(value, list):
        for i, item in enumerate(value):
            _walk(item, shape.member, f"{where}.{i + 1}.member", errors)
    elif shape.type_name == "map" and isinstance(value, dict):
        for key, item in value.items():
            _walk(key, shape.key, f"{where}.{key}.key", errors)
            _walk(item, shape.value, f"{where}.{key}.value", errors)


def _plain(params: dict[str, Any], shape: Any) -> bool:
    """Only strings, each long enough, for string members, the required ones present (as a
    poller's DescribeTrainingJob): botocore's validator would find nothing to report."""
    members = shape.members
    for name, value in params.items():
        member = members[name]
        if not isinstance(value, str) or member.type_name != "string":
            return False
        if len(value) < member.metadata.get("min", 0):
            return False
    return all(name in params for name in shape.required_members)


def _botocore_check(params: dict[str, Any], shape: Any) -> None:
    report = ParamValidator().validate(params, shape)
    if report.has_errors():
        raise validation(report.generate_report().splitlines()[-1].strip()[:1000])


def check(operation_name: str, params: Any) -> dict[str, Any]:
    """``params`` if the operation's input accepts them, else SageMaker's ValidationException."""
    if not isinstance(params, dict):
        raise validation("The request body must be a JSON object")
    shape = operation(operation_name).input_shape
    if shape is None:
        return params
    unknown = sorted(set(params) - set(shape.members))
    if unknown:
        raise validation(
            f'Unknown parameter in input: "{unknown[0][:100]}", must be one of: '
            + ", ".join(shape.members)
        )
    if not _plain(params, shape):  # botocore's checks, where they could find something
        _botocore_check(params, shape)
    errors: list[str] = []
    _walk(params, shape, "", errors)
    if errors:
        raise validation(
            f"{len(errors)} validation error{'s' if len(errors) > 1 else ''} "
            "detected: " + "; ".join(errors)
        )
    return params
