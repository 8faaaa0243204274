"""Training metrics in serve: :mod:`smmpi.platform.metrics` applied to each job's log lines.

Each point is appended to ``STATE/metrics/JOB.jsonl`` (at most ``MAX_POINTS`` a
job, written in batches at most a second apart), so the series
survives a restart; memory keeps only each running job's last value of each
metric on disk, which DescribeTrainingJob shows as ``FinalMetricDataList``.
``STATE/metrics/JOB.json`` names the job's region and each metric's hosts,
which CloudWatch's ListMetrics reads (:mod:`.cloudwatch`).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from smmpi.platform.metrics import (
    MAX_POINTS,
    Series,
    SeriesFile,
    definitions,
    final_list,
    first_bad_regex,
    in_order,
    last_of,
    read_series,
)
from smmpi.serve.errors import validation
from smmpi.serve.state import read_json, subfolder, write_json

__all__ = ["MAX_POINTS", "JobMetrics", "check", "definitions"]


def check(request: dict[str, Any]) -> None:
    """A ValidationException naming the first definition whose Regex does not compile."""
    bad = first_bad_regex(request)
    if bad is not None:
        i, name, problem = bad
        raise validation(
            f"AlgorithmSpecification.MetricDefinitions.{i} ({name!r}):"
            f" its Regex is not a valid regular expression ({problem})"
        )


class _Job:
    """One running job's series' file (its definitions applied to its lines) and region."""

    def __init__(
        self, request: dict[str, Any], path: Path, region: str, shown: Callable[[], None]
    ) -> None:
        self.file, self.region = SeriesFile(definitions(request), path, shown), region
        self.index = path.with_suffix(".json")


class JobMetrics:
    """Every job's metrics: the running jobs' in memory, every job's series on disk.

    ``shown(name, final)`` hears a running job's ``FinalMetricDataList`` each time more of
    its series is on disk (serve shows it in DescribeTrainingJob at once).
    """

    def __init__(
        self, root: Path, shown: Callable[[str, list[dict[str, Any]]], None] | None = None
    ) -> None:
        self.folder = subfolder(root, "metrics")
        self.lock = threading.Lock()
        self.jobs: dict[str, _Job] = {}
        self.shown = shown

    def open(self, name: str, request: dict[str, Any], region: str) -> None:
        """Start matching ``name``'s log lines (nothing to do when it defines no metric)."""
        if definitions(request):
            path = self.folder / f"{name}.jsonl"
            job = _Job(request, path, region, lambda: self._show(name))
            with self.lock:
                self.jobs[name] = job

    def _show(self, name: str) -> None:
        """A flush of ``name``'s series: its index (each metric's hosts), and its values."""
        job = self.jobs.get(name)
        if job is None:
            return
        with job.file.lock:
            hosts = {metric: list(found) for metric, found in job.file.hosts.items() if found}
            last = dict(job.file.last)
        with self.lock:
            index = {"region": job.region, "hosts": hosts}
            if index != self.index(name):
                write_json(job.index, index)
        if self.shown is not None:
            self.shown(name, final_list(last))

    def feed(self, name: str, host: str, line: str, when: float) -> None:
        """One line of ``host``'s log (logged at epoch ``when``), matched with the next ones."""
        job = self.jobs.get(name)
        if job is not None:
            job.file.add(host, line, when)

    def final(self, name: str) -> list[dict[str, Any]] | None:
        """``FinalMetricDataList`` (None when no metric has a value): a running job's once its
        series is on disk, another's from its series on disk (a job serve was running when it
        stopped)."""
        with self.lock:
            job = self.jobs.get(name)
        if job is not None:
            job.file.flush()
            last = dict(job.file.last)
        else:  # in the definitions' order, which the index's metrics keep
            hosts = (self.index(name) or {}).get("hosts")
            names = list(hosts) if isinstance(hosts, dict) else []
            last = in_order(last_of(self.series(name)), names)
        return final_list(last) if last else None

    def close(self, name: str) -> None:
        with self.lock:
            job = self.jobs.pop(name, None)
        if job is not None:
            job.file.flush()

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

    def series(self, name: str, host: str | None = None) -> Series:
        """Every metric's points of job ``name`` (timestamp, value), from its file; with
        ``host``, only that host's."""
        return read_series(self.folder / f"{name}.jsonl", host)
