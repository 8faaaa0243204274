"""Before a submit creates anything: the job's name is free, its buckets exist (moto over HTTP)."""

from __future__ import annotations

from typing import Any

import pytest

from smmpi.errors import BadInput
from smmpi.runners.sagemaker.checks import (
    NameTaken,
    NoSuchBucket,
    check_input_buckets,
    check_name_free,
    ensure_bucket,
)
from tests.helpers import MotoServer, make_bucket

pytestmark = pytest.mark.aws
REGION = "us-west-2"


def _request(*uris: str) -> Any:
    return {
        "InputDataConfig": [
            {"ChannelName": f"c{i}", "DataSource": {"S3DataSource": {"S3Uri": uri}}}
            for i, uri in enumerate(uris)
        ]
    }


def test_a_named_bucket_is_refused_unless_asked_to_create_it(moto_server: MotoServer) -> None:
    s3 = moto_server.boto3_client("s3")
    with pytest.raises(NoSuchBucket) as refused:
        ensure_bucket(s3, "smmpi-missing", REGION, create=False)
    assert refused.value.exit_code == 2 and "`smmpi infra deploy`" in str(refused.value)
    assert s3.list_buckets()["Buckets"] == []  # nothing created
    assert ensure_bucket(s3, "smmpi-missing", REGION) is True
    assert ensure_bucket(s3, "smmpi-missing", REGION) is False  # there now: not created again
    location = s3.get_bucket_location(Bucket="smmpi-missing")["LocationConstraint"]
    assert location == REGION


def test_a_taken_name_is_refused_with_the_fix(moto_server: MotoServer) -> None:
    sagemaker = moto_server.boto3_client("sagemaker")
    check_name_free(sagemaker, "smmpi-free", REGION)
    sagemaker.create_training_job(
        TrainingJobName="smmpi-taken",
        AlgorithmSpecification={"TrainingImage": "img", "TrainingInputMode": "File"},
        RoleArn="arn:aws:iam::123456789012:role/x",
        OutputDataConfig={"S3OutputPath": "s3://b/o"},
        ResourceConfig={"InstanceType": "ml.c5.xlarge", "InstanceCount": 1, "VolumeSizeInGB": 1},
        StoppingCondition={"MaxRuntimeInSeconds": 60},
    )
    with pytest.raises(NameTaken) as taken:
        check_name_free(sagemaker, "smmpi-taken", REGION, "pick another base name")
    assert str(taken.value) == (
        "job name 'smmpi-taken' is already taken by a training job in us-west-2 "
        "(SageMaker never reuses a name): pick another base name"
    )


def test_a_channels_bucket_must_exist_unless_this_submit_uploads_there(
    moto_server: MotoServer,
) -> None:
    s3 = moto_server.boto3_client("s3")
    make_bucket(moto_server, "smmpi-data")
    check_input_buckets(s3, _request("s3://smmpi-data/train", "file:///local"), REGION)
    check_input_buckets(
        s3, _request("s3://smmpi-code/job/code/"), REGION, {"s3://smmpi-code/job/code"}
    )
    with pytest.raises(BadInput) as refused:
        check_input_buckets(s3, _request("s3://smmpi-data/t", "s3://smmpi-gone/t"), REGION)
    assert str(refused.value) == (
        "invalid input c1: 's3://smmpi-gone/t'; allowed: an S3 URI in a bucket that exists "
        "(no bucket 'smmpi-gone' in us-west-2)"
    )
