"""One submitted job's state: DescribeTrainingJob flattened, polled until the end, or stopped.

Every function takes a boto3 SageMaker client, so the same code serves the CLI,
the Python API and the tests (a moto server reached through ``AWS_ENDPOINT_URL``).
A bad or unknown job name is exit code 2 because nothing was touched.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from smmpi.aws.errors import aws_errors
from smmpi.aws.facts import TERMINAL, check_job_name
from smmpi.causes import summary
from smmpi.ops.drivers import LOCAL_WORLD, drivers_world
from smmpi.ops.local_jobs import LOCAL_PPN
from smmpi.toolkit.request import MPI_NUM_PROCESSES, MPI_PROCESSES_PER_HOST

if TYPE_CHECKING:
    from smmpi.aws.types import Description, S3Client, SageMakerClient


@dataclass(frozen=True)
class JobStatus:
    """What a user needs to know about one job, flattened from DescribeTrainingJob."""

    name: str
    status: str
    secondary: str
    instance_type: str
    instance_count: int
    processes_per_host: int | None
    created: datetime | None
    started: datetime | None
    ended: datetime | None
    billable_seconds: int | None
    failure_reason: str | None
    output_path: str | None
    model_artifacts: str | None
    transitions: tuple[tuple[str, str], ...]
    metrics: tuple[tuple[str, float], ...] = ()  # FinalMetricDataList: each metric's last value
    short_world: str | None = None  # an SDK driver's per-node -np started fewer than N x n
    ranks: int | None = None  # sagemaker_mpi_num_processes: the container's -np, if named

    @property
    def world(self) -> int | None:
        """The ranks the container starts: its -np, else N x n (None: n unknown)."""
        if self.ranks:
            return self.ranks
        return self.processes_per_host * self.instance_count if self.processes_per_host else None

    @property
    def done(self) -> bool:
        return self.status in TERMINAL

    def elapsed(self, now: datetime | None = None) -> float | None:
        """Seconds since the job started (or was created), up to its end."""
        start = self.started or self.created
        if start is None:
            return None
        end = self.ended or now or datetime.now(timezone.utc)
        return max(0.0, (end - start).total_seconds())

    def lines(self) -> list[str]:
        """``key  value`` lines for ``smmpi status``."""
        rows: list[tuple[str, str]] = [
            ("job", self.name),
            ("status", self.status),
            ("instances", f"{self.instance_count} x {self.instance_type}"),
        ]
        if self.secondary and self.secondary != self.status:
            rows[1] = ("status", f"{self.status} ({self.secondary})")
        if not self.done and self.transitions and self.transitions[-1][1]:
            rows.append(("progress", self.transitions[-1][1]))
        if self.processes_per_host:
            rows.append(("processes", f"{self.processes_per_host} per host, {self.world} in all"))
        if self.short_world:
            rows.append(("world", self.short_world))
        if self.created:
            rows.append(("created", self.created.isoformat(timespec="seconds")))
        elapsed = self.elapsed()
        if elapsed is not None:
            rows.append(("elapsed", f"{elapsed:.0f} s"))
        if self.billable_seconds is not None:
            rows.append(("billable", f"{self.billable_seconds} s"))
        if self.failure_reason:
            rows.append(("failure", summary(self.failure_reason) or ""))
        if self.metrics:
            rows.append(("metrics", ", ".join(f"{k} {v:g}" for k, v in self.metrics)))
        if self.model_artifacts:
            rows.append(("model", self.model_artifacts))
        elif self.output_path:
            rows.append(("output", self.output_path))
        width = max(len(k) for k, _ in rows)
        return [f"{k:<{width}}  {v}" for k, v in rows]

    def as_dict(self) -> dict[str, Any]:
        def iso(t: datetime | None) -> str | None:
            return t.isoformat() if t else None

        return {
            "name": self.name,
            "status": self.status,
            "secondary_status": self.secondary,
            "instance_type": self.instance_type,
            "instance_count": self.instance_count,
            "processes_per_host": self.processes_per_host,
            "world": self.world,
            "created": iso(self.created),
            "started": iso(self.started),
            "ended": iso(self.ended),
            "elapsed_s": self.elapsed(),
            "billable_seconds": self.billable_seconds,
            "failure_reason": self.failure_reason,
            "output_path": self.output_path,
            "model_artifacts": self.model_artifacts,
            "final_metrics": dict(self.metrics),
            "short_world": self.short_world,
        }


def describe(sm: SageMakerClient, name: str, region: str | None = None) -> Description:
    """DescribeTrainingJob with the name checked first and not-found as ``UnknownJob``."""
    check_job_name(name)
    where = region or getattr(getattr(sm, "meta", None), "region_name", None)
    with aws_errors(job=name, region=where):
        return sm.describe_training_job(TrainingJobName=name)


def _ppn(hyperparameters: dict[str, str], name: str = MPI_PROCESSES_PER_HOST) -> int | None:
    raw = hyperparameters.get(name)
    if raw is None:
        return None
    try:
        return int(str(raw).strip('"'))
    except ValueError:
        return None


def job_status(
    sm: SageMakerClient, name: str, region: str | None = None, s3: S3Client | None = None
) -> JobStatus:
    """The job's status; with ``s3``, a ModelTrainer job's processes per host are read from its
    ``sm_drivers`` channel (``distributed.json``), as its container reads them, with the short
    world its driver's per-node ``-np`` starts."""
    d = describe(sm, name, region)
    ppn, world = _ppn(d.get("HyperParameters", {})), None
    if ppn is None and s3 is not None:
        ppn, world = drivers_world(s3, d)
    return status_of(d, ppn, world)


