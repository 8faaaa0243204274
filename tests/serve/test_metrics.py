"""Training metrics from a real ``smmpi serve``: MetricDefinitions applied to the ranks' lines."""

from __future__ import annotations

import json
from typing import Any

import pytest
from botocore.exceptions import ClientError

from tests.serve.serving import ServeProcess, dry_run_request, put_source, script_source, wait_end

pytestmark = pytest.mark.aws

PRINTS = """
from mpi4py import MPI
rank = MPI.COMM_WORLD.Get_rank()
for loss in (0.5, 0.25, 0.3333):
    if rank == 0:
        print(f"epoch done: train_loss={loss}", flush=True)
    MPI.COMM_WORLD.Barrier()
if rank == 1:
    print("accuracy: 0.75 of the test set", flush=True)
    print("train_loss=nan is no value", flush=True)
"""

DEFINITIONS = [
    {"Name": "train:loss", "Regex": "train_loss=([0-9\\.]+)"},
    {"Name": "test:accuracy", "Regex": "accuracy: ([0-9.]+)"},
    {"Name": "never:seen", "Regex": "valid_loss=([0-9.]+)"},
]


def _request(serve: ServeProcess, bucket: str, name: str, definitions: Any) -> dict[str, Any]:
    request = dry_run_request(serve.env, name, bucket, "--instances", "1", "--ppn", "2")
    request["HyperParameters"]["sagemaker_program"] = json.dumps("train.py")
    request["AlgorithmSpecification"]["MetricDefinitions"] = definitions
    return request


def test_final_metric_data_list_is_each_metrics_last_value(
    serve: ServeProcess, bucket: str, job_name: str
) -> None:
    request = _request(serve, bucket, job_name, DEFINITIONS)
    put_source(serve, request, script_source(PRINTS))
    serve.client("sagemaker").create_training_job(**request)
    desc = wait_end(serve, job_name)
    assert desc["TrainingJobStatus"] == "Completed", desc.get("FailureReason")
    final = {m["MetricName"]: m for m in desc["FinalMetricDataList"]}
    assert sorted(final) == ["test:accuracy", "train:loss"]  # never:seen has no value
    assert final["train:loss"]["Value"] == pytest.approx(0.3333)
    assert final["test:accuracy"]["Value"] == pytest.approx(0.75)
    for metric in final.values():
        assert desc["TrainingStartTime"] <= metric["Timestamp"] <= desc["TrainingEndTime"]
    shown = desc["AlgorithmSpecification"]["MetricDefinitions"]
    assert shown == DEFINITIONS


@pytest.mark.parametrize(
    ("definitions", "words"),
    [
        (
            [DEFINITIONS[0], {"Name": "broken", "Regex": "loss=([0-9.]+"}],
            "AlgorithmSpecification.MetricDefinitions.2 ('broken'): its Regex is not a valid",
        ),
        (
            [{"Name": f"m{i}", "Regex": f"m{i}=([0-9.]+)"} for i in range(41)],
            "at 'algorithmSpecification.metricDefinitions' failed to satisfy constraint: "
            "Member must have length less than or equal to 40",
        ),
        (
            [{"Name": "n" * 256, "Regex": "x=(.+)"}],
            "at 'algorithmSpecification.metricDefinitions.1.member.name' failed to satisfy "
            "constraint: Member must have length less than or equal to 255",
        ),
        (
            [{"Name": "long", "Regex": "x" * 501}],
            "at 'algorithmSpecification.metricDefinitions.1.member.regex' failed to satisfy "
            "constraint: Member must have length less than or equal to 500",
        ),
    ],
    ids=["regex", "41", "name-length", "regex-length"],
)
def test_bad_metric_definitions_are_refused_and_nothing_is_created(
    serve: ServeProcess, bucket: str, job_name: str, definitions: Any, words: str
) -> None:
    sm = serve.client("sagemaker")
    with pytest.raises(ClientError) as err:
        sm.create_training_job(**_request(serve, bucket, job_name, definitions))
    error = err.value.response["Error"]
    assert error["Code"] == "ValidationException"
    assert words in error["Message"]
    assert "\n" not in error["Message"]
    with pytest.raises(ClientError) as err:
        sm.describe_training_job(TrainingJobName=job_name)
    assert err.value.response["Error"]["Message"] == "Requested resource not found"
    listed = sm.list_training_jobs(NameContains=job_name)["TrainingJobSummaries"]
    assert listed == []
