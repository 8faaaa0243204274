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
from smmpi.spec import MPIJob, require_s3_inputs

TERMINAL = ("Completed", "Failed", "Stopped")


class JobFailed(SmmpiError):
    """SageMaker reports the job Failed or Stopped (exit code 1)."""

    exit_code = 1


class SubmitFailed(SmmpiError):
    """The service refused a call (exit code 1: the job did not run)."""

    exit_code = 1


class Interrupted(SmmpiError):
    """Ctrl-C while following a job (exit code 130); the message says what became of the job."""

    exit_code = 130


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
    transitions: list[dict[str, Any]] = field(default_factory=list)

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
    stop_on_interrupt: bool = False,
) -> Submission:
    """Pack and upload the source dir, create the job, and follow it if ``wait``.

    ``echo`` receives one line per event (bucket created, job created, status
    transitions); ``on_log`` receives the job's log lines while waiting;
    ``poll`` caps the seconds between DescribeTrainingJob calls. Ctrl-C while
    waiting raises :class:`Interrupted`; the job keeps running unless
    ``stop_on_interrupt``.
    """
    from botocore.exceptions import BotoCoreError, ClientError

    from smmpi import estimator

    require_s3_inputs(job)
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
        built.estimator.fit(
            estimator.fit_inputs(job), wait=False, logs=False, job_name=built.job_name
        )
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
        follow(
            client,
            sub,
            say,
            poll=poll,
            log=log,
            on_log=on_log,
            stop_on_interrupt=stop_on_interrupt,
        )
    return sub


def _delete_quietly(s3: Any, bucket: str, key: str) -> None:
    try:
        s3.delete_object(Bucket=bucket, Key=key)
    except Exception:  # best effort: the job was not created either way
        pass


def clock_text(seconds: float) -> str:
    """``MM:SS`` (``H:MM:SS`` past an hour): short enough to prefix every status line."""
    total = int(max(0.0, seconds))
    hours, rest = divmod(total, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes:02d}:{secs:02d}"


def _since(start: Any, end: Any) -> float | None:
    if isinstance(start, datetime) and isinstance(end, datetime):
        return (end - start).total_seconds()
    return None


class StatusReporter:
    """Turns successive DescribeTrainingJob answers into one line per new status.

    SageMaker's ``SecondaryStatusTransitions`` (Starting, Downloading,
    Training, Uploading, ...) say what the job is doing and since when, and
    a transition's message changes while it lasts; each new status or
    message is one line. Elapsed time is counted from the job's creation with
    the service's own timestamps, so transitions that happened between two
    polls still get their own time. Answers without transitions (other
    endpoints) fall back to ``TrainingJobStatus``/``SecondaryStatus`` and
    the local clock.
    """

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self.started = clock()
        self.seen: list[tuple[str, str]] = []
        self.last: tuple[str, str] | None = None

    def _fallback(self) -> float:
        return self.clock() - self.started

    def update(self, desc: dict[str, Any]) -> list[dict[str, Any]]:
        """New events in ``desc``: dicts with elapsed_s, status, secondary_status, message."""
        status = str(desc.get("TrainingJobStatus", "Unknown"))
        created = desc.get("CreationTime")
        events: list[dict[str, Any]] = []

        def add(elapsed: float | None, secondary: str, message: str) -> None:
            self.last = (secondary, message)
            events.append(
                {
                    "elapsed_s": round(self._fallback() if elapsed is None else elapsed, 1),
                    "status": status,
                    "secondary_status": secondary,
                    "message": message,
                }
            )

        transitions = desc.get("SecondaryStatusTransitions") or []
        for i, t in enumerate(transitions):
            key = (str(t.get("Status", "")), str(t.get("StatusMessage", "")))
            if i < len(self.seen) and self.seen[i] == key:
                continue
            new = i >= len(self.seen) or self.seen[i][0] != key[0]
            if new:
                elapsed = _since(created, t.get("StartTime"))
            else:  # the same transition, a new message: as of the job's last change
                elapsed = _since(created, desc.get("LastModifiedTime"))
            self.seen[i:] = [key]
            add(elapsed, *key)
        secondary = str(desc.get("SecondaryStatus") or "")
        if transitions:
            last_status = self.seen[-1][0]
            if status in TERMINAL and last_status != status and self.last != (status, ""):
                add(_since(created, desc.get("TrainingEndTime")), status, "")
        elif status in TERMINAL:
            shown = status if secondary in ("", status) else f"{status} - {secondary}"
            if self.last != (shown, ""):
                add(_since(created, desc.get("TrainingEndTime")), shown, "")
        else:
            shown = secondary or status
            if self.last != (shown, ""):
                add(None, shown, "")
        return events

    @staticmethod
    def line(event: dict[str, Any]) -> str:
        """``smmpi: [00:42] Training - Downloading the training image``."""
        text = event["secondary_status"]
        if event["message"]:
            text += f" - {event['message']}"
        return f"smmpi: [{clock_text(event['elapsed_s'])}] {text}"


def follow(
    client: Any,
    sub: Submission,
    say: Callable[[str], None],
    poll: float | None = None,
    log: Any = None,
    on_log: Callable[[str], None] | None = None,
    stop_on_interrupt: bool = False,
) -> Submission:
    """Poll DescribeTrainingJob until a terminal status, reporting each transition.

    Polling starts at one second and backs off to ``poll`` (default 15 s): a
    short job is reported promptly and a long one costs few API calls. With
    ``log`` (a :class:`smmpi.jobs.JobLog`) the job's CloudWatch lines are
    passed to ``on_log`` as they arrive, rank-tagged; logs are best effort and
    never fail the wait.

    Ctrl-C ends the wait, not the job: the job is billed until it ends, so
    :class:`Interrupted` says how to stop it, or, with ``stop_on_interrupt``,
    StopTrainingJob is requested first (through :func:`smmpi.jobs.stop`).
    """
    try:
        return _follow(client, sub, say, poll, log, on_log)
    except KeyboardInterrupt:
        raise Interrupted(_interrupted(client, sub, stop_on_interrupt)) from None


def _interrupted(client: Any, sub: Submission, stop: bool) -> str:
    from smmpi import jobs

    name = sub.job_name
    if not stop:
        return (
            f"interrupted; job {name} keeps running (and billing) on SageMaker: "
            f"stop it with `smmpi stop {name}`, follow it with `smmpi logs {name} --follow`"
        )
    try:
        return f"interrupted; {jobs.stop(client, name, sub.region)}"
    except SmmpiError as err:
        return f"interrupted; could not stop job {name} ({err}): run `smmpi stop {name}`"


def _follow(
    client: Any,
    sub: Submission,
    say: Callable[[str], None],
    poll: float | None,
    log: Any,
    on_log: Callable[[str], None] | None,
) -> Submission:
    from botocore.exceptions import BotoCoreError, ClientError

    ceiling = 15.0 if poll is None else max(poll, 0.05)
    delay = min(1.0, ceiling)
    reporter = StatusReporter()

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
        for event in reporter.update(desc):
            sub.transitions.append(event)
            say(reporter.line(event))
        pump(final=sub.status in TERMINAL)
        if sub.status in TERMINAL:
            return sub
        time.sleep(delay)
        delay = min(delay * 2, ceiling)
