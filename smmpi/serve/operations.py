"""SageMaker's training-job operations: each takes the request's JSON and returns the answer's.

Every request is checked against botocore's model first (:mod:`.model`); a job
that cannot run here is still created, and fails at once with a reason that
says why, as SageMaker does for what it cannot provision.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Callable
from typing import Any, Protocol

from smmpi.serve import metrics
from smmpi.serve.errors import ApiError, validation
from smmpi.serve.jobs import TERMINAL, JobStore
from smmpi.serve.model import check
from smmpi.serve.warm_pools import WarmPools, update_job

MAX_TAGS = 50


class Jobs(Protocol):
    """What the operations need from the runner."""

    store: JobStore
    pools: WarmPools

    def start(self, name: str) -> None: ...

    def stop(self, name: str) -> None: ...


Answer = dict[str, Any] | bytes  # the answer's JSON, or its body already encoded
Operation = Callable[[Jobs, dict[str, Any], str], Answer]


def _null(field: str) -> ApiError:
    return validation(
        f"1 validation error detected: Value null at '{field}' failed to satisfy constraint: "
        "Member must not be null"
    )


def _runnable(params: dict[str, Any]) -> None:
    """What a training job needs beyond the model's minimum (which also serves training plans)."""
    if "AlgorithmSpecification" not in params:
        raise _null("algorithmSpecification")
    resources = params.get("ResourceConfig")
    if resources is None:
        raise _null("resourceConfig")
    if "InstanceGroups" not in resources:
        if "InstanceType" not in resources:
            raise _null("resourceConfig.instanceType")
        if int(resources.get("InstanceCount", 0)) < 1:
            raise validation(
                f"1 validation error detected: Value '{resources.get('InstanceCount')}' at "
                "'resourceConfig.instanceCount' failed to satisfy constraint: "
                "Member must have value greater than or equal to 1"
            )
    seen: set[str] = set()
    for channel in params.get("InputDataConfig") or []:
        name = channel.get("ChannelName")
        if name in (".", ".."):  # a folder name that is not a folder
            raise validation(f"ChannelName {name!r} is not a channel name")
        if name in seen:
            raise validation(f"Channel names must be unique: {name!r} appears more than once")
        seen.add(name)
    if int(resources.get("VolumeSizeInGB", 30)) < 1:
        raise validation("ResourceConfig.VolumeSizeInGB must be at least 1")


def create(jobs: Jobs, params: dict[str, Any], region: str) -> dict[str, Any]:
    _runnable(params)
    metrics.check(params)
    record = jobs.store.create(params, region)
    jobs.start(record["TrainingJobName"])
    return {"TrainingJobArn": record["TrainingJobArn"]}


def describe(jobs: Jobs, params: dict[str, Any], region: str) -> bytes:
    return jobs.store.describe_body(params["TrainingJobName"], region)


def stop(jobs: Jobs, params: dict[str, Any], region: str) -> dict[str, Any]:
    record = jobs.store.get(params["TrainingJobName"], region)
    if record["TrainingJobStatus"] in TERMINAL:
        raise validation(
            f"The request was rejected because the training job is in status "
            f"{record['TrainingJobStatus']}."
        )
    jobs.stop(record["TrainingJobName"])
    return {}


def _token(offset: int) -> str:
    return base64.urlsafe_b64encode(f"smmpi:{offset}".encode()).decode()


def _offset(token: object) -> int:
    try:
        text = base64.urlsafe_b64decode(str(token).encode()).decode()
        prefix, number = text.split(":")
        if prefix != "smmpi" or not number.isdigit():
            raise ValueError
        return int(number)
    except (ValueError, binascii.Error, UnicodeDecodeError):
        raise validation("Invalid pagination token") from None


def _when(value: object) -> float:
    from botocore.utils import parse_to_aware_datetime

    return float(parse_to_aware_datetime(value).timestamp())  # type: ignore[arg-type]


