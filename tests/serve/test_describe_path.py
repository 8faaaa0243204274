"""DescribeTrainingJob's common path: cheap for a poller, as strict as before for anything else."""

from __future__ import annotations

import pytest
from botocore.validate import ParamValidator

from smmpi.serve.errors import ApiError
from smmpi.serve.model import check

pytestmark = pytest.mark.aws


def test_a_pollers_request_skips_botocores_validator(monkeypatch: pytest.MonkeyPatch) -> None:
    def never(*args: object) -> None:
        raise AssertionError("botocore's validator ran for plain valid strings")

    monkeypatch.setattr(ParamValidator, "validate", never)
    params = {"TrainingJobName": "a-job-1"}
    assert check("DescribeTrainingJob", params) is params


@pytest.mark.parametrize(
    ("params", "says"),
    [
        ({}, "Missing required parameter"),
        ({"TrainingJobName": ""}, "Invalid length"),
        ({"TrainingJobName": 5}, "Invalid type"),
        ({"TrainingJobName": "not a name!"}, "regular expression pattern"),
        ({"TrainingJobName": "x" * 64}, "length less than or equal to 63"),
        ({"TrainingJobName": "a", "Other": "b"}, "Unknown parameter"),
    ],
)
def test_anything_else_is_refused_as_before(params: dict[str, object], says: str) -> None:
    with pytest.raises(ApiError) as caught:
        check("DescribeTrainingJob", params)
    assert caught.value.code == "ValidationException"
    assert says in caught.value.message
