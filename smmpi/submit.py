"""Submit a validated MPIJob to SageMaker (or any endpoint that speaks its API) and follow it.

Order matters for "nothing is created on bad input": the spec is validated on
construction, settings are resolved and checked next, and only then is the
bucket touched, the source dir uploaded and the job created. If SageMaker
refuses the job, the uploaded source dir is deleted again.
"""

from __future__ import annotations

import copy
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from smmpi.errors import SmmpiError
from smmpi.spec import MPIJob

TERMINAL = ("Completed", "Failed", "Stopped")


class JobFailed(SmmpiError):
    """SageMaker reports the job Failed or Stopped (exit code 1)."""

    exit_code = 1


class SubmitFailed(SmmpiError):
    """The service refused a call (exit code 1: the job did not run)."""

    exit_code = 1


@dataclass
class Submission:
    """A created training job and what is known about it so far."""

    job_name: str
    arn: str
    request: dict[str, Any]
    code_uri: str
    region: str
    status: str = "InProgress"
    secondary_status: str | None = None
    failure_reason: str | None = None
    transitions: list[dict[str, str]] = field(default_factory=list)

    @property
    def exit_code(self) -> int:
        return 0 if self.status in ("Completed", "InProgress") else 1

    def to_json(self) -> dict[str, Any]:
        return {
            "job_name": self.job_name,
            "arn": self.arn,
            "region": self.region,
            "status": self.status,
            "secondary_status": self.secondary_status,
            "failure_reason": self.failure_reason,
            "code_uri": self.code_uri,
            "transitions": self.transitions,
            "request": self.request,
        }


def _client_error(err: Exception) -> str:
    """One line for a botocore failure; never the request, its headers or keys."""
    from botocore.exceptions import NoCredentialsError, PartialCredentialsError

    if isinstance(err, (NoCredentialsError, PartialCredentialsError)):
        return (
            "no AWS credentials found: configure a profile (aws configure) or set "
            "AWS_PROFILE; `smmpi doctor` checks the setup"
        )
    response = getattr(err, "response", None) or {}
    error = response.get("Error", {}) if isinstance(response, dict) else {}
    code, message = error.get("Code"), error.get("Message")
    return f"{code}: {message}" if code else str(err).splitlines()[0]


def ensure_bucket(s3: Any, bucket: str, region: str) -> bool:
    """Create the bucket if it is missing (as the SDK does for its default); True if created."""
    from botocore.exceptions import ClientError

    try:
        s3.head_bucket(Bucket=bucket)
        return False
    except ClientError as err:
        code = str(err.response.get("Error", {}).get("Code"))
        if code not in ("404", "NoSuchBucket", "NotFound"):
            raise SubmitFailed(f"bucket {bucket}: {_client_error(err)}") from None
    kwargs: dict[str, Any] = {"Bucket": bucket}
    if region != "us-east-1":
        kwargs["CreateBucketConfiguration"] = {"LocationConstraint": region}
    s3.create_bucket(**kwargs)
    return True


