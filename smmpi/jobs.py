"""Operating submitted jobs: status, the jobs smmpi made, stop, per-rank logs, artifacts.

Every function takes boto3 clients as arguments, so the same code serves the
CLI, the Python API and the tests (a moto server reached through
``AWS_ENDPOINT_URL``, which boto3 honours on its own). ``clients`` builds them
the way the CLI does. AWS errors become one line (``SmmpiError``); a bad or
unknown job name is exit code 2 because nothing was touched.
"""

from __future__ import annotations

import os
import re
import tarfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from smmpi import config
from smmpi.errors import BadInput, SmmpiError
from smmpi.logs import FailureScan, LineAssembler, Tagged, is_tagged
from smmpi.spec import JOB_NAME_RE, SMMPI_TAG_KEY, SMMPI_TAG_VALUE

#: The tag the submission code puts on every training job smmpi creates;
#: ``smmpi jobs`` lists only jobs that carry it.
SMMPI_TAG = (SMMPI_TAG_KEY, SMMPI_TAG_VALUE)

#: SageMaker's own rule for training job names (the pattern lives with the spec's checks).
JOB_NAME_RULE = "1-63 letters, digits and hyphens, starting and ending with a letter or digit"

LOG_GROUP = "/aws/sagemaker/TrainingJobs"
TERMINAL = frozenset({"Completed", "Failed", "Stopped"})
_STREAM_HOST_RE = re.compile(r"/(?P<host>algo-\d+)-\d+$")


class UnknownJob(SmmpiError):
    """No training job by that name in this account and region (exit 2: nothing ran)."""

    exit_code = 2

    def __init__(self, name: str, region: str | None = None) -> None:
        where = f" in {region}" if region else ""
        super().__init__(f"unknown job: {name!r}: no such training job{where}")


class NotConfigured(SmmpiError):
    """No AWS credentials or region (exit 2: found before anything was touched)."""

    exit_code = 2


# ---------------------------------------------------------------- clients


def resolve_region(flag: str | None = None) -> str | None:
    """Region by smmpi's precedence: flag, SMMPI_REGION, config file, then AWS's own."""
    return (
        config.setting("region", flag)
        or os.environ.get("AWS_REGION")
        or os.environ.get("AWS_DEFAULT_REGION")
        or None
    )


def clients(*services: str, region: str | None = None) -> tuple[Any, ...]:
    """boto3 clients for ``services``, in one session, in the resolved region.

    ``AWS_ENDPOINT_URL`` (and the per-service ``AWS_ENDPOINT_URL_<SERVICE>``)
    is read by boto3 itself, so a moto server or a private endpoint works
    with no code here.
    """
    import boto3

    session = boto3.session.Session(region_name=resolve_region(region))
    if session.region_name is None:
        raise NotConfigured(
            "no AWS region: pass --region, set SMMPI_REGION or AWS_REGION, "
            "or run `smmpi infra deploy --region R`"
        )
    return tuple(session.client(s) for s in services)  # type: ignore[call-overload]


@contextmanager
def aws_errors(job: str | None = None, region: str | None = None) -> Iterator[None]:
    """Turn botocore failures into one line; never echo request headers or keys."""
    from botocore.exceptions import (
        ClientError,
        EndpointConnectionError,
        NoCredentialsError,
        PartialCredentialsError,
    )

    try:
        yield
    except (NoCredentialsError, PartialCredentialsError):
        raise NotConfigured(
            "no AWS credentials found: configure a profile (aws configure) or set "
            "AWS_PROFILE; `smmpi doctor` checks the setup"
        ) from None
    except EndpointConnectionError as err:
        raise SmmpiError(f"cannot reach AWS: {err.kwargs.get('endpoint_url', err)}") from None
    except ClientError as err:
        info = err.response.get("Error", {})
        code, message = str(info.get("Code", "")), str(info.get("Message", ""))
        if job is not None and _is_not_found(code, message):
            raise UnknownJob(job, region) from None
        raise SmmpiError(f"{err.operation_name}: {code}: {message}") from None


def _is_not_found(code: str, message: str) -> bool:
    if code in {"ResourceNotFound", "ResourceNotFoundException", "NoSuchKey", "404"}:
        return True
    lowered = message.lower()
    return code == "ValidationException" and (
        "not found" in lowered or "could not find" in lowered or "does not exist" in lowered
    )


