"""Training metrics, as SageMaker makes them: ``AlgorithmSpecification.MetricDefinitions``
applied to the job's log lines as they arrive.

Each definition's regex is searched for in every line; its first group (the
whole match when it has none) is the value, kept when it reads as a finite
number. Each point is appended to ``STATE/metrics/JOB.jsonl`` (at most
``MAX_POINTS`` a job), so the series survives a restart; memory keeps only
each running job's last value of each metric, which DescribeTrainingJob shows
as ``FinalMetricDataList`` (SageMaker's shape: name, value, timestamp).
``STATE/metrics/JOB.json`` names the job's region and each metric's hosts,
which CloudWatch's ListMetrics reads (:mod:`.cloudwatch`).
"""

from __future__ import annotations

import json
import math
import os
import re
import stat
import threading
from pathlib import Path
from typing import Any

from smmpi.serve.errors import validation
from smmpi.serve.state import read_json, subfolder, write_json

MAX_POINTS = 100_000  # points kept on disk for one job; the last values are kept beyond it
_MAX_FILE = 64 << 20  # the most bytes of a job's series read back


def definitions(request: dict[str, Any]) -> list[dict[str, Any]]:
    """The request's MetricDefinitions (an empty list when it has none)."""
    spec = request.get("AlgorithmSpecification")
    found = spec.get("MetricDefinitions") if isinstance(spec, dict) else None
    return [d for d in found if isinstance(d, dict)] if isinstance(found, list) else []


def check(request: dict[str, Any]) -> None:
    """A ValidationException naming the first definition whose Regex does not compile."""
    for i, definition in enumerate(definitions(request), start=1):
        try:
            re.compile(str(definition.get("Regex", "")))
        except (re.error, RecursionError, OverflowError) as err:
            raise validation(
                f"AlgorithmSpecification.MetricDefinitions.{i} ({str(definition.get('Name'))!r}):"
                f" its Regex is not a valid regular expression ({err})"
            ) from None


def _value(match: re.Match[str]) -> float | None:
    text = match.group(1) if match.re.groups else match.group(0)
    try:
        value = float(text)
    except (TypeError, ValueError):
        return None
    return value if math.isfinite(value) else None


class _Job:
    """One running job's compiled definitions, its last values and its series' file."""

    def __init__(self, request: dict[str, Any], path: Path, region: str) -> None:
        self.patterns = [
            (str(d["Name"]), re.compile(str(d["Regex"]))) for d in definitions(request)
        ]
        self.path, self.region = path, region
        self.last: dict[str, tuple[float, float]] = {}  # name -> (value, timestamp)
        self.hosts: dict[str, list[str]] = {}  # name -> the hosts that logged it
        self.points = 0


class JobMetrics:
    """Every job's metrics: the running jobs' in memory, every job's series on disk."""

    def __init__(self, root: Path) -> None:
        self.folder = subfolder(root, "metrics")
        self.lock = threading.Lock()
        self.jobs: dict[str, _Job] = {}

    def open(self, name: str, request: dict[str, Any], region: str) -> None:
        """Start matching ``name``'s log lines (nothing to do when it defines no metric)."""
        if definitions(request):
            with self.lock:
                self.jobs[name] = _Job(request, self.folder / f"{name}.jsonl", region)

    def feed(self, name: str, host: str, lines: list[str], when: float) -> bool:
        """Match ``host``'s ``lines`` (logged at epoch ``when``); True when a metric got a
        new value."""
        job = self.jobs.get(name)
        if job is None:
            return False
        found: list[tuple[str, float]] = []
        for line in lines:
            for metric, pattern in job.patterns:
                match = pattern.search(line)
                value = _value(match) if match else None
                if value is not None:
                    found.append((metric, value))
        if not found:
            return False
        with self.lock:
            for metric, value in found:
                job.last[metric] = (value, when)
                if host not in job.hosts.setdefault(metric, []):
                    job.hosts[metric].append(host)
                    index = {"region": job.region, "hosts": job.hosts}
                    write_json(job.path.with_suffix(".json"), index)
            self._write(job, host, found, when)
        return True

    def _write(self, job: _Job, host: str, found: list[tuple[str, float]], when: float) -> None:
        room = MAX_POINTS - job.points
        if room <= 0:
            return
        found = found[:room]
        job.points += len(found)
        flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW
        with os.fdopen(os.open(job.path, flags, 0o600), "a", encoding="utf-8") as f:
            f.writelines(
                json.dumps({"m": m, "v": v, "t": when, "h": host}) + "\n" for m, v in found
            )

    def final(self, name: str) -> list[dict[str, Any]] | None:
        """``FinalMetricDataList`` (None when no metric has a value): a running job's from
        memory, another's from its series on disk (a job serve was running when it stopped)."""
        with self.lock:
            job = self.jobs.get(name)
            last = dict(job.last) if job else None
        if last is None:
            last = {m: (p[-1][1], p[-1][0]) for m, p in self.series(name).items()}
        return _final(last) if last else None

    def close(self, name: str) -> None:
        with self.lock:
            self.jobs.pop(name, None)

    def index(self, name: str) -> dict[str, Any] | None:
        """The job's region and each metric's hosts (None when no metric has a value)."""
        try:
            found: dict[str, Any] = read_json(self.folder / f"{name}.json")
        except (OSError, ValueError):
            return None
        return found if isinstance(found, dict) else None

    def indexed(self) -> list[str]:
        """The jobs whose metrics have values, by name."""
        return sorted(p.stem for p in self.folder.glob("*.json"))

    def series(self, name: str, host: str | None = None) -> dict[str, list[tuple[float, float]]]:
        """Every metric's points of job ``name`` (timestamp, value), from its file; with
        ``host``, only that host's."""
        path = self.folder / f"{name}.jsonl"
        found: dict[str, list[tuple[float, float]]] = {}
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        except OSError:  # none yet, or a link: no series
            return found
        with os.fdopen(fd, "r", encoding="utf-8", errors="replace") as f:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                return found
            for line in f.read(_MAX_FILE).splitlines():
                try:
                    point = json.loads(line)
                    if host is not None and point.get("h") != host:
                        continue
                    found.setdefault(str(point["m"]), []).append(
                        (float(point["t"]), float(point["v"]))
                    )
                except (ValueError, KeyError, TypeError):
                    continue  # a line cut short when serve stopped
        return found


def _final(last: dict[str, tuple[float, float]]) -> list[dict[str, Any]]:
    return [
        {"MetricName": metric, "Value": value, "Timestamp": when}
        for metric, (value, when) in last.items()
    ]
