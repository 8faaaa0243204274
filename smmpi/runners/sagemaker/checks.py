"""Before a submit creates anything: the job name is free, and the buckets exist.

A bucket the user named that does not exist is refused (``smmpi infra deploy`` makes one,
``--create-bucket`` a plain one); only the SDK's own default bucket is created unasked.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import TYPE_CHECKING, Any

from smmpi.aws.clients import split_s3
from smmpi.aws.errors import MISSING_BUCKET, error_code, error_line, is_not_found
from smmpi.errors import BadInput, SmmpiError
from smmpi.runners.sagemaker.job import SubmitFailed

if TYPE_CHECKING:
    from smmpi.aws.types import Request, S3Client, SageMakerClient


class NameTaken(SmmpiError):
    """A training job of that name exists (exit code 2: nothing was created)."""

    exit_code = 2

    def __init__(self, name: str, region: str, fix: str = "pick another --job-name") -> None:
        super().__init__(
            f"job name {name!r} is already taken by a training job in {region} "
            f"(SageMaker never reuses a name): {fix}"
        )


class NoSuchBucket(SmmpiError):
    """A named bucket that does not exist (exit code 2: nothing was created)."""

    exit_code = 2

    def __init__(self, bucket: str, region: str) -> None:
        super().__init__(
            f"bucket {bucket!r} does not exist in {region}: create smmpi's bucket with "
            "`smmpi infra deploy` (encrypted, versioned, TLS-only), or pass --create-bucket "
            "to create a plain one"
        )


def ensure_bucket(s3: S3Client, bucket: str, region: str, create: bool = True) -> bool:
    """True if the bucket had to be created; a missing one is :class:`NoSuchBucket` unless
    ``create`` (the SDK's own default bucket, or ``--create-bucket``)."""
    from botocore.exceptions import BotoCoreError, ClientError

    try:
        s3.head_bucket(Bucket=bucket)
        return False
    except ClientError as err:
        if error_code(err) not in MISSING_BUCKET:
            raise SubmitFailed(f"bucket {bucket}: {error_line(err)}") from None
    except BotoCoreError as err:
        raise SubmitFailed(f"bucket {bucket}: {error_line(err)}") from None
    if not create:
        raise NoSuchBucket(bucket, region)
    kwargs: dict[str, Any] = {"Bucket": bucket}
    if region != "us-east-1":
        kwargs["CreateBucketConfiguration"] = {"LocationConstraint": region}
    try:
        s3.create_bucket(**kwargs)  # type: ignore[arg-type]
    except (ClientError, BotoCoreError) as err:
        raise SubmitFailed(f"creating bucket {bucket}: {error_line(err)}") from None
    return True


def check_name_free(
    sagemaker: SageMakerClient, name: str, region: str, fix: str = "pick another --job-name"
) -> None:
    """DescribeTrainingJob must say there is no such job: SageMaker never reuses a name."""
    from botocore.exceptions import BotoCoreError, ClientError

    try:
        sagemaker.describe_training_job(TrainingJobName=name)
    except ClientError as err:
        if is_not_found(err):
            return
        raise SubmitFailed(f"checking the job name: {error_line(err)}") from None
    except BotoCoreError as err:
        raise SubmitFailed(f"checking the job name: {error_line(err)}") from None
    raise NameTaken(name, region, fix)


def check_input_buckets(
    s3: S3Client, request: Request, region: str, own: Collection[str] = ()
) -> None:
    """Each S3 channel's bucket must exist, as ``--bucket``'s must (before anything is created).

    Only "no such bucket" is refused: a bucket the user cannot see may still be
    one the job's role can read. Channels under ``own`` (prefixes this submit uploads
    to, ModelTrainer's ``code`` and ``sm_drivers``) go to the job's bucket, checked apart.
    """
    from botocore.exceptions import ClientError

    seen: set[str] = set()
    for channel in request.get("InputDataConfig") or []:
        source: dict[str, Any] = dict(channel.get("DataSource") or {})
        uri = str((source.get("S3DataSource") or {}).get("S3Uri", ""))
        bucket = split_s3(uri)[0] if uri.startswith("s3://") else ""
        if not bucket or bucket in seen or uri.rstrip("/") in own:
            continue
        seen.add(bucket)
        try:
            s3.head_bucket(Bucket=bucket)
        except ClientError as err:
            if error_code(err) in MISSING_BUCKET:
                raise BadInput(
                    f"input {channel.get('ChannelName')}",
                    uri,
                    f"an S3 URI in a bucket that exists (no bucket {bucket!r} in {region})",
                ) from None
