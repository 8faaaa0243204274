"""The CreateTrainingJob hook: records the validated parameters, answers in place of the service."""

from __future__ import annotations

from typing import Any

import pytest
from botocore.exceptions import ParamValidationError

from smmpi.aws.clients import offline_session
from smmpi.aws.record import hooked
from smmpi.errors import SmmpiError

REQUEST: dict[str, Any] = {
    "TrainingJobName": "hooked-job",
    "AlgorithmSpecification": {"TrainingImage": "image:1", "TrainingInputMode": "File"},
    "RoleArn": "arn:aws:iam::123456789012:role/x",
    "OutputDataConfig": {"S3OutputPath": "s3://bkt/"},
    "ResourceConfig": {"InstanceType": "ml.c5.xlarge", "InstanceCount": 2, "VolumeSizeInGB": 30},
    "StoppingCondition": {"MaxRuntimeInSeconds": 60},
}


def _client() -> Any:
    return offline_session("us-west-2").client("sagemaker")


def test_answered_call_is_recorded_and_never_sent() -> None:
    client = _client()
    arn = "arn:aws:sagemaker:us-west-2:000000000000:training-job/hooked-job"
    with hooked(client, "CreateTrainingJob", lambda params: {"TrainingJobArn": arn}) as seen:
        answer = client.create_training_job(**REQUEST)
    assert answer["TrainingJobArn"] == arn
    assert seen == [REQUEST]
    assert seen[0] is not REQUEST  # a copy: later changes to the caller's dict do not leak in


def test_hook_is_gone_after_the_block() -> None:
    """Outside the block the call goes to the service again (the offline session refuses it)."""
    client = _client()
    with hooked(client, "CreateTrainingJob", lambda params: {"TrainingJobArn": "x"}):
        pass
    with pytest.raises(SmmpiError, match="must not reach the network"):
        client.create_training_job(**REQUEST)


def test_invalid_parameters_are_refused_before_they_are_recorded_or_answered() -> None:
    client = _client()
    with hooked(client, "CreateTrainingJob", lambda params: {"TrainingJobArn": "x"}) as seen:
        with pytest.raises(ParamValidationError):
            client.create_training_job(**{**REQUEST, "ResourceConfig": {"InstanceCount": "two"}})
    assert seen == []


def test_nested_hooks_on_two_operations() -> None:
    client = _client()
    with (
        hooked(client, "CreateTrainingJob", lambda p: {"TrainingJobArn": "arn"}) as created,
        hooked(client, "DescribeTrainingJob", lambda p: {"TrainingJobName": p["TrainingJobName"]}),
    ):
        client.create_training_job(**REQUEST)
        described = client.describe_training_job(TrainingJobName="hooked-job")
    assert len(created) == 1
    assert described["TrainingJobName"] == "hooked-job"
