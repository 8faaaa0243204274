"""The files that tell a followed SLURM job has moved on: the jobcomp file, the job's output."""

from __future__ import annotations

import threading
import time
from pathlib import Path

from smmpi.runners.slurm.signs import COMPLETING_POLL, SAFETY_POLL, Signs, interval

RECORD = "JobId=42 UserId=root(0) JobState=COMPLETED ExitCode=0:0\n"


def _append(path: Path, text: str) -> None:
    with path.open("a") as f:
        f.write(text)


def _waited(signs: Signs, change: threading.Timer) -> tuple[bool, float]:
    """Whether :meth:`Signs.wait` (for up to 120 s) saw ``change``, and how long it took."""
    start = time.monotonic()
    change.start()
    try:
        return signs.wait(120), time.monotonic() - start
    finally:
        change.join()


def test_the_jobcomp_file_tells_a_jobs_end_as_it_is_written(tmp_path: Path) -> None:
    jobcomp = tmp_path / "jobcomp.txt"
    jobcomp.write_text("JobId=41 UserId=root(0) JobState=COMPLETED\n")
    signs = Signs.of("42", str(jobcomp))
    assert signs.tells_the_end
    signs.mark()
    assert signs.wait(0.1) is False  # nothing changed: the whole wait
    seen, took = _waited(signs, threading.Timer(0.2, _append, (jobcomp, RECORD)))
    assert seen and took < 60  # at the line, not at the end of the 120 s
    signs.mark()
    assert signs.wait(0.1) is False


def test_the_jobs_output_file_tells_it_started(tmp_path: Path) -> None:
    signs = Signs.of("42", None)
    signs.watch_folder(str(tmp_path))
    signs.mark()
    output = tmp_path / "slurm-42.out"
    seen, took = _waited(signs, threading.Timer(0.2, output.write_text, ("",)))
    assert seen and took < 60


def test_without_a_jobcomp_file_slurm_is_asked_on_the_usual_schedule(tmp_path: Path) -> None:
    """A profile with no jobcomp, or one naming a file that is not there: SLURM is asked as
    often as before; with one, every 2 s as a safety net; while COMPLETING, at once."""
    for jobcomp in (None, str(tmp_path / "absent.txt")):
        signs = Signs.of("42", jobcomp)
        assert not signs.tells_the_end
        assert interval(signs, "RUNNING", 0.1) == 0.1
    (tmp_path / "jobcomp.txt").write_text("")
    signs = Signs.of("42", str(tmp_path / "jobcomp.txt"))
    assert interval(signs, "RUNNING", 0.1) == SAFETY_POLL
    assert interval(signs, "COMPLETING", 0.1) == COMPLETING_POLL
