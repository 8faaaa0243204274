"""Training metrics, as SageMaker makes them: ``AlgorithmSpecification.MetricDefinitions``
applied to a job's log lines as they arrive.

Each definition's regex is searched for in every line; its first group (the
whole match when it has none) is the value, kept when it reads as a finite
number. A job's points go to a series file, one JSON object a line (metric,
value, epoch seconds, host), at most :data:`MAX_POINTS` a job; each metric's
last value is ``FinalMetricDataList`` (SageMaker's shape: name, value,
timestamp). serve (``smmpi serve``), local jobs (``submit --local``) and
``smmpi run`` all use this one implementation.
"""

from __future__ import annotations

import io
import json
import math
import os
import re
import stat
import threading
import time
from collections.abc import Iterable, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import IO, Any, cast

from smmpi.spec.metrics import regex_problem

MAX_POINTS = 100_000  # points kept in one job's series file; the last values are kept beyond it
MAX_FILE = 64 << 20  # the most bytes of a job's series read back
_MAX_REST = 1 << 20  # characters of an unfinished line kept
SERIES = "metrics.jsonl"  # a local job's series file, in its folder

Found = list[tuple[str, float]]  # (metric, value)
Series = dict[str, list[tuple[float, float]]]  # metric -> [(epoch seconds, value)]


def definitions(request: Any) -> list[dict[str, Any]]:
    """The request's MetricDefinitions (an empty list when it has none)."""
    spec = request.get("AlgorithmSpecification") if isinstance(request, dict) else None
    found = spec.get("MetricDefinitions") if isinstance(spec, dict) else None
    return [d for d in found if isinstance(d, dict)] if isinstance(found, list) else []


def first_bad_regex(request: Any) -> tuple[int, str, str] | None:
    """The first definition whose Regex does not compile: (its 1-based index, name, why)."""
    for i, definition in enumerate(definitions(request), start=1):
        problem = regex_problem(str(definition.get("Regex", "")))
        if problem is not None:
            return i, str(definition.get("Name")), problem
    return None


def _value(match: re.Match[str]) -> float | None:
    text = match.group(1) if match.re.groups else match.group(0)
    try:
        value = float(text)
    except (TypeError, ValueError):
        return None
    return value if math.isfinite(value) else None


class Matcher:
    """A job's compiled definitions."""

    def __init__(self, chosen: Sequence[dict[str, Any]]) -> None:
        self.patterns = [(str(d["Name"]), re.compile(str(d["Regex"]))) for d in chosen]

    def match(self, lines: Iterable[str]) -> Found:
        """Every (metric, value) the lines give, in order."""
        found: Found = []
        for line in lines:
            for metric, pattern in self.patterns:
                match = pattern.search(line)
                value = _value(match) if match else None
                if value is not None:
                    found.append((metric, value))
        return found


class SeriesFile:
    """A job's series file, appended to (0600, never through a link), up to MAX_POINTS."""

    def __init__(self, path: Path) -> None:
        self.path, self.points = path, 0

    def append(self, host: str, found: Found, when: float) -> None:
        room = MAX_POINTS - self.points
        if room <= 0 or not found:
            return
        found = found[:room]
        self.points += len(found)
        flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC
        with os.fdopen(os.open(self.path, flags, 0o600), "a", encoding="utf-8") as f:
            f.writelines(
                json.dumps({"m": m, "v": v, "t": when, "h": host}) + "\n" for m, v in found
            )


def read_series(path: Path, host: str | None = None) -> Series:
    """Every metric's points (epoch seconds, value) from a series file (a regular file, its
    first MAX_FILE bytes); with ``host``, only that host's. None there, or a link: none."""
    found: Series = {}
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return found
    with os.fdopen(fd, "r", encoding="utf-8", errors="replace") as f:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return found
        for line in f.read(MAX_FILE).splitlines():
            try:
                point = json.loads(line)
                if host is not None and point.get("h") != host:
                    continue
                found.setdefault(str(point["m"]), []).append((float(point["t"]), float(point["v"])))
            except (ValueError, KeyError, TypeError, AttributeError):
                continue  # a line cut short when its writer stopped
    return found


