"""Following a submitted job: one line per status change, its log as it arrives, Ctrl-C.

Polling starts at one second and backs off to ``poll`` (default 15 s): a short
job is reported promptly and a long one costs few API calls.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from datetime import datetime
from typing import TYPE_CHECKING, Any

from smmpi.aws.errors import error_line
from smmpi.aws.facts import TERMINAL
from smmpi.errors import SmmpiError
from smmpi.ops.status import poll as poll_status
from smmpi.ops.status import stop
from smmpi.runners.base import Progress
from smmpi.runners.sagemaker.job import Interrupted, Submission, SubmitFailed

if TYPE_CHECKING:
    from smmpi.aws.types import Description, SageMakerClient


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

    def update(self, desc: Mapping[str, Any]) -> list[dict[str, Any]]:
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
    client: SageMakerClient,
    sub: Submission,
    say: Progress,
    poll: float | None = None,
    log: Any = None,
    on_log: Callable[[str], None] | None = None,
    stop_on_interrupt: bool = False,
) -> Submission:
    """Poll DescribeTrainingJob until a terminal status, reporting each transition.

    ``poll`` caps the seconds between calls. With ``log`` (a
    :class:`smmpi.ops.cloudwatch.JobLog`) the job's CloudWatch lines are passed
    to ``on_log`` as they arrive, rank-tagged; logs are best effort and never
    fail the wait.

    Ctrl-C ends the wait, not the job: the job is billed until it ends, so
    :class:`Interrupted` says how to stop it, or, with ``stop_on_interrupt``,
    StopTrainingJob is requested first (through :func:`smmpi.ops.status.stop`).
    """
    try:
        return _follow(client, sub, say, poll, _LogPump(log, on_log, say))
    except KeyboardInterrupt:
        raise Interrupted(_interrupted(client, sub, stop_on_interrupt)) from None


def _interrupted(client: SageMakerClient, sub: Submission, stop_job: bool) -> str:
    name = sub.job_name
    if not stop_job:
        return (
            f"interrupted; job {name} keeps running (and billing) on SageMaker: "
            f"stop it with `smmpi stop {name}`, follow it with `smmpi logs {name} --follow`"
        )
    try:
        return f"interrupted; {stop(client, name, sub.region)}"
    except SmmpiError as err:
        return f"interrupted; could not stop job {name} ({err}): run `smmpi stop {name}`"


class _LogPump:
    """Passes a job's new log lines on; the first failure stops following the log, not the job."""

    def __init__(self, log: Any, on_log: Callable[[str], None] | None, say: Progress) -> None:
        self.log = log if on_log is not None else None
        self.on_log, self.say = on_log, say

    def __call__(self, final: bool) -> None:
        from botocore.exceptions import BotoCoreError, ClientError

        if self.log is None or self.on_log is None:
            return
        try:
            lines = self.log.poll(final=final)
        except (SmmpiError, ClientError, BotoCoreError) as err:
            why = str(err) if isinstance(err, SmmpiError) else error_line(err)
            self.say(f"smmpi: not following the log any more: {why}")
            self.log = None
            return
        for line in lines:
            self.on_log(line.render())


def _follow(
    client: SageMakerClient, sub: Submission, say: Progress, poll: float | None, pump: _LogPump
) -> Submission:
    from botocore.exceptions import BotoCoreError, ClientError

    def describe_once() -> Description:
        try:
            return client.describe_training_job(TrainingJobName=sub.job_name)
        except (ClientError, BotoCoreError) as err:
            raise SubmitFailed(f"DescribeTrainingJob {sub.job_name}: {error_line(err)}") from None

    ceiling = 15.0 if poll is None else max(poll, 0.05)
    reporter = StatusReporter()
    for desc in poll_status(describe_once, first=1.0, ceiling=ceiling):
        sub.status = str(desc.get("TrainingJobStatus", "Unknown"))
        sub.secondary_status = desc.get("SecondaryStatus")
        sub.failure_reason = desc.get("FailureReason")
        for event in reporter.update(desc):
            sub.transitions.append(event)
            say(reporter.line(event))
        pump(final=sub.status in TERMINAL)
    return sub