def status_of(
    d: Mapping[str, Any], processes_per_host: int | None = None, short_world: str | None = None
) -> JobStatus:
    """A DescribeTrainingJob answer (or a local job's record) as a :class:`JobStatus`.

    Processes per host: the estimators' hyperparameter, else ``processes_per_host`` (what a
    ModelTrainer job's ``sm_drivers`` channel says), else a local job's own record of them.
    """
    resources = d.get("ResourceConfig", {})
    output = d.get("OutputDataConfig", {}).get("S3OutputPath")
    ppn = _ppn(d.get("HyperParameters", {})) or processes_per_host
    local = d.get(LOCAL_PPN)
    if ppn is None and isinstance(local, int) and not isinstance(local, bool) and local > 0:
        ppn = local
    return JobStatus(
        name=d["TrainingJobName"],
        status=d["TrainingJobStatus"],
        secondary=d.get("SecondaryStatus", ""),
        instance_type=resources.get("InstanceType", "?"),
        instance_count=int(resources.get("InstanceCount", 0)),
        processes_per_host=ppn,
        created=d.get("CreationTime"),
        started=d.get("TrainingStartTime"),
        ended=d.get("TrainingEndTime"),
        billable_seconds=d.get("BillableTimeInSeconds"),
        failure_reason=d.get("FailureReason"),
        output_path=output,
        model_artifacts=d.get("ModelArtifacts", {}).get("S3ModelArtifacts"),
        transitions=tuple(
            (t.get("Status", ""), t.get("StatusMessage", ""))
            for t in d.get("SecondaryStatusTransitions", [])
        ),
        metrics=_metrics(d.get("FinalMetricDataList")),
        short_world=short_world or _text(d.get(LOCAL_WORLD)),
        ranks=_ppn(d.get("HyperParameters", {}), MPI_NUM_PROCESSES),
    )


def local_status(name: str) -> JobStatus | None:
    """Local job ``name`` (``submit --local``) as ``smmpi status`` shows a submitted one (its
    record's times are text); None: smmpi has no local job of that name."""
    from smmpi.ops.local_jobs import local_record

    found = local_record(name)
    return None if found is None else record_status(found[0])


def record_status(record: Mapping[str, Any]) -> JobStatus:
    """A local job's record (``describe.json``, its times ISO text) as a :class:`JobStatus`."""
    times = ("CreationTime", "TrainingStartTime", "TrainingEndTime")
    return status_of({**record, **{k: _when(record.get(k)) for k in times}})


def _when(value: object) -> datetime | None:
    """An ISO time a local record holds, as a datetime (None: none, or not a time)."""
    if isinstance(value, datetime):
        return value
    try:
        return datetime.fromisoformat(str(value)) if value else None
    except ValueError:
        return None


def _text(value: object) -> str | None:
    return value if isinstance(value, str) and value else None


def _metrics(final: object) -> tuple[tuple[str, float], ...]:
    """FinalMetricDataList's names and values (what is not a metric left out)."""
    found = []
    for metric in final if isinstance(final, list) else []:
        if not isinstance(metric, dict):
            continue
        name, value = metric.get("MetricName"), metric.get("Value")
        if (
            isinstance(name, str)
            and isinstance(value, (int, float))
            and not isinstance(value, bool)
        ):
            found.append((name, float(value)))
    return tuple(found)


def stop(sm: SageMakerClient, name: str, region: str | None = None) -> str:
    """Ask SageMaker to stop the job; a job that already ended is left as it is."""
    d = describe(sm, name, region)
    state = d["TrainingJobStatus"]
    if state in TERMINAL:
        return f"{name} already {state}; nothing to stop"
    if state == "Stopping":
        return f"{name} is already stopping"
    with aws_errors(job=name, region=region):
        sm.stop_training_job(TrainingJobName=name)
    return f"{name}: stop requested (was {state}); `smmpi status {name}` shows when it has stopped"


def poll(
    describe_once: Callable[[], Mapping[str, Any]],
    *,
    first: float,
    ceiling: float,
    sleep: Callable[[float], None] = time.sleep,
) -> Iterator[Mapping[str, Any]]:
    """DescribeTrainingJob answers until the job ends, the last one included.

    Waits ``first`` seconds after the first answer, doubling up to ``ceiling``:
    a short job is seen promptly and a long one costs few API calls.
    """
    delay = min(first, ceiling)
    while True:
        desc = describe_once()
        yield desc
        if desc.get("TrainingJobStatus") in TERMINAL:
            return
        sleep(delay)
        delay = min(delay * 2, ceiling)
