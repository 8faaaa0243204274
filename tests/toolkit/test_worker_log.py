"""The lines a worker instance's own log stream holds: the toolkit's ``WorkerRunner``'s."""

from __future__ import annotations

import logging
import re
import time
from datetime import datetime, timezone

from smmpi.toolkit import worker_log

FORMAT = "%(asctime)s %(name)-12s %(levelname)-8s %(message)s"  # the toolkit's logging format
LINE = re.compile(r"(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d),(\d{3}) sagemaker-training-toolkit INFO {5}")


def _logged(message: str, when: float) -> str:
    """``message`` as Python's logging prints it in the toolkit's format, in UTC."""
    formatter = logging.Formatter(FORMAT)
    formatter.converter = time.gmtime
    record = logging.LogRecord(worker_log.LOGGER, logging.INFO, __file__, 1, message, None, None)
    record.created, record.msecs = when, (when - int(when)) * 1000
    return formatter.format(record)


def test_a_line_is_what_the_toolkits_logger_prints() -> None:
    for when in (0.0, 1_700_000_000.25, 1_234_567_890.5, 1_767_225_599.875, 1_700_000_935.166):
        assert worker_log.line("Orted process exited", when) == _logged(
            "Orted process exited", when
        )
    assert worker_log.line("x", 1_700_000_000.25) == (
        "2023-11-14 22:13:20,250 sagemaker-training-toolkit INFO     x"
    )


def test_a_line_without_a_time_is_stamped_now_in_utc() -> None:
    before = time.time()
    text = worker_log.line("now")
    after = time.time()
    m = LINE.match(text)
    assert m is not None, text
    stamp = datetime.strptime(m[1], "%Y-%m-%d %H:%M:%S").replace(tzinfo=timezone.utc)
    moment = stamp.timestamp() + int(m[2]) / 1000
    assert before - 0.001 <= moment <= after
    assert text.endswith(" now")


def _messages(lines: list[str]) -> list[str]:
    out = []
    for text in lines:
        m = LINE.match(text)
        assert m is not None, text
        out.append(text[m.end() :])
    return out


def test_a_worker_starts_by_waiting_for_algo_1_then_for_orted() -> None:
    assert _messages(worker_log.starting()) == [
        "Starting MPI run as worker node.",
        "Waiting for MPI Master to create SSH daemon.",
        "MPI Master online, creating SSH daemon.",
        "Writing environment variables to /etc/environment for the MPI process.",
        "Waiting for MPI process to finish.",
    ]


def test_a_worker_reports_success_only_when_algo_1s_status_file_came() -> None:
    assert _messages(worker_log.ending("algo-2", True)) == [
        "Orted process exited",
        "Begin looking for status file on algo-2",
        "MPI training job status file found. Exit gracefully",
        "End looking for status file",
        "MPI process finished.",
        "Reporting training SUCCESS",
    ]
    assert _messages(worker_log.ending("algo-3", False)) == [
        "Orted process exited",
        "Begin looking for status file on algo-3",
        "Status file not found. Exiting...",
        "End looking for status file",
        "MPI process finished.",
    ]
