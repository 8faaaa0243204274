"""Following a submitted job: status lines, its log, Ctrl-C."""

from __future__ import annotations

from typing import Any

import pytest


class _FakeClient:
    """DescribeTrainingJob answers in sequence (moto's jobs always complete)."""

    def __init__(self, answers: list[dict[str, Any]]) -> None:
        self.answers = answers

    def describe_training_job(self, TrainingJobName: str) -> dict[str, Any]:
        return self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]


def test_follow_reports_transitions_and_failure_reason() -> None:
    from smmpi.runners.sagemaker.submit import Submission, follow

    client = _FakeClient(
        [
            {"TrainingJobStatus": "InProgress", "SecondaryStatus": "Starting"},
            {"TrainingJobStatus": "InProgress", "SecondaryStatus": "Starting"},
            {"TrainingJobStatus": "InProgress", "SecondaryStatus": "Training"},
            {
                "TrainingJobStatus": "Failed",
                "SecondaryStatus": "Failed",
                "FailureReason": "AlgorithmError: MPI_ABORT was invoked on rank 3",
            },
        ]
    )
    lines: list[str] = []
    sub = Submission(job_name="j", arn="", request={}, code_uri="", region="us-west-2")
    follow(client, sub, lines.append, poll=0.01)
    assert [t["secondary_status"] for t in sub.transitions] == ["Starting", "Training", "Failed"]
    assert sub.status == "Failed" and sub.exit_code == 1
    assert "MPI_ABORT" in (sub.failure_reason or "")
    # No SecondaryStatusTransitions (other endpoints): the statuses, timed by the local clock.
    assert lines == ["smmpi: [00:00] Starting", "smmpi: [00:00] Training", "smmpi: [00:00] Failed"]
    stopped = _FakeClient(
        [{"TrainingJobStatus": "Stopped", "SecondaryStatus": "MaxRuntimeExceeded"}]
    )
    lines.clear()
    follow(stopped, sub, lines.append, poll=0.01)
    assert lines == ["smmpi: [00:00] Stopped - MaxRuntimeExceeded"] and sub.exit_code == 1


class _FakeLog:
    """A JobLog stand-in: one batch of lines per poll, the rest on the final one."""

    def __init__(self) -> None:
        self.polls: list[bool] = []

    def poll(self, final: bool = False) -> list[Any]:
        from smmpi.ops.cloudwatch import LogLine

        self.polls.append(final)
        text = "done" if final else f"step {len(self.polls)}"
        return [LogLine("algo-1", 0, "stdout", text)]


def test_follow_streams_the_log_until_the_end() -> None:
    from smmpi.runners.sagemaker.submit import Submission, follow

    client = _FakeClient(
        [
            {"TrainingJobStatus": "InProgress", "SecondaryStatus": "Training"},
            {"TrainingJobStatus": "InProgress", "SecondaryStatus": "Training"},
            {"TrainingJobStatus": "Completed", "SecondaryStatus": "Completed"},
        ]
    )
    log, printed = _FakeLog(), []
    sub = Submission(job_name="j", arn="", request={}, code_uri="", region="us-west-2")
    follow(client, sub, lambda _: None, poll=0.01, log=log, on_log=printed.append)
    assert sub.exit_code == 0
    assert log.polls == [False, False, True]
    assert printed == ["[0] step 1", "[0] step 2", "[0] done"]


