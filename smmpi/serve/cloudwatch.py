"""CloudWatch's metrics of training jobs: ListMetrics, GetMetricStatistics and GetMetricData.

SageMaker puts each job's metrics (:mod:`.metrics`) in namespace
``/aws/sagemaker/TrainingJobs`` twice: with dimension ``TrainingJobName`` (the
job's, which the SDK's ``TrainingJobAnalytics`` asks by) and with ``Host``
(``JOB/algo-k``, the instance that logged it). serve answers these three
operations from the series on disk, in the protocol botocore speaks to
CloudWatch (JSON 1.0: ``X-Amz-Target: GraniteServiceVersion20100801.NAME``),
with the statistics SampleCount, Average, Sum, Minimum and Maximum; any other
namespace has no metric here.
"""

from __future__ import annotations

import functools
import json
import math
import uuid
from collections.abc import Callable
from datetime import datetime
from typing import Any

from botocore.model import OperationModel, ServiceModel

from smmpi.aws.facts import check_job_name, shared_loader
from smmpi.errors import BadInput
from smmpi.serve.auth import Incoming
from smmpi.serve.errors import ApiError, Response
from smmpi.serve.metrics import JobMetrics

NAMESPACE = "/aws/sagemaker/TrainingJobs"
TARGET = "GraniteServiceVersion20100801."
STATISTICS = ("SampleCount", "Average", "Sum", "Minimum", "Maximum")
PAGE = 500  # ListMetrics' page
MAX_DATAPOINTS = 100_800  # GetMetricData's default and most datapoints in one answer

Points = list[tuple[float, float]]  # (epoch seconds, value)


@functools.lru_cache(maxsize=1)
def _service() -> ServiceModel:
    return ServiceModel(shared_loader().load_service_model("cloudwatch", "service-2"), "cloudwatch")


def _invalid(message: str) -> ApiError:
    return ApiError("InvalidParameterValue", message)


def _decode(body: bytes, model: OperationModel) -> dict[str, Any]:
    """The request's members, parsed by botocore's JSON parser and checked by its validator."""
    from botocore.parsers import JSONParser
    from botocore.validate import ParamValidator

    shape = model.input_shape
    parser: Any = JSONParser()  # its shape walker, used on a request
    try:
        raw = json.loads(body or b"{}")
        params = parser._parse_shape(shape, raw) if isinstance(raw, dict) and shape else None
    except (ValueError, TypeError, KeyError, AttributeError, RecursionError):
        params = None
    if not isinstance(params, dict):
        raise ApiError("SerializationException", "The request body is not a JSON object")
    if shape is not None:
        report = ParamValidator().validate(params, shape)
        if report.has_errors():
            raise ApiError("ValidationError", report.generate_report().splitlines()[-1].strip())
    return params


def answer(metrics: JobMetrics, incoming: Incoming, region: str) -> Response:
    """CloudWatch's answer to ``incoming`` (signed for ``region``)."""
    target = incoming.headers.get("x-amz-target", "")
    name = target[len(TARGET) :] if target.startswith(TARGET) else ""
    if incoming.method != "POST" or name not in OPERATIONS:
        raise ApiError(
            "UnknownOperationException",
            "smmpi serve answers CloudWatch's " + ", ".join(sorted(OPERATIONS))
            + " (JSON 1.0: POST / with X-Amz-Target GraniteServiceVersion20100801.NAME)",
        )  # fmt: skip
    model = _service().operation_model(name)
    result = OPERATIONS[name](metrics, _decode(incoming.body, model), region)
    headers = [("Content-Type", "application/x-amz-json-1.0"),
               ("x-amzn-RequestId", str(uuid.uuid4()))]  # fmt: skip
    return 200, headers, json.dumps(result).encode()


def _job_of(metrics: JobMetrics, job: str, region: str) -> bool:
    """Whether ``job`` is a job of ``region`` whose metrics have values."""
    try:
        check_job_name(job)
    except BadInput:
        return False
    index = metrics.index(job)
    return index is not None and index.get("region") == region


def _points(metrics: JobMetrics, metric: dict[str, Any], region: str) -> Points:
    """The points of one metric (namespace, name and the exact dimensions SageMaker gives)."""
    if metric.get("Namespace") != NAMESPACE:
        return []
    dims = {d.get("Name"): d.get("Value") for d in metric.get("Dimensions") or []}
    if list(dims) == ["TrainingJobName"]:
        job, host = str(dims["TrainingJobName"]), None
    elif list(dims) == ["Host"]:
        job, _, host = str(dims["Host"]).rpartition("/")
    else:
        return []
    if not _job_of(metrics, job, region):
        return []
    return metrics.series(job, host).get(str(metric.get("MetricName")), [])


def _stat(values: list[float], statistic: str) -> float:
    if statistic == "SampleCount":
        return float(len(values))
    if statistic == "Sum":
        return math.fsum(values)
    if statistic == "Average":
        return math.fsum(values) / len(values)
    return min(values) if statistic == "Minimum" else max(values)


