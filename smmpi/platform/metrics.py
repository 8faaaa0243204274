"""Training metrics, as SageMaker makes them: ``AlgorithmSpecification.MetricDefinitions``
applied to a job's log lines as they arrive.

Each definition's regex is searched for in every line; its first group (the
whole match when it has none) is the value, kept when it reads as a finite
number. A job's points go to a series file, one JSON object a line (metric,
value, epoch seconds, host), at most :data:`MAX_POINTS` a job; each metric's
last value is ``FinalMetricDataList`` (SageMaker's shape: name, value,
timestamp). serve (``smmpi serve``), local jobs (``submit --local``) and
``smmpi run`` (:mod:`.run_metrics`) all use this one implementation.
"""

from __future__ import annotations

import json
import os
import re
import stat
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from smmpi.spec.metrics import regex_problem

FLUSH_DELAY = 0.25  # seconds a point may wait to be written with the next ones
MAX_POINTS = 100_000  # points kept in one job's series file; the last values are kept beyond it
MAX_FILE = 64 << 20  # the most bytes of a job's series read back
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


class Matcher:
    """A job's compiled definitions."""

    def __init__(self, chosen: Sequence[dict[str, Any]]) -> None:
        compiled = [(str(d["Name"]), re.compile(str(d["Regex"]))) for d in chosen]
        self.patterns = [(name, p.search, p.groups > 0) for name, p in compiled]

    def match(self, line: str) -> Found:
        """Every (metric, value) ``line`` gives: each regex's first group (the whole match when
        it has none), where it reads as a finite number."""
        found: Found = []
        for metric, search, grouped in self.patterns:
            match = search(line)
            if match is None:
                continue
            try:
                value = float(match.group(1) if grouped else match.group(0))
            except (TypeError, ValueError):
                continue
            if value - value == 0:  # finite (inf - inf and nan - nan are nan)
                found.append((metric, value))
        return found


class SeriesFile:
    """A job's series file (0600, appended to, never through a link), up to MAX_POINTS.

    Points are written together, at most :data:`FLUSH_DELAY` seconds after they came (a
    timer thread), or at :meth:`flush`: one write a batch, not one a line. ``last`` is each
    metric's last value; ``written`` its last value on disk (what serve shows, so what a
    DescribeTrainingJob showed outlives serve killed). ``on_flush`` hears of each write.
    """

    def __init__(self, path: Path, on_flush: Callable[[], None] | None = None) -> None:
        self.path, self.on_flush, self.points = path, on_flush, 0
        self.lock = threading.Lock()
        self.pending: list[str] = []
        self.timer: threading.Timer | None = None
        self.last: dict[str, tuple[float, float]] = {}  # metric -> (value, epoch seconds)
        self.written: dict[str, tuple[float, float]] = {}
        self.heads: dict[str, str] = {}

    def add(self, host: str, found: Found, when: float) -> None:
        tail = f', "t": {when!r}, "h": {json.dumps(host)}}}\n'
        with self.lock:
            for metric, value in found:
                self.last[metric] = (value, when)
            room = MAX_POINTS - self.points
            if room <= 0:
                return
            found = found[:room]
            self.points += len(found)
            for metric, value in found:
                head = self.heads.get(metric)
                if head is None:
                    head = self.heads[metric] = f'{{"m": {json.dumps(metric)}, "v": '
                self.pending.append(head + repr(value) + tail)
            if self.timer is None:
                self.timer = threading.Timer(FLUSH_DELAY, self.flush)
                self.timer.daemon = True
                self.timer.start()

    def flush(self) -> None:
        """Write what is pending now."""
        with self.lock:
            if self.timer is not None:
                self.timer.cancel()
                self.timer = None
            data, self.pending = "".join(self.pending), []
            if data:
                flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC
                fd = os.open(self.path, flags, 0o600)
                try:
                    os.write(fd, data.encode())
                finally:
                    os.close(fd)
            changed = self.written != self.last
            self.written = dict(self.last)
        if changed and self.on_flush is not None:
            self.on_flush()


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
