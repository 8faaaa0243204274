"""FilterLogEvents with ``logStreamNamePrefix``, which moto ignores (it reads ``logStreamNames``).

A request with the prefix searches the group's streams whose names start with it
(``aws logs filter-log-events --log-stream-name-prefix JOB`` reads one job's
events), through moto's own search; one that gives the names too is refused
with ``InvalidParameterException``, as CloudWatch Logs refuses it.
"""

from __future__ import annotations

import json
from typing import Any

from smmpi.serve.errors import ApiError

MAX_PREFIX = 512  # logStreamNamePrefix's longest (the Logs model's)


def _prefix(params: dict[str, Any]) -> str:
    prefix = params["logStreamNamePrefix"]
    if "logStreamNames" in params:
        raise ApiError(
            "InvalidParameterException",
            "logStreamNames and logStreamNamePrefix cannot both be given: give one or neither",
        )
    if not isinstance(prefix, str) or not 1 <= len(prefix) <= MAX_PREFIX:
        raise ApiError(
            "InvalidParameterException",
            f"logStreamNamePrefix must be a string of 1 to {MAX_PREFIX} characters",
        )
    return prefix


def _numbers(params: dict[str, Any]) -> None:
    """The search's bounds are whole numbers in their ranges, as CloudWatch checks them."""
    for name, low, high in (("limit", 1, 10000), ("startTime", 0, None), ("endTime", 0, None)):
        value = params.get(name)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int):
            problem = "Member must be a whole number"
        elif value < low:
            problem = f"Member must have value greater than or equal to {low}"
        elif high is not None and value > high:
            problem = f"Member must have value less than or equal to {high}"
        else:
            continue
        raise ApiError(
            "InvalidParameterException",
            f"1 validation error detected: Value '{str(value)[:100]}' at '{name}' "
            f"failed to satisfy constraint: {problem}",
        )


def filtered(params: dict[str, Any], backend: Any) -> bytes | None:
    """FilterLogEvents' answer for a request with ``logStreamNamePrefix`` (None without one,
    or for a log group moto does not have: moto's answer, ResourceNotFoundException)."""
    if "logStreamNamePrefix" not in params:
        return None
    prefix = _prefix(params)
    _numbers(params)
    group_name = params.get("logGroupName")
    if not isinstance(group_name, str) or group_name not in backend.groups:
        return None
    names = frozenset(n for n in list(backend.groups[group_name].streams) if n.startswith(prefix))
    if not names:  # moto would read "no names" as every stream
        return json.dumps({"events": [], "searchedLogStreams": []}).encode()
    from moto.core.exceptions import JsonRESTError

    try:
        events, token, searched = backend.filter_log_events(
            group_name,
            names,
            params.get("startTime"),
            params.get("endTime"),
            params.get("limit"),
            params.get("nextToken"),
            params.get("filterPattern"),
            params.get("interleaved", False),
        )
    except JsonRESTError as err:
        raise ApiError(err.error_type, err.message, int(err.code)) from None
    answer: dict[str, Any] = {"events": events, "searchedLogStreams": searched}
    if token:
        answer["nextToken"] = token
    return json.dumps(answer).encode()