def _buckets(
    points: Points, start: datetime, end: datetime, period: int
) -> dict[float, list[float]]:
    """The values of ``points`` in [start, end), by the start of their ``period``."""
    if period < 1:
        raise _invalid("The parameter Period must be at least 1.")
    first, last = start.timestamp(), end.timestamp()
    if first >= last:
        raise _invalid("The parameter StartTime must be less than the parameter EndTime.")
    found: dict[float, list[float]] = {}
    for when, value in points:
        if first <= when < last:
            found.setdefault(float(when - when % period), []).append(value)
    return found


def _statistics(wanted: list[str]) -> list[str]:
    unknown = [s for s in wanted if s not in STATISTICS]
    if unknown:
        raise _invalid(
            f"The statistic {unknown[0][:100]!r} is not one smmpi serve computes: "
            + ", ".join(STATISTICS)
        )
    return wanted


def get_metric_statistics(metrics: JobMetrics, params: dict[str, Any], region: str) -> Any:
    if params.get("ExtendedStatistics"):
        raise _invalid("smmpi serve computes no ExtendedStatistics (percentiles)")
    wanted = _statistics(list(params.get("Statistics") or []))
    if not wanted:
        raise ApiError(
            "InvalidParameterCombination", "Must specify either Statistics or ExtendedStatistics"
        )
    points = _points(metrics, params, region)
    buckets = _buckets(points, params["StartTime"], params["EndTime"], params["Period"])
    datapoints = [
        {"Timestamp": when, "Unit": "None", **{s: _stat(values, s) for s in wanted}}
        for when, values in sorted(buckets.items())
    ]
    return {"Label": params["MetricName"], "Datapoints": datapoints}


def _query(metrics: JobMetrics, query: dict[str, Any], where: str, span: Any) -> dict[str, Any]:
    stat = query.get("MetricStat")
    if stat is None:
        raise _invalid(f"{where}: smmpi serve answers MetricStat queries, not Expression")
    metric = stat["Metric"]
    (statistic,) = _statistics([stat["Stat"]])
    start, end, region, descending = span
    buckets = _buckets(_points(metrics, metric, region), start, end, stat["Period"])
    times = sorted(buckets, reverse=descending)
    return {
        "Id": query["Id"],
        "Label": query.get("Label") or metric.get("MetricName"),
        "Timestamps": times,
        "Values": [_stat(buckets[t], statistic) for t in times],
        "StatusCode": "Complete",
    }


def get_metric_data(metrics: JobMetrics, params: dict[str, Any], region: str) -> Any:
    descending = params.get("ScanBy", "TimestampDescending") == "TimestampDescending"
    span = (params["StartTime"], params["EndTime"], region, descending)
    results, room = [], min(int(params.get("MaxDatapoints") or MAX_DATAPOINTS), MAX_DATAPOINTS)
    for i, query in enumerate(params["MetricDataQueries"], start=1):
        result = _query(metrics, query, f"MetricDataQueries.member.{i}", span)
        result["Timestamps"], result["Values"] = (
            result["Timestamps"][:room],
            result["Values"][:room],
        )
        room -= len(result["Values"])
        if query.get("ReturnData", True):
            results.append(result)
    return {"MetricDataResults": results, "Messages": []}


def _listed(metrics: JobMetrics, region: str) -> list[dict[str, Any]]:
    """Every metric of every job of ``region``: by job, then by host."""
    found: list[dict[str, Any]] = []
    for job in metrics.indexed():
        index = metrics.index(job)
        if index is None or index.get("region") != region:
            continue
        for name, hosts in sorted((index.get("hosts") or {}).items()):
            dims = [[{"Name": "TrainingJobName", "Value": job}]]
            dims += [[{"Name": "Host", "Value": f"{job}/{host}"}] for host in hosts]
            found += [{"Namespace": NAMESPACE, "MetricName": name, "Dimensions": d} for d in dims]
    return found


def _wanted(metric: dict[str, Any], params: dict[str, Any]) -> bool:
    if params.get("MetricName") not in (None, metric["MetricName"]):
        return False
    for want in params.get("Dimensions") or []:
        if not any(
            d["Name"] == want["Name"] and want.get("Value") in (None, d["Value"])
            for d in metric["Dimensions"]
        ):
            return False
    return True


def list_metrics(metrics: JobMetrics, params: dict[str, Any], region: str) -> Any:
    if params.get("Namespace") not in (None, NAMESPACE):
        return {"Metrics": []}
    token = str(params.get("NextToken") or "0")
    if not token.isdigit():
        raise _invalid("The NextToken is not one smmpi serve gave")
    offset = int(token)
    chosen = [m for m in _listed(metrics, region) if _wanted(m, params)]
    answer: dict[str, Any] = {"Metrics": chosen[offset : offset + PAGE]}
    if offset + PAGE < len(chosen):
        answer["NextToken"] = str(offset + PAGE)
    return answer


OPERATIONS: dict[str, Callable[[JobMetrics, dict[str, Any], str], Any]] = {
    "GetMetricData": get_metric_data,
    "GetMetricStatistics": get_metric_statistics,
    "ListMetrics": list_metrics,
}
