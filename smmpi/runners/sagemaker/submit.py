"""Submit a validated MPIJob to SageMaker (or any endpoint that speaks its API) and follow it.

Order matters for "nothing is created on bad input": the spec is validated on
construction, settings are resolved and checked next, and only then is the
bucket touched, the source dir uploaded and the job created. If SageMaker
refuses the job, the uploaded source dir is deleted again.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from smmpi.aws.errors import MISSING_BUCKET, error_code, error_line
from smmpi.aws.record import hooked
from smmpi.ops.cloudwatch import JobLog
from smmpi.runners.base import Progress, silent
from smmpi.runners.sagemaker.follow import follow
from smmpi.runners.sagemaker.job import Interrupted, Submission, SubmitFailed
from smmpi.sdk import estimator
from smmpi.sdk.session import boto_session
from smmpi.sdk.settings import resolve_settings
from smmpi.spec import MPIJob, require_s3_inputs

if TYPE_CHECKING:
    from smmpi.aws.types import S3Client


__all__ = ["Interrupted", "Submission", "SubmitFailed", "ensure_bucket", "follow", "submit"]


def ensure_bucket(s3: S3Client, bucket: str, region: str) -> bool:
    """Create the bucket if it is missing (as the SDK does for its default); True if created."""
    from botocore.exceptions import ClientError

    try:
        s3.head_bucket(Bucket=bucket)
        return False
    except ClientError as err:
        if error_code(err) not in MISSING_BUCKET:
            raise SubmitFailed(f"bucket {bucket}: {error_line(err)}") from None
    kwargs: dict[str, Any] = {"Bucket": bucket}
    if region != "us-east-1":
        kwargs["CreateBucketConfiguration"] = {"LocationConstraint": region}
    s3.create_bucket(**kwargs)
    return True


def _build(job: MPIJob, job_name: str | None) -> estimator.Built:
    """The estimator with the real settings; resolving the account is the only call made."""
    from botocore.exceptions import BotoCoreError, ClientError

    settings = resolve_settings(job, offline=False)
    boto = boto_session(settings, offline=False)
    try:
        return estimator.build(job, offline=False, job_name=job_name, settings=settings, boto=boto)
    except (ClientError, BotoCoreError) as err:
        raise SubmitFailed(f"resolving the account: {error_line(err)}") from None


def _upload(built: estimator.Built, s3: S3Client, say: Progress) -> str:
    """Put the packed source dir where the estimator points; returns its key."""
    from botocore.exceptions import BotoCoreError, ClientError

    settings = built.settings
    key = estimator.code_key(built.job_name)
    try:
        if ensure_bucket(s3, settings.bucket, settings.region):
            say(f"created bucket s3://{settings.bucket}")
        s3.put_object(Bucket=settings.bucket, Key=key, Body=estimator.pack_source(built.job))
    except (ClientError, BotoCoreError) as err:
        raise SubmitFailed(f"uploading the source dir: {error_line(err)}") from None
    return key


def _create(built: estimator.Built, s3: S3Client, key: str) -> Submission:
    """CreateTrainingJob through the SDK's ``fit``; the source is removed again if refused."""
    from botocore.exceptions import BotoCoreError, ClientError

    client = built.session.sagemaker_client
    try:
        with hooked(client, "CreateTrainingJob") as seen:
            built.estimator.fit(
                estimator.fit_inputs(built.job), wait=False, logs=False, job_name=built.job_name
            )
    except (ClientError, BotoCoreError, ValueError) as err:
        _delete_quietly(s3, built.settings.bucket, key)
        raise SubmitFailed(f"CreateTrainingJob refused: {error_line(err)}") from None
    arn = ""
    try:
        answer = client.describe_training_job(TrainingJobName=built.job_name)
        arn = str(answer.get("TrainingJobArn", ""))
    except (ClientError, BotoCoreError):
        pass
    return Submission(
        job_name=built.job_name,
        arn=arn,
        request=seen[-1] if seen else {},
        code_uri=built.code_uri,
        region=built.settings.region,
    )


def submit(
    job: MPIJob,
    *,
    wait: bool = True,
    echo: Progress | None = None,
    job_name: str | None = None,
    poll: float | None = None,
    on_log: Callable[[str], None] | None = None,
    stop_on_interrupt: bool = False,
) -> Submission:
    """Pack and upload the source dir, create the job, and follow it if ``wait``.

    ``echo`` receives one line per event (bucket created, job created, status
    transitions); ``on_log`` receives the job's log lines while waiting;
    ``poll`` caps the seconds between DescribeTrainingJob calls. Ctrl-C while
    waiting raises :class:`Interrupted`; the job keeps running unless
    ``stop_on_interrupt``.
    """
    require_s3_inputs(job)
    say = echo or silent
    built = _build(job, job_name)
    s3 = built.boto.client("s3")
    key = _upload(built, s3, say)
    sub = _create(built, s3, key)
    say(
        f"created training job {sub.job_name} ({job.instances} x {job.instance_type}, "
        f"{job.ppn} processes each, world size {job.world_size})"
    )
    if wait:
        log = JobLog(built.boto.client("logs"), sub.job_name) if on_log is not None else None
        client = built.session.sagemaker_client
        follow(
            client, sub, say, poll=poll, log=log, on_log=on_log, stop_on_interrupt=stop_on_interrupt
        )
    return sub


def _delete_quietly(s3: S3Client, bucket: str, key: str) -> None:
    try:
        s3.delete_object(Bucket=bucket, Key=key)
    except Exception:  # best effort: the job was not created either way
        pass
