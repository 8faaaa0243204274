"""A job's CloudWatch log: ``/aws/sagemaker/TrainingJobs``, one stream per instance.

Streams are named as SageMaker names them, ``JOB/algo-k-<epoch>``. While the
job runs, events go into moto's Logs backend as they come (so GetLogEvents
sees a rank's line at once) and are appended to ``STATE/logs/JOB/algo-k.jsonl``.
When the job ends, its streams' events are read from those files whenever
moto reads them (:mod:`.kept`), and the streams themselves are made from the
job's ``streams.json`` whenever they are read (:mod:`.coldstreams`), as they
are after a restart: serve's memory does not grow with the logs of the jobs it ran.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from smmpi.serve import kept, logfilter
from smmpi.serve.coldstreams import ColdStreams
from smmpi.serve.job_records import ACCOUNT
from smmpi.serve.state import read_json, subfolder, write_json

GROUP = "/aws/sagemaker/TrainingJobs"
JOB_STREAMS = 512  # the most instances a job has here (smmpi.spec.world.MAX_INSTANCES)
_MAX_MESSAGE = 256 * 1024 - 26  # CloudWatch's limit for one event


def _backend(region: str) -> Any:
    from moto.logs.models import logs_backends

    return logs_backends[ACCOUNT][region]


def _group(region: str, folder: Path) -> Any:
    """The training jobs' log group in moto (made if need be), its streams a ColdStreams."""
    backend = _backend(region)
    if GROUP not in backend.groups:
        backend.create_log_group(GROUP, {})
    group = backend.groups[GROUP]
    if not isinstance(group.streams, ColdStreams):
        group.streams = ColdStreams(group, folder, group.streams)
    return group


def _ensure(region: str, stream: str, folder: Path) -> None:
    if stream not in _group(region, folder).streams:
        _backend(region).create_log_stream(GROUP, stream)


def _put(region: str, name: str, events: list[dict[str, Any]]) -> list[Any]:
    """Put ``events`` into moto's stream ``name``; moto's events for them (ingestion, id)."""
    stream = _backend(region).groups[GROUP].streams[name]
    before = len(stream.events)
    for start in range(0, len(events), 5000):  # PutLogEvents takes 10,000 at most
        _backend(region).put_log_events(GROUP, name, events[start : start + 5000])
    return list(stream.events[before:])


