"""A submitted job as smmpi knows it: its outcome's exit code, and the ways a submit ends early."""

from __future__ import annotations

import json

import pytest

from smmpi.runners.sagemaker.job import Interrupted, Submission, SubmitFailed


def _submission(status: str) -> Submission:
    return Submission(
        "smmpi-demo-1",
        "arn:aws:sagemaker:us-west-2:1:training-job/x",
        {},
        "s3://b/c",
        "us-west-2",
        status,
    )


@pytest.mark.parametrize(
    ("status", "code"),
    [("InProgress", 0), ("Completed", 0), ("Failed", 1), ("Stopped", 1), ("Stopping", 1)],
)
def test_the_exit_code_follows_sagemakers_status(status: str, code: int) -> None:
    sub = _submission(status)
    assert (sub.name, sub.status, sub.exit_code) == ("smmpi-demo-1", status, code)


def test_the_json_form_is_what_submit_json_prints() -> None:
    shown = _submission("Failed").to_json()
    assert json.loads(json.dumps(shown)) == shown
    assert list(shown) == [
        "job_name", "arn", "region", "status", "secondary_status", "failure_reason",
        "code_uri", "transitions", "request",
    ]  # fmt: skip


def test_an_early_end_has_its_exit_code() -> None:
    assert SubmitFailed("x").exit_code == 1
    assert Interrupted("x").exit_code == 130