def _matches(record: dict[str, Any], params: dict[str, Any]) -> bool:
    name = str(record["TrainingJobName"])
    if "NameContains" in params and str(params["NameContains"]).lower() not in name.lower():
        return False
    if "StatusEquals" in params and record["TrainingJobStatus"] != params["StatusEquals"]:
        return False
    if "WarmPoolStatusEquals" in params:
        warm = record.get("WarmPoolStatus") or {}
        if warm.get("Status") != params["WarmPoolStatusEquals"]:
            return False
    for key, field, after in (
        ("CreationTimeAfter", "CreationTime", True),
        ("CreationTimeBefore", "CreationTime", False),
        ("LastModifiedTimeAfter", "LastModifiedTime", True),
        ("LastModifiedTimeBefore", "LastModifiedTime", False),
    ):
        if key in params:
            bound = _when(params[key])
            if (record[field] <= bound) if after else (record[field] >= bound):
                return False
    return True


_SORT_KEYS: dict[str, Callable[[dict[str, Any]], Any]] = {
    "Name": lambda r: str(r["TrainingJobName"]),
    "CreationTime": lambda r: r["CreationTime"],
    "Status": lambda r: r["TrainingJobStatus"],
}


def list_jobs(jobs: Jobs, params: dict[str, Any], region: str) -> dict[str, Any]:
    offset = _offset(params["NextToken"]) if "NextToken" in params else 0
    size = int(params.get("MaxResults", 10))
    chosen = [r for r in jobs.store.snapshot(region) if _matches(r, params)]
    chosen.sort(
        key=_SORT_KEYS[params.get("SortBy", "CreationTime")],
        reverse=params.get("SortOrder", "Ascending") == "Descending",
    )
    page = chosen[offset : offset + size]
    answer: dict[str, Any] = {
        "TrainingJobSummaries": [
            {
                k: r[k]
                for k in (
                    "TrainingJobName",
                    "TrainingJobArn",
                    "CreationTime",
                    "TrainingEndTime",
                    "LastModifiedTime",
                    "TrainingJobStatus",
                    "SecondaryStatus",
                    "WarmPoolStatus",
                )
                if k in r
            }
            for r in page
        ]
    }
    if offset + size < len(chosen):
        answer["NextToken"] = _token(offset + size)
    return answer


def add_tags(jobs: Jobs, params: dict[str, Any], region: str) -> dict[str, Any]:
    with jobs.store.lock:
        tags = {t["Key"]: t for t in jobs.store.tags(params["ResourceArn"], region)}
        for tag in params["Tags"]:
            tags[tag["Key"]] = {"Key": tag["Key"], "Value": tag.get("Value", "")}
        if len(tags) > MAX_TAGS:
            raise validation(f"A resource can have at most {MAX_TAGS} tags")
        jobs.store.set_tags(params["ResourceArn"], list(tags.values()), region)
    return {"Tags": params["Tags"]}


def list_tags(jobs: Jobs, params: dict[str, Any], region: str) -> dict[str, Any]:
    tags = jobs.store.tags(params["ResourceArn"], region)
    offset = _offset(params["NextToken"]) if "NextToken" in params else 0
    size = int(params.get("MaxResults", 50))
    answer: dict[str, Any] = {"Tags": tags[offset : offset + size]}
    if offset + size < len(tags):
        answer["NextToken"] = _token(offset + size)
    return answer


def delete_tags(jobs: Jobs, params: dict[str, Any], region: str) -> dict[str, Any]:
    with jobs.store.lock:
        drop = set(params["TagKeys"])
        arn = params["ResourceArn"]
        kept = [t for t in jobs.store.tags(arn, region) if t["Key"] not in drop]
        jobs.store.set_tags(arn, kept, region)
    return {}


OPERATIONS: dict[str, Operation] = {
    "CreateTrainingJob": create,
    "DescribeTrainingJob": describe,
    "ListTrainingJobs": list_jobs,
    "StopTrainingJob": stop,
    "UpdateTrainingJob": lambda jobs, params, region: update_job(jobs.pools, params, region),
    "AddTags": add_tags,
    "ListTags": list_tags,
    "DeleteTags": delete_tags,
}


def call(jobs: Jobs, target: str, params: Any, region: str) -> Answer:
    """Run operation ``target`` (``SageMaker.X``) on ``params``; an :class:`ApiError` if refused."""
    service, _, name = target.partition(".")
    if service != "SageMaker" or name not in OPERATIONS:
        raise ApiError(
            "UnknownOperationException",
            f"smmpi serve does not implement {target[:100]!r}; it serves "
            + ", ".join(sorted(OPERATIONS)),
        )
    return OPERATIONS[name](jobs, check(name, params), region)