def submit(
    job: MPIJob,
    *,
    wait: bool = True,
    echo: Callable[[str], None] | None = None,
    job_name: str | None = None,
    poll: float | None = None,
    on_log: Callable[[str], None] | None = None,
) -> Submission:
    """Pack and upload the source dir, create the job, and follow it if ``wait``.

    ``echo`` receives one line per event (bucket created, job created, status
    transitions); ``on_log`` receives the job's log lines while waiting;
    ``poll`` caps the seconds between DescribeTrainingJob calls.
    """
    from botocore.exceptions import BotoCoreError, ClientError

    from smmpi import estimator

    say = echo or (lambda line: None)
    settings = estimator.resolve_settings(job, offline=False)
    boto = estimator.boto_session(settings, offline=False)
    try:
        built = estimator.build(job, offline=False, job_name=job_name, settings=settings, boto=boto)
    except (ClientError, BotoCoreError) as err:
        raise SubmitFailed(f"resolving the account: {_client_error(err)}") from None
    settings = built.settings
    s3 = boto.client("s3")
    key = estimator.code_key(built.job_name)
    try:
        if ensure_bucket(s3, settings.bucket, settings.region):
            say(f"created bucket s3://{settings.bucket}")
        s3.put_object(Bucket=settings.bucket, Key=key, Body=estimator.pack_source(job))
    except (ClientError, BotoCoreError) as err:
        raise SubmitFailed(f"uploading the source dir: {_client_error(err)}") from None

    client = built.session.sagemaker_client
    seen: list[dict[str, Any]] = []

    def record(params: dict[str, Any], **kwargs: Any) -> None:
        seen.append(copy.deepcopy(params))

    client.meta.events.register(
        "provide-client-params.sagemaker.CreateTrainingJob", record, unique_id="smmpi-record"
    )
    try:
        built.estimator.fit(wait=False, logs=False, job_name=built.job_name)
    except (ClientError, BotoCoreError, ValueError) as err:
        _delete_quietly(s3, settings.bucket, key)
        raise SubmitFailed(f"CreateTrainingJob refused: {_client_error(err)}") from None
    finally:
        client.meta.events.unregister(
            "provide-client-params.sagemaker.CreateTrainingJob", unique_id="smmpi-record"
        )
    arn = ""
    try:
        arn = str(
            client.describe_training_job(TrainingJobName=built.job_name).get("TrainingJobArn", "")
        )
    except (ClientError, BotoCoreError):
        pass
    sub = Submission(
        job_name=built.job_name,
        arn=arn,
        request=seen[-1] if seen else {},
        code_uri=built.code_uri,
        region=settings.region,
    )
    say(
        f"created training job {sub.job_name} ({job.instances} x {job.instance_type}, "
        f"{job.ppn} processes each, world size {job.world_size})"
    )
    if wait:
        log = None
        if on_log is not None:
            from smmpi.jobs import JobLog

            log = JobLog(boto.client("logs"), sub.job_name)
        follow(client, sub, say, poll=poll, log=log, on_log=on_log)
    return sub


def _delete_quietly(s3: Any, bucket: str, key: str) -> None:
    try:
        s3.delete_object(Bucket=bucket, Key=key)
    except Exception:  # best effort: the job was not created either way
        pass


def follow(
    client: Any,
    sub: Submission,
    say: Callable[[str], None],
    poll: float | None = None,
    log: Any = None,
    on_log: Callable[[str], None] | None = None,
) -> Submission:
    """Poll DescribeTrainingJob until a terminal status, reporting each transition.

    Polling starts at one second and backs off to ``poll`` (default 15 s): a
    short job is reported promptly and a long one costs few API calls. With
    ``log`` (a :class:`smmpi.jobs.JobLog`) the job's CloudWatch lines are
    passed to ``on_log`` as they arrive, rank-tagged; logs are best effort and
    never fail the wait.
    """
    from botocore.exceptions import BotoCoreError, ClientError

    ceiling = 15.0 if poll is None else max(poll, 0.05)
    delay = min(1.0, ceiling)
    last: tuple[str, str | None] | None = None

    def pump(final: bool) -> None:
        nonlocal log
        if log is None or on_log is None:
            return
        try:
            lines = log.poll(final=final)
        except (SmmpiError, ClientError, BotoCoreError) as err:
            say(f"smmpi: not following the log any more: {err}")
            log = None
            return
        for line in lines:
            on_log(line.render())

    while True:
        try:
            desc = client.describe_training_job(TrainingJobName=sub.job_name)
        except (ClientError, BotoCoreError) as err:
            raise SubmitFailed(
                f"DescribeTrainingJob {sub.job_name}: {_client_error(err)}"
            ) from None
        sub.status = str(desc.get("TrainingJobStatus", "Unknown"))
        sub.secondary_status = desc.get("SecondaryStatus")
        sub.failure_reason = desc.get("FailureReason")
        if (sub.status, sub.secondary_status) != last:
            last = (sub.status, sub.secondary_status)
            stamp = datetime.now().astimezone().strftime("%Y-%m-%d %H:%M:%S")
            sub.transitions.append(
                {
                    "time": stamp,
                    "status": sub.status,
                    "secondary_status": sub.secondary_status or "",
                }
            )
            detail = f" - {sub.secondary_status}" if sub.secondary_status else ""
            say(f"{stamp} {sub.status}{detail}")
        pump(final=sub.status in TERMINAL)
        if sub.status in TERMINAL:
            return sub
        time.sleep(delay)
        delay = min(delay * 2, ceiling)
