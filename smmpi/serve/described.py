"""DescribeTrainingJob's answer: the job's record, with what SageMaker always returns.

SageMaker's answer has members a request may leave out, each with its default:
the output's ``KmsKeyId`` ("" when none) and ``CompressionType`` ("GZIP"), the
three ``Enable*`` flags (false), the algorithm's ``EnableSageMakerMetricsTimeSeries``
(false), the stopping condition's ``MaxRuntimeInSeconds`` (one day), each input
channel's ``CompressionType`` and ``RecordWrapperType`` ("None") and its S3 source's
``S3DataDistributionType`` ("FullyReplicated"), and ``ProfilingStatus`` ("Enabled"
with a profiler config that does not disable it, else "Disabled"). Clients read
them unguarded (the SDK's ``Estimator.attach``).
"""

from __future__ import annotations

from typing import Any

#: The members of a sub-structure SageMaker fills in when the request did not.
NESTED_DEFAULTS: dict[str, dict[str, Any]] = {
    "AlgorithmSpecification": {"EnableSageMakerMetricsTimeSeries": False},
    "OutputDataConfig": {"KmsKeyId": "", "CompressionType": "GZIP"},
    "StoppingCondition": {"MaxRuntimeInSeconds": 86400},
}
#: What SageMaker fills in for each input channel, and for its S3 source.
CHANNEL_DEFAULTS: dict[str, Any] = {"CompressionType": "None", "RecordWrapperType": "None"}
S3_SOURCE_DEFAULTS: dict[str, Any] = {"S3DataDistributionType": "FullyReplicated"}
#: The top-level flags SageMaker always returns (false when the request did not set them).
FLAGS = (
    "EnableNetworkIsolation",
    "EnableInterContainerTrafficEncryption",
    "EnableManagedSpotTraining",
)


def _profiling(record: dict[str, Any]) -> str:
    config = record.get("ProfilerConfig")
    enabled = isinstance(config, dict) and not config.get("DisableProfiler", False)
    return "Enabled" if enabled else "Disabled"


def _channel(channel: Any) -> Any:
    if not isinstance(channel, dict):
        return channel
    shown = {**CHANNEL_DEFAULTS, **channel}
    source = channel.get("DataSource")
    if isinstance(source, dict) and isinstance(source.get("S3DataSource"), dict):
        s3 = {**S3_SOURCE_DEFAULTS, **source["S3DataSource"]}
        shown["DataSource"] = {**source, "S3DataSource": s3}
    return shown


def shown(record: dict[str, Any]) -> dict[str, Any]:
    """DescribeTrainingJob's answer for ``record`` (serve's own ``_`` fields left out)."""
    answer = {k: v for k, v in record.items() if not k.startswith("_")}
    for member, defaults in NESTED_DEFAULTS.items():
        given = answer.get(member)
        if isinstance(given, dict):  # CreateTrainingJob requires each of them
            answer[member] = {**defaults, **given}
    if isinstance(answer.get("InputDataConfig"), list):
        answer["InputDataConfig"] = [_channel(c) for c in answer["InputDataConfig"]]
    for flag in FLAGS:
        answer.setdefault(flag, False)
    answer.setdefault("ProfilingStatus", _profiling(record))
    return answer
