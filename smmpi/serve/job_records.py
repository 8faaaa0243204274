"""A training job's record as serve's store keeps it: its key, ARN and summary, and the
checks of a record read back from disk (one that fails them is set aside, never used)."""

from __future__ import annotations

import os
import secrets
import sys
from pathlib import Path
from typing import Any

from smmpi.aws.facts import check_job_name

ACCOUNT = "123456789012"


def job_arn(region: str, name: str) -> str:
    """The job's ARN in ``region``, as SageMaker writes it (the name in lower case)."""
    return f"arn:aws:sagemaker:{region}:{ACCOUNT}:training-job/{name.lower()}"


#: A job's summary as memory keeps it (None for a field the job does not have yet).
Summary = tuple[str, str, float, "float | None", float, str, str, "dict[str, Any] | None"]


def summary_of(record: dict[str, Any]) -> Summary:
    """The summary of ``record``, its strings shared with every other job's where equal."""
    return (
        str(record["TrainingJobName"]),
        sys.intern(str(record["_Region"])),
        record["CreationTime"],
        record.get("TrainingEndTime"),
        record["LastModifiedTime"],
        sys.intern(str(record["TrainingJobStatus"])),
        sys.intern(str(record["SecondaryStatus"])),
        record.get("WarmPoolStatus"),
    )


def shown(summary: Summary) -> dict[str, Any]:
    """ListTrainingJobs' summary (``SUMMARY``'s fields) of a job."""
    name, region, created, ended, modified, status, secondary, warm = summary
    shown = {"TrainingJobName": name, "TrainingJobArn": job_arn(region, name),
             "CreationTime": created, "TrainingEndTime": ended, "LastModifiedTime": modified,
             "TrainingJobStatus": status, "SecondaryStatus": secondary}  # fmt: skip
    if ended is None:
        del shown["TrainingEndTime"]
    if warm is not None:
        shown["WarmPoolStatus"] = warm
    return shown


def job_key(name: str) -> str:
    """The job's key (its name in lower case; the name itself when it is, not a copy)."""
    lower = name.lower()
    return name if lower == name else lower


def name_taken(record: dict[str, Any], taken: Summary) -> str:
    """Why a new job cannot have the name of ``taken``'s (in its region, or in another)."""
    if taken[1] == record["_Region"]:
        return (
            "Training job names must be unique within an AWS account and region, and a "
            f"training job with this name already exists ({record['TrainingJobArn']})"
        )
    return (
        "smmpi serve keeps one training job per name across its regions, and "
        f"{job_arn(taken[1], taken[0])} has this name"
    )


def checked_record(record: Any, path: Path) -> dict[str, Any]:
    """``record`` if it is a job's record, kept in its own file; ValueError if not."""
    if not isinstance(record, dict):
        raise ValueError("not a JSON object")
    name = record.get("TrainingJobName")
    if not isinstance(name, str) or name != path.stem:
        raise ValueError("its TrainingJobName is not its file's name")
    check_job_name(name)
    if not isinstance(record.get("_Region"), str) or not isinstance(record.get("_Tags"), list):
        raise ValueError("it lacks the job's region or tags")
    for field in ("CreationTime", "LastModifiedTime"):
        if not isinstance(record.get(field), (int, float)):
            raise ValueError(f"its {field} is not a time")
    for field in ("TrainingJobStatus", "SecondaryStatus"):
        if not isinstance(record.get(field), str):
            raise ValueError(f"its {field} is not a status")
    if not isinstance(record.get("SecondaryStatusTransitions"), list):
        raise ValueError("its SecondaryStatusTransitions is not a list")
    return record


def set_aside(path: Path, err: Exception) -> str:
    """Rename ``path`` (a file, or a link: never followed) out of the jobs' way; say so."""
    why = str(getattr(err, "why", None) or err)
    aside = path.with_name(f"{path.name}.set-aside")
    while aside.exists() or aside.is_symlink():
        aside = path.with_name(f"{path.name}.set-aside-{secrets.token_hex(3)}")
    os.rename(path, aside)
    return f"jobs/{path.name} is not a job's record ({why[:200]}): set aside as {aside.name}"
