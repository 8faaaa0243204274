"""A job's CloudWatch log: its hosts' streams, demuxed by rank with the local runs' parser."""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from smmpi.aws.errors import aws_errors
from smmpi.causes import ranked, summary
from smmpi.mpi_output import FailureScan, LineAssembler, Tagged, is_tagged
from smmpi.ops.status import JobStatus, describe, poll, status_of
from smmpi.toolkit.hosts import host_name

if TYPE_CHECKING:
    from smmpi.aws.types import CloudWatchLogsClient, SageMakerClient


LOG_GROUP = "/aws/sagemaker/TrainingJobs"
_STREAM_HOST_RE = re.compile(r"/(?P<host>algo-\d+)-\d+$")


def stream_host(stream_name: str) -> str:
    """``job/algo-2-1620763140`` -> ``algo-2`` (the stream's name if it has no host)."""
    m = _STREAM_HOST_RE.search(stream_name)
    return m["host"] if m else stream_name.rsplit("/", 1)[-1]


def log_streams(logs: CloudWatchLogsClient, name: str, host: str | None = None) -> list[str]:
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

    def __init__(self, logs: CloudWatchLogsClient, stream: str) -> None:
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
    """A job's log across its hosts' streams, demuxed by rank with the local runs' parser.

    With ``host``, only that host's lines: its stream's own lines, and the lines
    of the ranks that ran on it. The toolkit's tags (``[1,mpirank:R,algo-K]``)
    say where a rank ran although its output reaches algo-1's stream; without
    them a rank's lines belong to the stream they are in.
    """

    def __init__(self, logs: CloudWatchLogsClient, name: str, host: str | None = None) -> None:
        self.logs, self.name, self.host = logs, name, host
        self.readers: dict[str, StreamReader] = {}
        self.assemblers: dict[str, LineAssembler] = {}
        self.scan = FailureScan()

    def _discover(self) -> None:
        for stream in log_streams(self.logs, self.name):
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
        return [line for line in out if self.host is None or line.host == self.host]


def _tagged(host: str, t: Tagged) -> LogLine:
    """A rank's line; its host is the tag's (``[1,mpirank:R,algo-K]``), else the stream's.

    Every rank's output reaches algo-1's stream (mpirun runs there), so only
    the toolkit's tag says where a rank ran.
    """
    return LogLine(t.host or host, t.rank, t.stream, t.text)


def failure_summary(st: JobStatus, scan: FailureScan) -> list[str]:
    """Why a job failed, in at most two lines: the rank to blame, then SageMaker's reason,
    in the words of the table of causes (:mod:`smmpi.causes`).

    The per-rank view hides untagged lines (mpirun's abort notice, the
    toolkit's error), so what they said is summarised here.
    """
    out: list[str] = []
    rank = scan.failed_rank()
    if rank is not None:
        out.append(ranked(rank, scan.hosts.get(rank), scan.phrase(rank)))
    reason = summary(st.failure_reason) if st.status == "Failed" else None
    if reason:
        out.append(f"{st.name} Failed: {reason}")
    return out


def rank_host(rank: int, processes_per_host: int | None) -> str | None:
    """The host a rank ran on: the container maps ranks by slot (``-map-by slot``)."""
    if not processes_per_host:
        return None
    return host_name(rank // processes_per_host)


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
    sm: SageMakerClient,
    logs: CloudWatchLogsClient,
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
    state: JobStatus | None = None
    for desc in poll(lambda: describe(sm, name), first=interval, ceiling=interval, sleep=sleep):
        state = status_of(desc)
        emit(log.poll(final=state.done))
    assert state is not None
    return state