class JobLogs:
    """Every job's log streams, in moto and on disk."""

    def __init__(self, root: Path) -> None:
        self.folder = subfolder(root, "logs")
        self.lock = threading.Lock()

    def open(self, name: str, region: str, hosts: list[str]) -> dict[str, str]:
        """Create the job's streams (one per host); returns host -> stream name."""
        epoch = int(time.time())
        streams = {host: f"{name}/{host}-{epoch}" for host in hosts}
        with self.lock:
            folder = subfolder(self.folder, name)
            write_json(folder / "streams.json", {"region": region, "streams": streams})
            for stream in streams.values():
                _ensure(region, stream, self.folder)
        return streams

    def append(self, name: str, region: str, host: str, stream: str, lines: list[str]) -> None:
        """Append ``lines`` to ``stream`` now (one event each)."""
        if not lines:
            return
        now = int(time.time() * 1000)
        events = [{"timestamp": now, "message": line[:_MAX_MESSAGE]} for line in lines]
        with self.lock:
            _ensure(region, stream, self.folder)
            put = _put(region, stream, events)
            path = subfolder(self.folder, name) / f"{host}.jsonl"
            fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW, 0o600)
            with os.fdopen(fd, "a", encoding="utf-8", errors="surrogateescape") as f:
                f.writelines(kept.line(event) for event in put)

    def close(self, name: str) -> None:
        """The job ended: its streams are read from its files from now on."""
        with self.lock:
            folder = self.folder / name
            if not (folder / "streams.json").is_file():
                return  # it never started (failed or stopped before training)
            data = read_json(folder / "streams.json")
            group = _group(data["region"], self.folder)
            made = {}
            for host, stream_name in data["streams"].items():
                stream = group.streams.get(stream_name)
                if stream is not None and not isinstance(stream.events, kept.KeptEvents):
                    summary = kept.summary_of(stream)
                    data.setdefault("kept", {})[host] = summary
                    kept.keep(stream, folder / f"{host}.jsonl", summary)
                    made[stream_name] = stream
            write_json(folder / "streams.json", data)
            for stream_name, stream in made.items():
                group.streams.freeze(stream_name, stream)

    def workers(
        self, name: str, region: str, streams: dict[str, str], lines: Callable[[str], list[str]]
    ) -> None:
        """Append ``lines(host)`` to each worker's stream (algo-2..N: every host but the first)."""
        for host in list(streams)[1:]:
            self.append(name, region, host, streams[host], lines(host))

    def restore(self) -> None:
        """Put every kept job's streams back into moto's Logs backend, cold."""
        for folder in sorted(p for p in self.folder.iterdir() if p.is_dir()):
            index = folder / "streams.json"
            if not index.is_file():
                continue
            data = read_json(index)
            summaries = data.setdefault("kept", {})
            for host in data["streams"]:
                if host not in summaries:  # serve stopped before the job ended
                    summaries[host] = kept.summary_of_file(folder / f"{host}.jsonl")
                summaries[host].setdefault("created", time.time() * 1000)  # kept before it was
                kept.reserve(summaries[host])
            write_json(index, data)
            streams = _group(data["region"], self.folder).streams
            for stream in data["streams"].values():
                streams.cold(stream)

    def job_streams(self, target: str, body: bytes, region: str) -> bytes | None:
        """smmpi's answer to a Logs request about jobs' streams (None: moto's answer):
        DescribeLogStreams for one job's streams in one page, and FilterLogEvents by
        ``logStreamNamePrefix`` (:mod:`.logfilter`)."""
        operation = target.rpartition(".")[2]
        if operation not in ("DescribeLogStreams", "FilterLogEvents"):
            return None
        try:
            params = json.loads(body)
        except (ValueError, UnicodeDecodeError, RecursionError):
            return None
        if not isinstance(params, dict):
            return None
        if operation == "FilterLogEvents":
            with self.lock:
                return logfilter.filtered(params, _backend(region))
        return self._one_page(params, region)

    def _one_page(self, params: dict[str, Any], region: str) -> bytes | None:
        """DescribeLogStreams' answer for one training job's streams, all in one page.

        The SageMaker SDK's tailer (``Session.logs_for_job``) asks for ``JOB/`` streams
        with ``limit=min(instances, 50)`` and, while an answer has a ``nextToken``, asks
        again without passing it: over 50 streams it would never end. A first request
        (no ``nextToken``) for one job's streams, by name, therefore gets every stream
        of the job (up to 512, the most instances a job has) and no token. Any other
        request is moto's (None here).
        """
        if not _one_job(params):
            return None
        with self.lock:
            group = _backend(region).groups.get(GROUP)
            if group is None:
                return None  # moto's ResourceNotFoundException
            prefix = params["logStreamNamePrefix"]
            streams, token = group.describe_log_streams(
                False, GROUP, prefix, "LogStreamName", JOB_STREAMS
            )
        answer: dict[str, Any] = {"logStreams": streams}
        if token:
            answer["nextToken"] = token
        return json.dumps(answer).encode()


def _one_job(params: dict[str, Any]) -> bool:
    """A valid first request, in name order, for the streams of one job (``JOB/``)."""
    prefix, limit = params.get("logStreamNamePrefix"), params.get("limit", 50)
    return (
        params.get("logGroupName") == GROUP
        and "nextToken" not in params
        and "logGroupIdentifier" not in params
        and isinstance(prefix, str)
        and prefix.endswith("/")
        and prefix.count("/") == 1
        and params.get("orderBy", "LogStreamName") == "LogStreamName"
        and params.get("descending", False) is False
        and isinstance(limit, int)
        and 1 <= limit <= 50
    )