def check_name(name: str) -> str:
    """Refuse a name SageMaker would refuse, before any call."""
    if not JOB_NAME_RE.match(name):
        raise BadInput("job name", name, JOB_NAME_RULE)
    return name


# ---------------------------------------------------------------- status


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
            world = self.processes_per_host * self.instance_count
            rows.append(("processes", f"{self.processes_per_host} per host, {world} in all"))
        if self.created:
            rows.append(("created", self.created.isoformat(timespec="seconds")))
        elapsed = self.elapsed()
        if elapsed is not None:
            rows.append(("elapsed", f"{elapsed:.0f} s"))
        if self.billable_seconds is not None:
            rows.append(("billable", f"{self.billable_seconds} s"))
        if self.failure_reason:
            rows.append(("failure", self.failure_reason.splitlines()[0]))
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
            "created": iso(self.created),
            "started": iso(self.started),
            "ended": iso(self.ended),
            "elapsed_s": self.elapsed(),
            "billable_seconds": self.billable_seconds,
            "failure_reason": self.failure_reason,
            "output_path": self.output_path,
            "model_artifacts": self.model_artifacts,
        }


def describe(sm: Any, name: str, region: str | None = None) -> dict[str, Any]:
    """DescribeTrainingJob with the name checked first and not-found as ``UnknownJob``."""
    check_name(name)
    where = region or getattr(getattr(sm, "meta", None), "region_name", None)
    with aws_errors(job=name, region=where):
        response: dict[str, Any] = sm.describe_training_job(TrainingJobName=name)
    return response


def _ppn(hyperparameters: dict[str, str]) -> int | None:
    raw = hyperparameters.get("sagemaker_mpi_num_of_processes_per_host")
    if raw is None:
        return None
    try:
        return int(str(raw).strip('"'))
    except ValueError:
        return None


def job_status(sm: Any, name: str, region: str | None = None) -> JobStatus:
    d = describe(sm, name, region)
    resources = d.get("ResourceConfig", {})
    output = d.get("OutputDataConfig", {}).get("S3OutputPath")
    return JobStatus(
        name=d["TrainingJobName"],
        status=d["TrainingJobStatus"],
        secondary=d.get("SecondaryStatus", ""),
        instance_type=resources.get("InstanceType", "?"),
        instance_count=int(resources.get("InstanceCount", 0)),
        processes_per_host=_ppn(d.get("HyperParameters", {})),
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
    )


# ---------------------------------------------------------------- list, stop


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


def is_smmpi_job(tags: list[dict[str, str]]) -> bool:
    key, value = SMMPI_TAG
    return any(t.get("Key") == key and t.get("Value") == value for t in tags)


def list_jobs(sm: Any, limit: int = 20, scan: int = 200) -> list[JobSummary]:
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


def stop(sm: Any, name: str, region: str | None = None) -> str:
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


# ---------------------------------------------------------------- logs


def stream_host(stream_name: str) -> str:
    """``job/algo-2-1620763140`` -> ``algo-2`` (the stream's name if it has no host)."""
    m = _STREAM_HOST_RE.search(stream_name)
    return m["host"] if m else stream_name.rsplit("/", 1)[-1]


def log_streams(logs: Any, name: str, host: str | None = None) -> list[str]:
    """The job's CloudWatch streams, algo-1 first; only ``host``'s when given."""
    streams: list[str] = []
    with aws_errors():
        paginator = logs.get_paginator("describe_log_streams")
        try:
            for page in paginator.paginate(logGroupName=LOG_GROUP, logStreamNamePrefix=f"{name}/"):
                streams.extend(s["logStreamName"] for s in page.get("logStreams", []))
        except logs.exceptions.ResourceNotFoundException:
            return []
    if host is not None:
        streams = [s for s in streams if stream_host(s) == host]

    def order(stream: str) -> tuple[int, str]:
        h = stream_host(stream)
        return (int(h.split("-")[1]) if re.fullmatch(r"algo-\d+", h) else 1 << 30, stream)

    return sorted(streams, key=order)


