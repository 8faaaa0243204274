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
4. the source dir goes to a key that holds this call's own id (ModelTrainer's ``code``
   and ``sm_drivers`` channels: keys under the job's own name, :mod:`.trainer`), each
   written only if nothing is there (``If-None-Match``);
5. CreateTrainingJob; if SageMaker refuses it, this call's keys are deleted.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from smmpi import config
from smmpi.aws.clients import split_s3
from smmpi.aws.errors import error_code, error_line
from smmpi.catalog import SOURCE_WARN_BYTES
from smmpi.errors import SmmpiError
from smmpi.ops.cloudwatch import JobLog
from smmpi.runners.base import Progress, RequestRunner, RunOptions, silent
from smmpi.runners.sagemaker.checks import (
    NameTaken,
    NoSuchBucket,
    check_input_buckets,
    check_name_free,
    ensure_bucket,
)
from smmpi.runners.sagemaker.follow import follow
from smmpi.runners.sagemaker.job import Interrupted, Submission, SubmitFailed
from smmpi.sdk import estimator, warm
from smmpi.sdk.session import boto_session
from smmpi.sdk.settings import Settings, account_and_bucket, resolve_settings
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
    "Upload",
    "ensure_bucket",
    "follow",
    "submit",
]


@dataclass(frozen=True)
class Upload:
    """One object a submit writes: ``what`` names it in an error line."""

    bucket: str
    key: str
    body: bytes
    what: str = "the source dir"
    prefix: str = ""  # the channel's S3 URI this object belongs to, if any

    @property
    def uri(self) -> str:
        return self.prefix or f"s3://{self.bucket}/{self.key}"


@dataclass
class SageMakerRunner:
    """:class:`~smmpi.runners.base.RequestRunner` that creates the training job on SageMaker.

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
    name_fix: str = "pick another --job-name"  # what to do when the job's name is taken

    def run(self, request: Request, source: bytes, options: RunOptions) -> Submission:
        bucket, key = split_s3(str(decode_hyperparameters(request)["sagemaker_submit_directory"]))
        world = (processes_per_host(request), world_size(request))
        return self.run_uploads(request, [Upload(bucket, key, source)], options, world)

    def run_uploads(
        self,
        request: Request,
        uploads: Sequence[Upload],
        options: RunOptions,
        world: tuple[int, int],
        notes: Sequence[str] = (),
    ) -> Submission:
        """Upload ``uploads`` (all in the job's bucket), create the job, follow it if ``wait``;
        ``world``: the processes per host and the world size, for the "created" line;
        ``notes``: said once the checks passed (bad input stays one line)."""
        say, region = options.progress, options.region or ""
        check_name_free(self.sagemaker, request["TrainingJobName"], region, self.name_fix)
        check_input_buckets(self.s3, request, region, {u.prefix for u in uploads})
        bucket = uploads[0].bucket
        if ensure_bucket(self.s3, bucket, region, self.create_bucket):
            say(f"created bucket s3://{bucket}")
        for note in notes:
            say(f"smmpi: note: {note}")
        written: list[Upload] = []
        try:
            for upload in uploads:
                self._upload(upload)
                written.append(upload)
            sub = self._create(request, uploads[0], region)
        except SmmpiError:  # refused: not a Ctrl-C, after which a job may exist
            for upload in written:  # this call's own keys, and nothing else
                _delete_quietly(self.s3, upload.bucket, upload.key)
            raise
        resources = request["ResourceConfig"]
        say(
            f"created training job {sub.job_name} ({resources['InstanceCount']} x "
            f"{resources['InstanceType']}, {world[0]} processes each, world size {world[1]})"
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

    def _upload(self, upload: Upload) -> None:
        from botocore.exceptions import BotoCoreError, ClientError

        try:  # the key holds this job's own name or id; If-None-Match: never over another object
            self.s3.put_object(
                Bucket=upload.bucket, Key=upload.key, Body=upload.body, IfNoneMatch="*"
            )
        except (ClientError, BotoCoreError) as err:
            raise SubmitFailed(f"uploading {upload.what}: {error_line(err)}") from None

    def _create(self, request: Request, code: Upload, region: str) -> Submission:
        """CreateTrainingJob (the caller removes this call's uploads if it is refused)."""
        from botocore.exceptions import BotoCoreError, ClientError

        try:
            answer = self.sagemaker.create_training_job(**request)
        except (ClientError, BotoCoreError) as err:
            if error_code(err) in ("ResourceInUse", "ResourceInUseException"):
                raise NameTaken(request["TrainingJobName"], region, self.name_fix) from None
            raise SubmitFailed(f"CreateTrainingJob refused: {error_line(err)}") from None
        return Submission(
            job_name=request["TrainingJobName"],
            arn=str(answer.get("TrainingJobArn", "")),
            request=request,
            code_uri=code.uri,
            region=region,
        )


def _request(job: MPIJob, settings: Settings, job_name: str | None) -> Request:
    """The request the SDK's ``fit`` builds, validated by botocore; nothing is sent (built by
    the SDK kept imported when there is one: ``SMMPI_WARM_SDK``, smmpi/sdk/warm.py)."""
    name = job_name or estimator.generate_job_name(job)
    return warm.run(request_here, job, settings, name)


def request_here(job: MPIJob, settings: Settings, job_name: str) -> Request:
    """:func:`_request`, built in this process."""
    from botocore.exceptions import BotoCoreError, ClientError

    built = estimator.build(job, offline=False, job_name=job_name, settings=settings)
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
        settings = account_and_bucket(settings, boto)
    except (ClientError, BotoCoreError) as err:
        raise SubmitFailed(f"resolving the account: {error_line(err)}") from None
    request = _request(job, settings, job_name)
    warn_if_big(job, echo or silent)
    runner = runner_for(
        job, boto.client("sagemaker"), boto, wait, poll, on_log, stop_on_interrupt,
        create_bucket,
    )  # fmt: skip
    options = RunOptions(region=settings.region, progress=echo or silent)
    return runner.run(request, estimator.pack_source(job), options)


def runner_for(
    job: MPIJob,
    sagemaker: Any,
    boto: Any,
    wait: bool,
    poll: float | None,
    on_log: Callable[[str], None] | None,
    stop_on_interrupt: bool,
    create_bucket: bool,
    name_fix: str = "pick another --job-name",
) -> SageMakerRunner:
    """The runner of one submission: logs followed only when waiting with a consumer, and the
    SDK's default bucket (no bucket of the user's) created when missing."""
    return SageMakerRunner(
        sagemaker,
        boto.client("s3"),
        boto.client("logs") if wait and on_log is not None else None,
        wait=wait,
        poll=poll,
        on_log=on_log,
        stop_on_interrupt=stop_on_interrupt,
        create_bucket=create_bucket or config.setting("bucket", job.bucket) is None,
        name_fix=name_fix,
    )


def warn_if_big(job: MPIJob, say: Progress) -> None:
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
    _conforms: type[RequestRunner] = SageMakerRunner
