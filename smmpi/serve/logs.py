"""A job's CloudWatch log: ``/aws/sagemaker/TrainingJobs``, one stream per instance.

Streams are named as SageMaker names them, ``JOB/algo-k-<epoch>``. Events go
into moto's Logs backend as they come (so GetLogEvents sees a rank's line at
once) and are appended to ``STATE/logs/JOB/algo-k.jsonl``, from which a
restart puts them back.
"""

from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path
from typing import Any

from smmpi.serve.jobs import ACCOUNT
from smmpi.serve.state import read_json, subfolder, write_json

GROUP = "/aws/sagemaker/TrainingJobs"
_MAX_MESSAGE = 256 * 1024 - 26  # CloudWatch's limit for one event


def _backend(region: str) -> Any:
    from moto.logs.models import logs_backends

    return logs_backends[ACCOUNT][region]


def _ensure(region: str, stream: str) -> None:
    backend = _backend(region)
    if GROUP not in backend.groups:
        backend.create_log_group(GROUP, {})
    if stream not in backend.groups[GROUP].streams:
        backend.create_log_stream(GROUP, stream)


def _put(region: str, stream: str, events: list[dict[str, Any]]) -> None:
    for start in range(0, len(events), 5000):  # PutLogEvents takes 10,000 at most
        _backend(region).put_log_events(GROUP, stream, events[start : start + 5000])


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
                _ensure(region, stream)
        return streams

    def append(self, name: str, region: str, host: str, stream: str, lines: list[str]) -> None:
        """Append ``lines`` to ``stream`` now (one event each)."""
        if not lines:
            return
        now = int(time.time() * 1000)
        events = [{"timestamp": now, "message": line[:_MAX_MESSAGE]} for line in lines]
        with self.lock:
            _ensure(region, stream)
            _put(region, stream, events)
            path = subfolder(self.folder, name) / f"{host}.jsonl"
            fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW, 0o600)
            with os.fdopen(fd, "a", encoding="utf-8", errors="surrogateescape") as f:
                for event in events:
                    f.write(json.dumps([event["timestamp"], event["message"]]) + "\n")

    def restore(self) -> None:
        """Put every kept job's streams and events back into moto's Logs backend."""
        oldest = int((time.time() - 13 * 86400) * 1000)  # CloudWatch refuses older events
        for folder in sorted(p for p in self.folder.iterdir() if p.is_dir()):
            index = folder / "streams.json"
            if not index.is_file():
                continue
            data = read_json(index)
            for host, stream in data["streams"].items():
                _ensure(data["region"], stream)
                path = folder / f"{host}.jsonl"
                if not path.is_file():
                    continue
                events = []
                with open(path, encoding="utf-8", errors="surrogateescape") as f:
                    for line in f:
                        stamp, message = json.loads(line)
                        if stamp >= oldest:
                            events.append({"timestamp": stamp, "message": message})
                _put(data["region"], stream, events)
