"""Each region sees only its own training jobs; S3's key length limit, through real clients."""

from __future__ import annotations

from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError

from tests.serve.serving import REGION, ServeProcess, dry_run_request, wait_end

pytestmark = pytest.mark.aws


def _client(serve: ServeProcess, service: str, region: str) -> Any:
    return boto3.client(  # type: ignore[call-overload]
        service,
        endpoint_url=serve.url,
        region_name=region,
        aws_access_key_id=serve.exports["AWS_ACCESS_KEY_ID"],
        aws_secret_access_key=serve.exports["AWS_SECRET_ACCESS_KEY"],
    )


def _code(call: Any, **params: Any) -> str:
    with pytest.raises(ClientError) as info:
        call(**params)
    return str(info.value.response["Error"]["Code"])


def test_a_region_sees_only_its_own_jobs(serve: ServeProcess, bucket: str, job_name: str) -> None:
    request = dry_run_request(serve.env, job_name, bucket)  # no source: it fails at once
    arn = serve.client("sagemaker").create_training_job(**request)["TrainingJobArn"]
    assert f":{REGION}:" in arn
    assert wait_end(serve, job_name)["TrainingJobStatus"] == "Failed"
    home = _client(serve, "sagemaker", REGION)
    mine = home.list_training_jobs(NameContains=job_name)["TrainingJobSummaries"]  # one page
    assert [j["TrainingJobName"] for j in mine] == [job_name]  # of a serve other tests share
    for region in ("us-east-1", "eu-west-1"):
        other = _client(serve, "sagemaker", region)
        listed = other.list_training_jobs(NameContains=job_name)["TrainingJobSummaries"]
        assert listed == [], listed
        assert _code(other.describe_training_job, TrainingJobName=job_name) == "ValidationException"
        assert _code(other.stop_training_job, TrainingJobName=job_name) == "ValidationException"
        assert _code(other.list_tags, ResourceArn=arn) == "ValidationException"
        tags = [{"Key": "k", "Value": "v"}]
        assert _code(other.add_tags, ResourceArn=arn, Tags=tags) == "ValidationException"
    elsewhere = arn.replace(f":{REGION}:", ":us-east-1:")
    assert _code(home.list_tags, ResourceArn=elsewhere) == "ValidationException"
    assert home.describe_training_job(TrainingJobName=job_name)["TrainingJobArn"] == arn
    east = _client(serve, "sagemaker", "us-east-1")
    assert _code(east.create_training_job, **request) == "ResourceInUse"


def test_a_region_botocore_does_not_know_is_refused(serve: ServeProcess) -> None:
    for region in ("xx-fake-9", "us-west-99"):
        fake = _client(serve, "sagemaker", region)
        assert _code(fake.list_training_jobs) == "InvalidSignatureException"
        assert _code(_client(serve, "s3", region).list_buckets) == "SignatureDoesNotMatch"


def test_an_s3_key_over_1024_bytes_is_refused_as_s3_does(serve: ServeProcess, bucket: str) -> None:
    s3 = serve.client("s3")
    for key in ("k" * 1024, "é" * 512):  # 1,024 bytes: the longest key S3 takes
        s3.put_object(Bucket=bucket, Key=key, Body=b"x")
    for key in ("k" * 1025, "é" * 513):
        assert _code(s3.put_object, Bucket=bucket, Key=key, Body=b"x") == "KeyTooLongError"
    keys = {o["Key"] for o in s3.list_objects_v2(Bucket=bucket)["Contents"]}
    assert keys == {"k" * 1024, "é" * 512}
