"""``smmpi.serve.Server`` in this process: a context manager on an ephemeral port."""

from __future__ import annotations

from pathlib import Path

import boto3
import pytest
from botocore.config import Config
from botocore.exceptions import EndpointConnectionError

from smmpi.serve import Server

pytestmark = pytest.mark.aws


def test_the_server_is_a_context_manager_on_an_ephemeral_port(tmp_path: Path) -> None:
    events: list[str] = []
    with Server(state=tmp_path / "state", event=events.append) as server:
        assert server.port != 0 and server.url.startswith("http://127.0.0.1:")
        env = server.env
        session = boto3.Session(
            aws_access_key_id=env["AWS_ACCESS_KEY_ID"],
            aws_secret_access_key=env["AWS_SECRET_ACCESS_KEY"],
            region_name=env["AWS_REGION"],
        )
        sm = session.client("sagemaker", endpoint_url=server.url)
        sm.create_training_job(
            TrainingJobName="in-process",
            RoleArn="arn:aws:iam::123456789012:role/r",
            OutputDataConfig={"S3OutputPath": "s3://nowhere/"},
            AlgorithmSpecification={"TrainingInputMode": "Pipe", "TrainingImage": "x"},
            ResourceConfig={
                "InstanceCount": 1,
                "InstanceType": "ml.c5.xlarge",
                "VolumeSizeInGB": 1,
            },
        )
        listed = sm.list_training_jobs()["TrainingJobSummaries"]
        assert [s["TrainingJobName"] for s in listed] == ["in-process"]
        s3 = session.client("s3", endpoint_url=server.url)
        assert server.default_bucket in [b["Name"] for b in s3.list_buckets()["Buckets"]]
        url = server.url
    assert any("in-process: Failed" in e for e in events), events
    with pytest.raises(EndpointConnectionError):  # stopped: nothing listens any more
        boto3.client(
            "sagemaker", endpoint_url=url, region_name="us-west-2",
            aws_access_key_id="a", aws_secret_access_key="b",
            config=Config(retries={"max_attempts": 0}),
        ).list_training_jobs()  # fmt: skip
