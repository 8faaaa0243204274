"""DescribeTrainingJob's answer: the record, with the members SageMaker always returns."""

from __future__ import annotations

from typing import Any

from botocore.loaders import create_loader

from smmpi.serve.described import shown


def _record(**more: Any) -> dict[str, Any]:
    return {
        "TrainingJobName": "job",
        "_Region": "us-west-2",
        "_Tags": [],
        "AlgorithmSpecification": {"TrainingImage": "img", "TrainingInputMode": "File"},
        "OutputDataConfig": {"S3OutputPath": "s3://b/out"},
        "StoppingCondition": {"MaxRuntimeInSeconds": 600},
        "InputDataConfig": [
            {"ChannelName": "train", "DataSource": {"S3DataSource": {"S3Uri": "s3://b/t"}}}
        ],
        **more,
    }


def test_the_members_a_request_left_out_come_with_sagemakers_defaults() -> None:
    answer = shown(_record())
    assert "_Region" not in answer and "_Tags" not in answer
    assert answer["OutputDataConfig"] == {
        "S3OutputPath": "s3://b/out",
        "KmsKeyId": "",
        "CompressionType": "GZIP",
    }
    assert answer["StoppingCondition"] == {"MaxRuntimeInSeconds": 600}  # the request's wins
    assert answer["AlgorithmSpecification"]["EnableSageMakerMetricsTimeSeries"] is False
    (channel,) = answer["InputDataConfig"]
    assert (channel["CompressionType"], channel["RecordWrapperType"]) == ("None", "None")
    s3 = channel["DataSource"]["S3DataSource"]
    assert s3 == {"S3Uri": "s3://b/t", "S3DataDistributionType": "FullyReplicated"}
    assert answer["EnableManagedSpotTraining"] is False
    assert answer["ProfilingStatus"] == "Disabled"


def test_profiling_follows_the_profiler_config() -> None:
    assert shown(_record(ProfilerConfig={"S3OutputPath": "s3://b/p"}))["ProfilingStatus"] == (
        "Enabled"
    )
    off = {"DisableProfiler": True}
    assert shown(_record(ProfilerConfig=off))["ProfilingStatus"] == "Disabled"


def test_every_member_shown_is_one_of_botocores_answer() -> None:
    model = create_loader().load_service_model("sagemaker", "service-2")
    members = model["shapes"]["DescribeTrainingJobResponse"]["members"]
    assert set(shown(_record())) <= set(members)
