"""A ModelTrainer job's processes per host, read from its ``sm_drivers`` channel on a real moto
server; anything unreadable gives no answer, never an error."""

from __future__ import annotations

import json
from typing import Any

import pytest

from smmpi.ops.drivers import MOST, drivers_processes_per_host, drivers_uri, processes_in
from tests.helpers import MotoServer, make_bucket

pytestmark = pytest.mark.aws


def _described(uri: str = "s3://drv/job/sm_drivers", entrypoint: bool = True) -> dict[str, Any]:
    spec = {"TrainingImage": "img", **({"ContainerEntrypoint": ["sh"]} if entrypoint else {})}
    channel = {"ChannelName": "sm_drivers", "DataSource": {"S3DataSource": {"S3Uri": uri}}}
    return {"AlgorithmSpecification": spec, "InputDataConfig": [channel]}


def test_the_channel_is_a_model_trainer_jobs_only() -> None:
    assert drivers_uri(_described()) == "s3://drv/job/sm_drivers"
    assert drivers_uri(_described(entrypoint=False)) is None  # the toolkit reads hyperparameters
    assert drivers_uri(_described(uri="file:///x")) is None
    assert drivers_uri({}) is None


@pytest.mark.parametrize(
    ("text", "count"),
    [
        ('{"process_count_per_node": 4}', 4),
        ('{"process_count_per_node": 0}', None),
        ('{"process_count_per_node": true}', None),
        ('{"process_count_per_node": "4"}', None),
        ("[4]", None),
        ("not json", None),
    ],
)
def test_the_count_is_the_drivers_own(text: str, count: int | None) -> None:
    assert processes_in(text) == count


def test_read_from_s3_and_no_answer_for_what_cannot_be_read(moto_server: MotoServer) -> None:
    make_bucket(moto_server, "drv")
    s3 = moto_server.boto3_client("s3")
    assert drivers_processes_per_host(s3, _described()) is None  # no object yet
    key = "job/sm_drivers/distributed.json"
    s3.put_object(Bucket="drv", Key=key, Body=json.dumps({"process_count_per_node": 3}))
    assert drivers_processes_per_host(s3, _described()) == 3
    s3.put_object(Bucket="drv", Key=key, Body=b" " * (MOST + 1))
    assert drivers_processes_per_host(s3, _described()) is None  # too large to be the driver's
    assert drivers_processes_per_host(s3, _described(uri="s3://no-such-bucket/x")) is None
