"""Each operation's input checked against botocore's model, answered as SageMaker answers."""

from __future__ import annotations

import pytest

from smmpi.serve.errors import ApiError
from smmpi.serve.model import check


def _refused(operation: str, params: object) -> str:
    with pytest.raises(ApiError) as refused:
        check(operation, params)
    assert (refused.value.code, refused.value.status) == ("ValidationException", 400)
    return refused.value.message


def test_a_poller_s_describe_passes_as_it_came() -> None:
    params = {"TrainingJobName": "smmpi-demo-1"}
    assert check("DescribeTrainingJob", params) is params
    assert check("ListTrainingJobs", {"MaxResults": 10, "StatusEquals": "Completed"})


def test_what_the_model_refuses_is_sagemakers_line() -> None:
    assert _refused("DescribeTrainingJob", []) == "The request body must be a JSON object"
    unknown = _refused("DescribeTrainingJob", {"TrainingJobName": "a", "Name": "b"})
    assert unknown.startswith('Unknown parameter in input: "Name", must be one of: TrainingJob')
    missing = _refused("DescribeTrainingJob", {})
    assert "TrainingJobName" in missing
    typed = _refused("ListTrainingJobs", {"MaxResults": "ten"})
    assert "MaxResults" in typed


def test_constraints_are_counted_and_named_by_member() -> None:
    message = _refused(
        "ListTrainingJobs",
        {"StatusEquals": "Done", "NameContains": "bad name!", "MaxResults": 1000},
    )
    assert message.startswith("3 validation errors detected: ")
    assert (
        "Value 'Done' at 'statusEquals' failed to satisfy constraint: Member must satisfy enum"
        in message
    )
    assert (
        "at 'nameContains' failed to satisfy constraint: Member must satisfy regular expression"
        in message
    )
    assert (
        "Value '1000' at 'maxResults' failed to satisfy constraint: Member must have value less"
        in message
    )
