"""A submitted job's training metrics, as SageMaker keeps them: CloudWatch's GetMetricData.

SageMaker puts the metrics its ``MetricDefinitions`` find in the job's log in
namespace ``/aws/sagemaker/TrainingJobs`` with dimension ``TrainingJobName``
(what ``sagemaker.analytics.TrainingJobAnalytics`` asks by). This asks the
same, through the configured endpoint (``AWS_ENDPOINT_URL``: ``smmpi serve``
answers it too), for the job's span, each point's ``Average`` over the finest
period CloudWatch keeps for data of that age.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timedelta, timezone
from typing import Any

from smmpi.aws.errors import aws_errors
from smmpi.ops.status import describe

NAMESPACE = "/aws/sagemaker/TrainingJobs"
Series = dict[str, list[tuple[float, float]]]  # metric -> [(epoch seconds, value)]

#: CloudWatch's finest period for data this many seconds old (GetMetricData's documentation).
_PERIODS = ((3 * 3600, 1), (15 * 86400, 60), (63 * 86400, 300))


def period_for(start: datetime, now: datetime | None = None) -> int:
    """The finest period (seconds) CloudWatch answers for data from ``start`` on."""
    age = ((now or datetime.now(timezone.utc)) - start).total_seconds()
    return next((period for most, period in _PERIODS if age <= most), 3600)


def _span(desc: Mapping[str, Any]) -> tuple[datetime, datetime]:
    now = datetime.now(timezone.utc)
    start = desc.get("TrainingStartTime") or desc.get("CreationTime") or now
    end = desc.get("TrainingEndTime") or now
    return start - timedelta(minutes=1), max(end, start) + timedelta(minutes=1)


def metric_names(desc: Mapping[str, Any]) -> list[str]:
    """The job's metrics by name: its MetricDefinitions' (SageMaker's built-in algorithms
    add their own: those FinalMetricDataList names)."""
    spec = desc.get("AlgorithmSpecification") or {}
    names = [str(d.get("Name")) for d in spec.get("MetricDefinitions") or [] if d.get("Name")]
    for final in desc.get("FinalMetricDataList") or []:
        if final.get("MetricName") and final["MetricName"] not in names:
            names.append(str(final["MetricName"]))
    return names


def job_series(sm: Any, cloudwatch: Any, name: str, region: str | None = None) -> Series:
    """Every metric's points of job ``name`` (an unknown job is one line, exit 2)."""
    desc = describe(sm, name, region)
    names = metric_names(desc)
    if not names:
        return {}
    start, end = _span(desc)
    period = period_for(start)
    queries = [
        {
            "Id": f"m{i}",
            "MetricStat": {
                "Metric": {
                    "Namespace": NAMESPACE,
                    "MetricName": metric,
                    "Dimensions": [{"Name": "TrainingJobName", "Value": name}],
                },
                "Period": period,
                "Stat": "Average",
            },
        }
        for i, metric in enumerate(names)
    ]
    found: Series = {metric: [] for metric in names}
    asked: dict[str, Any] = dict(
        MetricDataQueries=queries, StartTime=start, EndTime=end, ScanBy="TimestampAscending"
    )
    with aws_errors(job=name, region=region):
        while True:
            page = cloudwatch.get_metric_data(**asked)
            for result in page.get("MetricDataResults", []):
                metric = names[int(str(result["Id"])[1:])]
                points = zip(result.get("Timestamps", []), result.get("Values", []), strict=False)
                found[metric] += [(t.timestamp(), float(v)) for t, v in points]
            if not page.get("NextToken"):
                break
            asked["NextToken"] = page["NextToken"]
    return {m: sorted(p) for m, p in found.items() if p}