class StreamReader:
    """Reads one CloudWatch stream from its head, remembering where it stopped.

    Calling ``read`` again returns only what arrived since, which is how
    ``logs --follow`` polls without repeating lines.
    """

    def __init__(self, logs: Any, stream: str) -> None:
        self.logs, self.stream, self.host = logs, stream, stream_host(stream)
        self._token: str | None = None

    #: Pages read per call at most, so one busy stream cannot starve the others.
    max_pages = 200

    def read(self) -> list[str]:
        """Lines since the last call. CloudWatch pages by time and may return an
        empty page before later events, so only a token that stops moving
        means the end.
        """
        lines: list[str] = []
        with aws_errors():
            for _ in range(self.max_pages):
                kwargs: dict[str, Any] = {
                    "logGroupName": LOG_GROUP,
                    "logStreamName": self.stream,
                    "startFromHead": True,
                }
                if self._token:
                    kwargs["nextToken"] = self._token
                page = self.logs.get_log_events(**kwargs)
                for event in page.get("events", []):
                    lines.extend(str(event.get("message", "")).splitlines() or [""])
                token = page.get("nextForwardToken")
                moved = token != self._token
                self._token = token
                if not moved:
                    break
        return lines


@dataclass(frozen=True)
class LogLine:
    """One line of a job's log: the rank's own text when tagged, else the host's raw line."""

    host: str
    rank: int | None
    stream: str
    text: str

    def render(self, with_source: bool = True) -> str:
        if not with_source:
            return self.text
        if self.rank is not None:
            return (
                f"[{self.rank}] {self.text}"
                if self.stream == "stdout"
                else f"[{self.rank}:{self.stream}] {self.text}"
            )
        return f"[{self.host}] {self.text}"


class JobLog:
    """A job's log across its hosts' streams, demuxed by rank with the local runs' parser."""

    def __init__(self, logs: Any, name: str, host: str | None = None) -> None:
        self.logs, self.name, self.host = logs, name, host
        self.readers: dict[str, StreamReader] = {}
        self.assemblers: dict[str, LineAssembler] = {}
        self.scan = FailureScan()

    def _discover(self) -> None:
        for stream in log_streams(self.logs, self.name, self.host):
            if stream not in self.readers:
                self.readers[stream] = StreamReader(self.logs, stream)
                self.assemblers[stream] = LineAssembler()

    def poll(self, final: bool = False) -> list[LogLine]:
        """New lines from every stream since the last poll; ``final`` flushes half lines."""
        self._discover()
        out: list[LogLine] = []
        for stream, reader in self.readers.items():
            assembler = self.assemblers[stream]
            for raw in reader.read():
                if not is_tagged(raw):  # the container toolkit's or mpirun's own line
                    self.scan.feed_untagged(raw)
                    out.append(LogLine(reader.host, None, "raw", raw))
                    continue
                for t in assembler.feed(raw):  # [] while a rank's line is still partial
                    self.scan.feed_tagged(t)
                    out.append(_tagged(reader.host, t))
            if final:
                for t in assembler.flush():
                    self.scan.feed_tagged(t)
                    out.append(_tagged(reader.host, t))
        return out


def _tagged(host: str, t: Tagged) -> LogLine:
    return LogLine(host, t.rank, t.stream, t.text)


def failure_summary(st: JobStatus, scan: FailureScan) -> list[str]:
    """Why a job failed, in at most two lines: the rank to blame, then SageMaker's reason.

    The per-rank view hides untagged lines (mpirun's abort notice, the
    toolkit's error), so what they said is summarised here.
    """
    out: list[str] = []
    rank = scan.failed_rank()
    if rank is not None:
        out.append(f"rank {rank} failed: {scan.reason(rank)}")
    if st.status == "Failed" and st.failure_reason:
        out.append(f"{st.name} Failed: {st.failure_reason.strip().splitlines()[0]}")
    return out


def rank_host(rank: int, processes_per_host: int | None) -> str | None:
    """The host a rank ran on: the container maps ranks by slot (``-map-by slot``)."""
    if not processes_per_host:
        return None
    return f"algo-{rank // processes_per_host + 1}"


def render_demuxed(lines: list[LogLine], processes_per_host: int | None = None) -> list[str]:
    """Each rank's lines under a ``==> rank R (algo-k) <==`` header, ranks in order."""
    by_rank: dict[int, list[LogLine]] = {}
    for line in lines:
        if line.rank is not None:
            by_rank.setdefault(line.rank, []).append(line)
    out: list[str] = []
    for rank in sorted(by_rank):
        host = rank_host(rank, processes_per_host)
        out.append(f"==> rank {rank}" + (f" ({host})" if host else "") + " <==")
        for line in by_rank[rank]:
            out.append(line.text if line.stream == "stdout" else f"<{line.stream}> {line.text}")
    return out


