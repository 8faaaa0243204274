"""The SageMaker runner: upload the source dir, create the training job, follow it.

Order matters, so that nothing is created on bad input and nothing that this
call did not write is ever deleted or overwritten:

1. the spec is validated on construction, settings (region, role, bucket) next,
   and the request is built (and validated by botocore) before anything is touched;
2. the job name must be free: SageMaker never reuses one, and a taken name is
   refused before anything is uploaded;
3. every ``--input`` channel's bucket must exist, and so must the job's bucket;
   a named bucket that does not is refused (``smmpi infra deploy`` makes one,
   ``--create-bucket`` a plain one); only the SDK's own default bucket is
   created unasked, as the SDK does, and said so;
4. the source dir goes to a key that holds this call's own id, written only if
   nothing is there (``If-None-Match``);
5. CreateTrainingJob; if SageMaker refuses it, that one key is deleted.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from smmpi import config
from smmpi.aws.clients import split_s3
from smmpi.aws.errors import MISSING_BUCKET, error_code, error_line, is_not_found
from smmpi.catalog import SOURCE_WARN_BYTES
from smmpi.errors import BadInput, SmmpiError
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
    "NameTaken",
    "NoSuchBucket",
    "SageMakerRunner",
    "Submission",
    "SubmitFailed",
    "ensure_bucket",
    "follow",
    "submit",
]


class NameTaken(SmmpiError):
    """A training job of that name exists (exit code 2: nothing was created)."""

    exit_code = 2

    def __init__(self, name: str, region: str) -> None:
        super().__init__(
            f"job name {name!r} is already taken by a training job in {region} "
            "(SageMaker never reuses a name): pick another --job-name"
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


def check_name_free(sagemaker: SageMakerClient, name: str, region: str) -> None:
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
    raise NameTaken(name, region)


def check_input_buckets(s3: S3Client, request: Request, region: str) -> None:
    """Each S3 channel's bucket must exist, as ``--bucket``'s must (before anything is created).

    Only "no such bucket" is refused: a bucket the user cannot see may still be
    one the job's role can read.
    """
    from botocore.exceptions import ClientError

    seen: set[str] = set()
    for channel in request.get("InputDataConfig") or []:
        source: dict[str, Any] = dict(channel.get("DataSource") or {})
        uri = str((source.get("S3DataSource") or {}).get("S3Uri", ""))
        bucket = split_s3(uri)[0] if uri.startswith("s3://") else ""
        if not bucket or bucket in seen:
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
    create_bucket: bool = True  # False: a missing bucket is refused (one the user named)

    def run(self, request: Request, source: bytes, options: RunOptions) -> Submission:
        say = options.progress
        bucket, key = split_s3(str(decode_hyperparameters(request)["sagemaker_submit_directory"]))
        check_name_free(self.sagemaker, request["TrainingJobName"], options.region or "")
        check_input_buckets(self.s3, request, options.region or "")
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

        if ensure_bucket(self.s3, bucket, region, self.create_bucket):
            say(f"created bucket s3://{bucket}")
        try:  # the key holds this call's own id; If-None-Match: never over another object
            self.s3.put_object(Bucket=bucket, Key=key, Body=source, IfNoneMatch="*")
        except (ClientError, BotoCoreError) as err:
            raise SubmitFailed(f"uploading the source dir: {error_line(err)}") from None

    def _create(self, request: Request, bucket: str, key: str, region: str) -> Submission:
        """CreateTrainingJob; the source is removed again if SageMaker refuses the job."""
        from botocore.exceptions import BotoCoreError, ClientError

        try:
            answer = self.sagemaker.create_training_job(**request)
        except (ClientError, BotoCoreError) as err:
            _delete_quietly(self.s3, bucket, key)  # this call's upload, and nothing else
            if error_code(err) in ("ResourceInUse", "ResourceInUseException"):
                raise NameTaken(request["TrainingJobName"], region) from None
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
    create_bucket: bool = False,
) -> Submission:
    """Build the request, upload the source dir, create the job, and follow it if ``wait``.

    ``echo`` receives one line per event (bucket created, job created, status
    transitions); ``on_log`` receives the job's log lines while waiting;
    ``poll`` caps the seconds between DescribeTrainingJob calls. Ctrl-C while
    waiting raises :class:`Interrupted`; the job keeps running unless
    ``stop_on_interrupt``. A bucket the user named that does not exist is
    refused unless ``create_bucket``; the SDK's default bucket is created.
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
    _warn_if_big(job, echo or silent)
    runner = SageMakerRunner(
        built.session.sagemaker_client,
        boto.client("s3"),
        boto.client("logs") if wait and on_log is not None else None,
        wait=wait,
        poll=poll,
        on_log=on_log,
        stop_on_interrupt=stop_on_interrupt,
        create_bucket=create_bucket or config.setting("bucket", job.bucket) is None,
    )
    options = RunOptions(region=built.settings.region, progress=echo or silent)
    return runner.run(request, estimator.pack_source(job), options)


def _warn_if_big(job: MPIJob, say: Progress) -> None:
    total = sum(size for _, size in job.program.manifest())
    if total > SOURCE_WARN_BYTES:
        say(
            f"smmpi: warning: the code to upload is {total / 1e6:.1f} MB (over "
            f"{SOURCE_WARN_BYTES // 1_000_000} MB); every instance downloads it: put data "
            "in an --input channel, or point --source-dir at a smaller folder"
        )


def _delete_quietly(s3: S3Client, bucket: str, key: str) -> None:
    try:
        s3.delete_object(Bucket=bucket, Key=key)
    except Exception:  # best effort: the job was not created either way
        pass


if TYPE_CHECKING:
    _conforms: type[Runner] = SageMakerRunner
