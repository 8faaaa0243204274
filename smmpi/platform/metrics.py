"""Training metrics, as SageMaker makes them: ``AlgorithmSpecification.MetricDefinitions``
applied to a job's log lines as they arrive.

Each definition's regex is searched for in every line; its first group (the
whole match when it has none) is the value, kept when it reads as a finite
number. A job's points go to a series file (:class:`SeriesFile`), at most
:data:`MAX_POINTS` a job; each metric's
last value is ``FinalMetricDataList`` (SageMaker's shape: name, value,
timestamp). serve (``smmpi serve``), local jobs (``submit --local``) and
``smmpi run`` (:mod:`.run_metrics`) all use this one implementation.
"""

from __future__ import annotations

import collections
import contextlib
import json
import os
import re
import stat
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from smmpi.spec.metrics import regex_problem

FLUSH_DELAY = 1.0  # seconds a line may wait to be matched and written with the next ones
MAX_QUEUED = 10_000  # lines that may wait
MAX_POINTS = 100_000  # points kept in one job's series file; the last values are kept beyond it
MAX_FILE = 64 << 20  # the most bytes of a job's series read back
SERIES = "metrics.jsonl"  # a local job's series file, in its folder

Series = dict[str, list[tuple[float, float]]]  # metric -> [(epoch seconds, value)]
Last = dict[str, tuple[float, float]]  # metric -> its last (value, epoch seconds)


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


class SeriesFile:
    """A job's definitions applied to its log lines, and its series file (0600, appended to,
    never through a link; None: the last values only), up to MAX_POINTS.

    :meth:`add` only queues a line: lines are matched and their values written together, at
    most :data:`FLUSH_DELAY` seconds after they came (a timer thread), when
    :data:`MAX_QUEUED` wait, or at :meth:`flush`: one write a batch, and little work a line
    in the thread that reads the log. The file has one JSON object a line that gave values:
    ``{"t": EPOCH, "h": HOST, "m": {METRIC: VALUE, ...}}``, each value as the log wrote it
    (a JSON string) where that is printable. ``last`` is each metric's last value once
    flushed, and on disk then (what serve shows, so what a DescribeTrainingJob showed
    outlives serve killed); ``hosts`` the hosts that logged each metric. ``on_flush`` hears
    of each flush that changed ``last``.
    """

    def __init__(
        self,
        chosen: Sequence[dict[str, Any]],
        path: Path | None,
        on_flush: Callable[[], None] | None = None,
    ) -> None:
        compiled = [(str(d["Name"]), str(d["Regex"])) for d in chosen]
        # (one Python's re cannot take, as from a job SageMaker ran: not applied here)
        self.skipped = [name for name, regex in compiled if regex_problem(regex) is not None]
        patterns = [(n, re.compile(r)) for n, r in compiled if n not in self.skipped]
        self.patterns = [(name, p.search, 1 if p.groups else 0) for name, p in patterns]
        self.heads = {name: json.dumps(name) + ": " for name, _ in patterns}
        self.path, self.on_flush, self.points = path, on_flush, 0
        self.lock = threading.Lock()
        self.queue: collections.deque[tuple[str, str, float]] = collections.deque()
        self.timer: threading.Timer | None = None
        self.last: dict[str, tuple[float, float]] = {}  # metric -> (value, epoch seconds)
        self.hosts: dict[str, list[str]] = {name: [] for name in self.heads}  # who logged it
        self.quoted: dict[str, str] = {}  # host -> its JSON

    def add(self, host: str, line: str, when: float) -> None:
        """Queue ``host``'s log ``line``, logged at epoch ``when``."""
        self.queue.append((host, line, when))
        if self.timer is None or len(self.queue) >= MAX_QUEUED:
            with self.lock:
                if self.timer is None:
                    self.timer = threading.Timer(FLUSH_DELAY, self._timed)
                    self.timer.daemon = True
                    self.timer.start()
            if len(self.queue) >= MAX_QUEUED:
                self.flush()

    def _timed(self) -> None:
        """The timer's flush: a write that fails (the job's folder gone with the job, a full
        disk) loses those lines' points, not their last values, and no thread's traceback."""
        with contextlib.suppress(OSError):
            self.flush()

    def flush(self) -> None:
        """Match the queued lines and write their values now."""
        with self.lock:
            if self.timer is not None:
                self.timer.cancel()
                self.timer = None
            before = dict(self.last)
            records = self._records()
            if records and self.path is not None:
                flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC
                fd = os.open(self.path, flags, 0o600)
                try:
                    os.write(fd, "".join(records).encode())
                finally:
                    os.close(fd)
            changed = self.last != before
        if changed and self.on_flush is not None:
            self.on_flush()

    def _records(self) -> list[str]:
        """The queued lines' values: into ``last`` and ``hosts``, and as the file's lines."""
        patterns, heads, last, hosts = self.patterns, self.heads, self.last, self.hosts
        records, pop, quoted = [], self.queue.popleft, self.quoted
        for _ in range(len(self.queue)):
            host, line, when = pop()
            parts = []
            for metric, search, group in patterns:
                match = search(line)
                if match is None:
                    continue
                text = match.group(group)
                try:
                    value = float(text)
                except (TypeError, ValueError):
                    continue
                if value - value != 0:  # not finite (inf - inf and nan - nan are nan)
                    continue
                first = metric not in last
                last[metric] = (value, when)
                if first:  # the definitions' order, whichever rank's line came first
                    self._in_definition_order()
                # (float() took it: no quote or backslash; a control character: as a number)
                shown = '"' + text + '"' if text.isprintable() else repr(value)
                parts.append(heads[metric] + shown)
                if host not in hosts[metric]:
                    hosts[metric].append(host)
            if parts and self.points < MAX_POINTS:
                self.points += len(parts)
                name = quoted.get(host) or quoted.setdefault(host, json.dumps(host))
                records.append(
                    '{"t": '
                    + repr(when)
                    + ', "h": '
                    + name
                    + ', "m": {'
                    + ", ".join(parts)
                    + "}}\n"
                )
        return records

    def _in_definition_order(self) -> None:
        ordered = in_order(self.last, [m for m, _, _ in self.patterns])
        self.last.clear()
        self.last.update(ordered)


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
                when, values = float(point["t"]), point["m"]
                if not isinstance(values, dict):  # one point a line, as earlier versions wrote
                    values = {values: point["v"]}
                for metric, value in values.items():
                    found.setdefault(str(metric), []).append((when, float(value)))
            except (ValueError, KeyError, TypeError, AttributeError):
                continue  # a line cut short when its writer stopped
    return found


def final_list(last: dict[str, tuple[float, float]]) -> list[dict[str, Any]]:
    """``FinalMetricDataList`` from each metric's (value, epoch seconds)."""
    return [
        {"MetricName": metric, "Value": value, "Timestamp": when}
        for metric, (value, when) in last.items()
    ]


def in_order(last: Last, names: Sequence[str]) -> Last:
    """``last`` in the order of ``names`` (the definitions'), then any metric they lack."""
    order = [*(n for n in names if n in last), *(m for m in last if m not in names)]
    return {m: last[m] for m in order}


def last_of(series: Series) -> Last:
    """Each metric's last (value, epoch seconds) in ``series``."""
    return {m: (points[-1][1], points[-1][0]) for m, points in series.items() if points}


def final_line(final: Sequence[dict[str, Any]]) -> str:
    """``name value, name value`` (what ``smmpi status`` and a run's last lines show)."""
    return ", ".join(f"{m['MetricName']} {float(m['Value']):g}" for m in final)
