"""A job's record as serve's store keeps it: key, ARN, summary, and the checks of a record
read back from disk (one that fails them is set aside, never followed or deleted)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from smmpi.serve.job_records import (
    ACCOUNT,
    checked_record,
    job_arn,
    job_key,
    name_taken,
    set_aside,
    shown,
    summary_of,
)


def _record(name: str = "Job-1", **more: Any) -> dict[str, Any]:
    return {
        "TrainingJobName": name,
        "TrainingJobArn": job_arn("us-west-2", name),
        "_Region": "us-west-2",
        "_Tags": [],
        "CreationTime": 1.0,
        "LastModifiedTime": 2.0,
        "TrainingJobStatus": "InProgress",
        "SecondaryStatus": "Starting",
        "SecondaryStatusTransitions": [],
        **more,
    }


def test_the_arn_and_key_are_the_name_in_lower_case() -> None:
    assert job_arn("eu-west-1", "My-Job") == (
        f"arn:aws:sagemaker:eu-west-1:{ACCOUNT}:training-job/my-job"
    )
    assert job_key("My-Job") == "my-job"
    lower = "my-job"
    assert job_key(lower) is lower


def test_list_shows_the_summary_and_no_end_time_before_the_end() -> None:
    running = shown(summary_of(_record()))
    assert running == {
        "TrainingJobName": "Job-1",
        "TrainingJobArn": job_arn("us-west-2", "Job-1"),
        "CreationTime": 1.0,
        "LastModifiedTime": 2.0,
        "TrainingJobStatus": "InProgress",
        "SecondaryStatus": "Starting",
    }
    ended = _record(TrainingEndTime=3.0, TrainingJobStatus="Completed")
    assert shown(summary_of(ended))["TrainingEndTime"] == 3.0


def test_a_taken_name_says_where() -> None:
    same = name_taken(_record(), summary_of(_record()))
    assert "already exists (arn:aws:sagemaker:us-west-2:" in same
    other = name_taken(_record(), summary_of(_record(_Region="eu-west-1")))
    assert other.endswith(f"{job_arn('eu-west-1', 'Job-1')} has this name")


@pytest.mark.parametrize(
    ("record", "why"),
    [
        ([], "not a JSON object"),
        (_record("Other"), "not its file's name"),
        (_record(_Tags=None), "region or tags"),
        (_record(CreationTime="yesterday"), "CreationTime is not a time"),
        (_record(SecondaryStatus=3), "SecondaryStatus is not a status"),
        (_record(SecondaryStatusTransitions={}), "not a list"),
    ],
)
def test_a_record_that_is_no_jobs_is_refused(record: Any, why: str) -> None:
    with pytest.raises(ValueError, match=why):
        checked_record(record, Path("jobs/Job-1.json"))
    assert checked_record(_record(), Path("jobs/Job-1.json"))["TrainingJobName"] == "Job-1"


def test_a_bad_record_is_set_aside_and_a_link_is_never_followed(tmp_path: Path) -> None:
    target = tmp_path / "users-file"
    target.write_text("the user's")
    jobs = tmp_path / "jobs"
    jobs.mkdir()
    (jobs / "Job-1.json").symlink_to(target)
    (jobs / "Job-1.json.set-aside").write_text(json.dumps(_record()))  # taken: another name
    line = set_aside(jobs / "Job-1.json", ValueError("not a JSON object"))
    assert line.startswith("jobs/Job-1.json is not a job's record (not a JSON object): set aside")
    moved = [p for p in jobs.iterdir() if p.name.startswith("Job-1.json.set-aside-")]
    assert len(moved) == 1 and moved[0].is_symlink() and moved[0].name in line
    assert not (jobs / "Job-1.json").exists() and target.read_text() == "the user's"
