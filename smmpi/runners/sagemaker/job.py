"""A submitted training job as smmpi knows it, and the ways submitting can end early."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from smmpi.errors import SmmpiError

if TYPE_CHECKING:
    from smmpi.aws.types import Request


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
    request: Request | dict[str, Any]  # {} when the SDK did not show it
    code_uri: str
    region: str
    status: str = "InProgress"
    secondary_status: str | None = None
    failure_reason: str | None = None
    transitions: list[dict[str, Any]] = field(default_factory=list)

    @property
    def name(self) -> str:
        return self.job_name

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