def select(lines: list[LogLine], rank: int | None) -> list[LogLine]:
    return [ln for ln in lines if rank is None or ln.rank == rank]


def follow(
    sm: Any,
    logs: Any,
    name: str,
    emit: Callable[[list[LogLine]], None],
    host: str | None = None,
    interval: float = 5.0,
    sleep: Callable[[float], None] = time.sleep,
    log: JobLog | None = None,
) -> JobStatus:
    """Poll the job's streams and emit new lines until the job ends; returns its last status.

    The last poll happens after SageMaker reports the end, so lines written in
    the final seconds are not lost. Pass ``log`` to read its ``scan`` afterwards.
    """
    log = log or JobLog(logs, name, host)
    while True:
        state = job_status(sm, name)
        emit(log.poll(final=state.done))
        if state.done:
            return state
        sleep(interval)


# ---------------------------------------------------------------- fetch


def split_s3(uri: str) -> tuple[str, str]:
    """(bucket, key) of an ``s3://bucket/key`` URI."""
    if not uri.startswith("s3://"):
        raise SmmpiError(f"not an S3 URI: {uri}")
    bucket, _, key = uri[5:].partition("/")
    return bucket, key


def artifact_uris(d: dict[str, Any]) -> dict[str, str]:
    """Where SageMaker puts the job's archives: ``model`` and ``output``."""
    name = d["TrainingJobName"]
    base = str(d.get("OutputDataConfig", {}).get("S3OutputPath", "")).rstrip("/")
    model = d.get("ModelArtifacts", {}).get("S3ModelArtifacts") or (
        f"{base}/{name}/output/model.tar.gz" if base else ""
    )
    out: dict[str, str] = {}
    if model:
        out["model"] = model
        out["output"] = model.rsplit("/", 1)[0] + "/output.tar.gz"
    elif base:
        out["output"] = f"{base}/{name}/output/output.tar.gz"
    return out


def _extract(archive: Path, dest: Path) -> list[Path]:
    """Extract refusing links and paths that leave ``dest`` (archives come from the job)."""
    dest.mkdir(parents=True, exist_ok=True)
    root = dest.resolve()
    with tarfile.open(archive) as tar:
        members = tar.getmembers()
        for m in members:
            target = (root / m.name).resolve()
            if (
                not (target == root or root in target.parents)
                or m.issym()
                or m.islnk()
                or m.isdev()
            ):
                raise SmmpiError(f"{archive.name}: refusing unsafe member {m.name!r}")
        if hasattr(tarfile, "data_filter"):
            tar.extractall(root, filter="data")
        else:  # pragma: no cover - Python < 3.10.12
            tar.extractall(root)
    return [root / m.name for m in members if m.isfile()]


@dataclass(frozen=True)
class Fetched:
    kind: str
    uri: str
    directory: Path | None  # None: no archive at uri
    files: tuple[Path, ...]


def fetch(sm: Any, s3: Any, name: str, to: Path, region: str | None = None) -> list[Fetched]:
    """Download the model and output archives and extract them to ``to/model``, ``to/output``.

    Missing archives are reported, not fatal: a failed job often has output
    but no model. Having neither is an error.
    """
    d = describe(sm, name, region)
    results: list[Fetched] = []
    to.mkdir(parents=True, exist_ok=True)
    for kind, uri in artifact_uris(d).items():
        bucket, key = split_s3(uri)
        archive = to / f"{kind}.tar.gz"
        with aws_errors():
            try:
                s3.download_file(bucket, key, str(archive))
            except Exception as err:  # botocore raises ClientError 404 for a missing key
                if _missing(err):
                    results.append(Fetched(kind, uri, None, ()))
                    continue
                raise
        files = _extract(archive, to / kind)
        archive.unlink()
        results.append(Fetched(kind, uri, to / kind, tuple(files)))
    if not any(r.directory for r in results):
        state = d["TrainingJobStatus"]
        raise SmmpiError(
            f"{name} ({state}) has no model or output archive at "
            + ", ".join(r.uri for r in results)
        )
    return results


def _missing(err: Exception) -> bool:
    response = getattr(err, "response", None)
    if not isinstance(response, dict):
        return False
    code = str(response.get("Error", {}).get("Code", ""))
    return code in {"404", "NoSuchKey", "NotFound"}
