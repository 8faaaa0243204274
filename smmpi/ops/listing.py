"""The jobs smmpi submitted: those carrying its tag, newest first."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING

from smmpi.aws.errors import aws_errors
from smmpi.aws.facts import is_smmpi_job

if TYPE_CHECKING:
    from smmpi.aws.types import SageMakerClient


@dataclass(frozen=True)
class JobSummary:
    name: str
    status: str
    created: datetime | None
    ended: datetime | None

    def line(self, width: int) -> str:
        created = self.created.strftime("%Y-%m-%d %H:%M:%S") if self.created else "-"
        took = (
            f"{(self.ended - self.created).total_seconds():.0f} s"
            if (self.ended and self.created)
            else "-"
        )
        return f"{self.name:<{width}}  {self.status:<10}  {created}  {took}"


def list_jobs(sm: SageMakerClient, limit: int = 20, scan: int = 200) -> list[JobSummary]:
    """The newest ``limit`` jobs carrying ``SMMPI_TAG``, among the newest ``scan`` jobs.

    ListTrainingJobs cannot filter by tag, so each candidate's tags are read;
    ``scan`` bounds that cost in accounts with many jobs made by other tools.
    """
    found: list[JobSummary] = []
    seen = 0
    with aws_errors():
        paginator = sm.get_paginator("list_training_jobs")
        pages = paginator.paginate(
            SortBy="CreationTime", SortOrder="Descending", PaginationConfig={"PageSize": 50}
        )
        for page in pages:
            for summary in page.get("TrainingJobSummaries", []):
                seen += 1
                tags = sm.list_tags(ResourceArn=summary["TrainingJobArn"]).get("Tags", [])
                if is_smmpi_job(tags):
                    found.append(
                        JobSummary(
                            name=summary["TrainingJobName"],
                            status=summary["TrainingJobStatus"],
                            created=summary.get("CreationTime"),
                            ended=summary.get("TrainingEndTime"),
                        )
                    )
                if len(found) >= limit or seen >= scan:
                    return found
    return found