def final_list(last: dict[str, tuple[float, float]]) -> list[dict[str, Any]]:
    """``FinalMetricDataList`` from each metric's (value, epoch seconds)."""
    return [
        {"MetricName": metric, "Value": value, "Timestamp": when}
        for metric, (value, when) in last.items()
    ]


def last_of(series: Series) -> dict[str, tuple[float, float]]:
    """Each metric's last (value, epoch seconds) in ``series``."""
    return {m: (points[-1][1], points[-1][0]) for m, points in series.items() if points}


def final_line(final: Sequence[dict[str, Any]]) -> str:
    """``name value, name value`` (what ``smmpi status`` and a run's last lines show)."""
    return ", ".join(f"{m['MetricName']} {float(m['Value']):g}" for m in final)


def iso(when: float) -> str:
    return datetime.fromtimestamp(when, timezone.utc).isoformat(timespec="milliseconds")


class RunMetrics:
    """A local run's metrics: the ranks' echoed lines (as the job's log has them, tags and
    all) matched as they are written; points to ``series`` (None: last values only)."""

    def __init__(
        self, chosen: Sequence[dict[str, Any]], series: Path | None, host: str = "algo-1"
    ) -> None:
        self.matcher = Matcher(chosen)
        self.file = SeriesFile(series) if series is not None else None
        self.host = host  # mpirun's own instance: its log has every rank's lines, as SageMaker's
        self.last: dict[str, tuple[float, float]] = {}
        self.lock = threading.Lock()

    def feed(self, lines: list[str], when: float) -> None:
        found = self.matcher.match(lines)
        if not found:
            return
        with self.lock:
            for metric, value in found:
                self.last[metric] = (value, when)
            if self.file is not None:
                self.file.append(self.host, found, when)

    def final(self) -> list[dict[str, Any]]:
        with self.lock:
            return final_list(self.last)

    def stream(self, echo: IO[str]) -> IO[str]:
        """``echo``, with every whole line written to it matched too."""
        return cast("IO[str]", _Tee(echo, self)) if self.matcher.patterns else echo


class _Tee(io.TextIOBase):
    def __init__(self, echo: IO[str], metrics: RunMetrics) -> None:
        super().__init__()
        self.echo, self.metrics, self.rest = echo, metrics, ""

    def write(self, text: str) -> int:
        self.echo.write(text)
        if "\n" in text:
            *lines, self.rest = (self.rest + text).split("\n")
            self.metrics.feed(lines, time.time())
        else:
            self.rest = (self.rest + text)[-_MAX_REST:]
        return len(text)

    def flush(self) -> None:
        self.echo.flush()


def for_job(request: Any, chosen: Sequence[dict[str, Any]] | None, folder: Path) -> RunMetrics:
    """A local job's metrics: ``chosen`` definitions (None: the request's own), its series
    in the job's folder."""
    return RunMetrics(definitions(request) if chosen is None else chosen, folder / SERIES)


def record_final(record: dict[str, Any], metrics: RunMetrics) -> list[str]:
    """``FinalMetricDataList`` into a local job's record; the line its run ends with."""
    final = metrics.final()
    if not final:
        return []
    record["FinalMetricDataList"] = final
    name = record.get("TrainingJobName")
    return [f"smmpi: metrics {final_line(final)} (smmpi metrics {name})"]


def local_series(name: str) -> Series | None:
    """Local job ``name``'s series (``submit --local``; None: smmpi has no local job of that
    name). ``name`` is a checked job name."""
    from smmpi.ops.local_jobs import MARKER, jobs_root

    folder = jobs_root() / name
    marker = folder / MARKER
    if folder.is_symlink() or marker.is_symlink() or not marker.is_file():
        return None
    return read_series(folder / SERIES)
