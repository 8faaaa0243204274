"""The SageMaker runner: upload the source dir, create the training job, follow it.

Order matters for "nothing is created on bad input": the spec is validated on
construction, settings are resolved and checked next, the request is built
(and validated by botocore) before anything is touched, and only then is the
bucket created if missing, the source dir uploaded and the job created. If
SageMaker refuses the job, the uploaded source dir is deleted again.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from smmpi.aws.clients import split_s3
from smmpi.aws.errors import MISSING_BUCKET, error_code, error_line
from smmpi.ops.cloudwatch import JobLog
from smmpi.runners.base import Progress, Runner, RunOptions, silent
from smmpi.runners.sagemaker.follow import follow
from smmpi.runners.sagemaker.job import Interrupted, Submission, SubmitFailed
from smmpi.sdk import estimator
from smmpi.sdk.session import boto_session
from smmpi.sdk.settings import resolve_settings
from smmpi.spec import MPIJob, require_s3_inputs
from smmpi.toolkit.request import decode_hyperparameters, processes_per_host, world_size

if TYPE_CHECKING:
    from smmpi.aws.types import Request, S3Client, SageMakerClient

__all__ = [
    "Interrupted",
    "SageMakerRunner",
    "Submission",
    "SubmitFailed",
    "ensure_bucket",
    "follow",
    "submit",
]


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


@dataclass
class SageMakerRunner:
    """:class:`~smmpi.runners.base.Runner` that creates the training job on SageMaker.

    The request's ``sagemaker_submit_directory`` says where ``source`` goes.
    With ``wait`` the job is followed to its end: ``poll`` caps the seconds
    between DescribeTrainingJob calls and ``on_log`` receives its log lines.
    """

    sagemaker: SageMakerClient
    s3: S3Client
    logs: Any = None
    wait: bool = True
    poll: float | None = None
    on_log: Callable[[str], None] | None = None
    stop_on_interrupt: bool = False

    def run(self, request: Request, source: bytes, options: RunOptions) -> Submission:
        say = options.progress
        bucket, key = split_s3(str(decode_hyperparameters(request)["sagemaker_submit_directory"]))
        self._upload(bucket, key, source, options.region or "", say)
        sub = self._create(request, bucket, key, options.region or "")
        resources = request["ResourceConfig"]
        say(
            f"created training job {sub.job_name} ({resources['InstanceCount']} x "
            f"{resources['InstanceType']}, {processes_per_host(request)} processes each, "
            f"world size {world_size(request)})"
        )
        if self.wait:
            log = JobLog(self.logs, sub.job_name) if self.on_log is not None else None
            follow(
                self.sagemaker,
                sub,
                say,
                poll=self.poll,
                log=log,
                on_log=self.on_log,
                stop_on_interrupt=self.stop_on_interrupt,
            )
        return sub

    def _upload(self, bucket: str, key: str, source: bytes, region: str, say: Progress) -> None:
        from botocore.exceptions import BotoCoreError, ClientError

        try:
            if ensure_bucket(self.s3, bucket, region):
                say(f"created bucket s3://{bucket}")
            self.s3.put_object(Bucket=bucket, Key=key, Body=source)
        except (ClientError, BotoCoreError) as err:
            raise SubmitFailed(f"uploading the source dir: {error_line(err)}") from None

    def _create(self, request: Request, bucket: str, key: str, region: str) -> Submission:
        """CreateTrainingJob; the source is removed again if SageMaker refuses the job."""
        from botocore.exceptions import BotoCoreError, ClientError

        try:
            answer = self.sagemaker.create_training_job(**request)
        except (ClientError, BotoCoreError) as err:
            _delete_quietly(self.s3, bucket, key)
            raise SubmitFailed(f"CreateTrainingJob refused: {error_line(err)}") from None
        return Submission(
            job_name=request["TrainingJobName"],
            arn=str(answer.get("TrainingJobArn", "")),
            request=request,
            code_uri=f"s3://{bucket}/{key}",
            region=region,
        )


def _request(built: estimator.Built) -> Request:
    """The request the SDK's ``fit`` builds, validated by botocore; nothing is sent."""
    from botocore.exceptions import BotoCoreError, ClientError

    try:
        return estimator.capture_request(built)
    except (ClientError, BotoCoreError, ValueError) as err:
        raise SubmitFailed(f"CreateTrainingJob refused: {error_line(err)}") from None


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
    """Build the request, upload the source dir, create the job, and follow it if ``wait``.

    ``echo`` receives one line per event (bucket created, job created, status
    transitions); ``on_log`` receives the job's log lines while waiting;
    ``poll`` caps the seconds between DescribeTrainingJob calls. Ctrl-C while
    waiting raises :class:`Interrupted`; the job keeps running unless
    ``stop_on_interrupt``.
    """
    from botocore.exceptions import BotoCoreError, ClientError

    require_s3_inputs(job)
    settings = resolve_settings(job, offline=False)
    boto = boto_session(settings, offline=False)
    try:
        built = estimator.build(job, offline=False, job_name=job_name, settings=settings, boto=boto)
    except (ClientError, BotoCoreError) as err:
        raise SubmitFailed(f"resolving the account: {error_line(err)}") from None
    request = _request(built)
    runner = SageMakerRunner(
        built.session.sagemaker_client,
        boto.client("s3"),
        boto.client("logs") if wait and on_log is not None else None,
        wait=wait,
        poll=poll,
        on_log=on_log,
        stop_on_interrupt=stop_on_interrupt,
    )
    options = RunOptions(region=built.settings.region, progress=echo or silent)
    return runner.run(request, estimator.pack_source(job), options)


def _delete_quietly(s3: S3Client, bucket: str, key: str) -> None:
    try:
        s3.delete_object(Bucket=bucket, Key=key)
    except Exception:  # best effort: the job was not created either way
        pass


if TYPE_CHECKING:
    _conforms: type[Runner] = SageMakerRunner
