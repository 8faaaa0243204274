"""``smmpi run --from-job``: a submitted job's request, as its description gives it back."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, cast

from smmpi.aws.clients import clients
from smmpi.aws.facts import check_job_name
from smmpi.ops.status import describe

if TYPE_CHECKING:
    from smmpi.aws.types import Description, Request, S3Client


def describe_remote(job_name: str, region: str | None = None) -> tuple[Description, S3Client]:
    """DescribeTrainingJob, and an S3 client, through clients that honour ``AWS_ENDPOINT_URL``."""
    check_job_name(job_name)
    sm, s3 = clients("sagemaker", "s3", region=region)
    return describe(sm, job_name, region), s3


def request_from_description(desc: Mapping[str, Any], new_name: str | None = None) -> Request:
    """The parts of a DescribeTrainingJob answer that were its CreateTrainingJob request."""
    keys = (
        "AlgorithmSpecification",
        "HyperParameters",
        "ResourceConfig",
        "InputDataConfig",
        "OutputDataConfig",
        "Environment",
        "StoppingCondition",
        "RoleArn",
    )
    request = {k: desc[k] for k in keys if k in desc}
    request["TrainingJobName"] = new_name or desc["TrainingJobName"]
    return cast("Request", request)