def test_follow_reports_secondary_transitions_with_elapsed_time() -> None:
    """SageMaker's SecondaryStatusTransitions, one line per new status or message."""
    from datetime import datetime, timedelta, timezone

    from smmpi.runners.sagemaker.submit import Submission, follow

    t0 = datetime(2026, 1, 1, tzinfo=timezone.utc)

    def at(s: int) -> datetime:
        return t0 + timedelta(seconds=s)

    starting = {"Status": "Starting", "StartTime": at(0), "StatusMessage": "Launching instances"}
    downloading = {
        "Status": "Downloading",
        "StartTime": at(42),
        "StatusMessage": "Downloading input data",
    }
    training = {
        "Status": "Training",
        "StartTime": at(95),
        "StatusMessage": "Downloading the training image",
    }
    training2 = {
        **training,
        "StatusMessage": "Training image download completed. Training in progress.",
    }
    uploading = {"Status": "Uploading", "StartTime": at(3700), "StatusMessage": "Uploading output"}
    completed = {"Status": "Completed", "StartTime": at(3710), "StatusMessage": "Job completed"}

    def answer(status: str, *transitions: dict[str, Any], **extra: Any) -> dict[str, Any]:
        return {
            "TrainingJobStatus": status,
            "SecondaryStatus": transitions[-1]["Status"],
            "CreationTime": t0,
            "SecondaryStatusTransitions": list(transitions),
            **extra,
        }

    client = _FakeClient(
        [
            answer("InProgress", starting),
            answer("InProgress", starting),
            # two transitions between polls: each keeps its own time
            answer("InProgress", starting, downloading, training),
            answer("InProgress", starting, downloading, training2, LastModifiedTime=at(130)),
            answer(
                "Completed",
                starting,
                downloading,
                training2,
                uploading,
                completed,
                TrainingEndTime=at(3710),
            ),
        ]
    )
    lines: list[str] = []
    sub = Submission(job_name="j", arn="", request={}, code_uri="", region="us-west-2")
    follow(client, sub, lines.append, poll=0.01)
    assert lines == [
        "smmpi: [00:00] Starting - Launching instances",
        "smmpi: [00:42] Downloading - Downloading input data",
        "smmpi: [01:35] Training - Downloading the training image",
        "smmpi: [02:10] Training - Training image download completed. Training in progress.",
        "smmpi: [1:01:40] Uploading - Uploading output",
        "smmpi: [1:01:50] Completed - Job completed",
    ]
    assert sub.status == "Completed" and sub.exit_code == 0
    assert [t["elapsed_s"] for t in sub.transitions] == [0, 42, 95, 130, 3700, 3710]


class _InterruptedClient(_FakeClient):
    """Answers, then Ctrl-C during the next DescribeTrainingJob; records StopTrainingJob."""

    def __init__(self, answers: list[dict[str, Any]], interrupt_after: int) -> None:
        super().__init__(answers)
        self.calls = 0
        self.interrupt_after = interrupt_after
        self.stopped: list[str] = []

    def describe_training_job(self, TrainingJobName: str) -> dict[str, Any]:
        self.calls += 1
        if self.calls == self.interrupt_after + 1:
            raise KeyboardInterrupt
        return {
            "TrainingJobName": TrainingJobName,
            **super().describe_training_job(TrainingJobName),
        }

    def stop_training_job(self, TrainingJobName: str) -> dict[str, Any]:
        self.stopped.append(TrainingJobName)
        return {}


@pytest.mark.parametrize("stop", [False, True])
def test_ctrl_c_while_following(stop: bool) -> None:
    """Ctrl-C leaves the job running and says how to stop it, or stops it when asked; exit 130."""
    from smmpi.runners.sagemaker.submit import Interrupted, Submission, follow

    client = _InterruptedClient(
        [{"TrainingJobStatus": "InProgress", "SecondaryStatus": "Training"}], interrupt_after=2
    )
    lines: list[str] = []
    sub = Submission(job_name="my-job", arn="", request={}, code_uri="", region="us-west-2")
    with pytest.raises(Interrupted) as info:
        follow(client, sub, lines.append, poll=0.01, stop_on_interrupt=stop)
    assert info.value.exit_code == 130
    message = str(info.value)
    assert lines == ["smmpi: [00:00] Training"]
    if stop:
        assert client.stopped == ["my-job"]
        assert "my-job: stop requested (was InProgress)" in message
    else:
        assert client.stopped == []
        assert "keeps running" in message and "`smmpi stop my-job`" in message
