"""A local run's training metrics (``smmpi run``, ``submit --local``): the ranks' lines, as
the job's log has them (tags and all), matched as they are echoed.

A local job keeps its series in its folder (``metrics.jsonl``) and its
``FinalMetricDataList`` in its record; ``smmpi run`` keeps only the last values,
which its last line shows. SageMaker's Host is the instance whose log has the
line: mpirun's, algo-1, for every rank's output.
"""

from __future__ import annotations

import io
import time
from pathlib import Path
from typing import IO, Any, cast

from smmpi.platform.metrics import (
    SERIES,
    Series,
    SeriesFile,
    definitions,
    final_list,
    read_series,
)
from smmpi.platform.metrics import final_line as final_line

_MAX_REST = 1 << 20  # characters of an unfinished line kept
HOST = "algo-1"


class RunMetrics:
    """A run's definitions matched against its output; points to ``series`` (None: the
    last values only)."""

    def __init__(self, chosen: list[dict[str, Any]] | tuple[Any, ...], series: Path | None):
        self.file = SeriesFile(chosen, series)

    def feed(self, lines: list[str], when: float) -> None:
        for line in lines:
            self.file.add(HOST, line, when)

    def final(self) -> list[dict[str, Any]]:
        """``FinalMetricDataList``; the series is on disk once this returns."""
        self.file.flush()
        return final_list(dict(self.file.last))

    def stream(self, echo: IO[str]) -> IO[str]:
        """``echo``, with every whole line written to it matched too."""
        return cast("IO[str]", _Tee(echo, self)) if self.file.patterns else echo


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


def for_job(request: Any, chosen: tuple[Any, ...] | None, folder: Path) -> RunMetrics:
    """A local job's metrics: ``chosen`` definitions (None: the request's own), its series
    in the job's folder."""
    return RunMetrics(definitions(request) if chosen is None else chosen, folder / SERIES)


def record_final(record: dict[str, Any], metrics: RunMetrics) -> list[str]:
    """``FinalMetricDataList`` into a local job's record; the line its run ends with."""
    final = metrics.final()
    lines = [
        f"smmpi: metric {name!r} was not applied here: its Regex is not one Python's re takes"
        for name in metrics.file.skipped
    ]
    if not final:
        return lines
    record["FinalMetricDataList"] = final
    name = record.get("TrainingJobName")
    return [*lines, f"smmpi: metrics {final_line(final)} (smmpi metrics {name})"]


def local_series(name: str) -> Series | None:
    """Local job ``name``'s series (``submit --local``; None: smmpi has no local job of that
    name). ``name`` is a checked job name."""
    from smmpi.ops.local_jobs import MARKER, jobs_root

    folder = jobs_root() / name
    marker = folder / MARKER
    if folder.is_symlink() or marker.is_symlink() or not marker.is_file():
        return None
    return read_series(folder / SERIES)
