"""The failed rank of a SLURM job, named from srun's lines and the ranks' own records."""

from __future__ import annotations

import signal
from pathlib import Path

from smmpi.runners.slurm.operate import JobState
from smmpi.runners.slurm.verdict import failure_line, task_ends

SRUN = """\
[2]: Traceback (most recent call last):
srun: error: node2: task 3: Exited with exit code 1
srun: error: node1: tasks 0-1,4: Killed
srun: error: node3: task 5: Segmentation fault (core dumped)
srun: error: node3: task 6: Something srun never says
"""


def _state(work: Path, state: str = "FAILED") -> JobState:
    return JobState("42", "job", state, "1:0", "node[1-3]", str(work))


def test_srun_names_each_failed_task_and_its_node() -> None:
    ends, nodes = task_ends(SRUN)
    assert sorted(ends) == [0, 1, 3, 4, 5]
    assert (ends[3].code, ends[3].signal) == (1, None)
    assert ends[0].signal == int(signal.SIGKILL) and ends[5].signal == int(signal.SIGSEGV)
    assert nodes == {3: "node2", 0: "node1", 1: "node1", 4: "node1", 5: "node3"}


def test_the_first_failure_is_named_by_rank_and_node(tmp_path: Path) -> None:
    (tmp_path / "slurm-42.out").write_text("srun: error: node2: task 3: Exited with exit code 1\n")
    (tmp_path / "records").mkdir()
    line = failure_line(_state(tmp_path))
    assert line is not None and line.startswith("rank 3 (node2) ")


def test_a_job_stopped_from_outside_blames_no_rank(tmp_path: Path) -> None:
    (tmp_path / "slurm-42.out").write_text(SRUN)
    for state in ("CANCELLED", "TIMEOUT", "COMPLETED"):
        assert failure_line(_state(tmp_path, state)) is None
    assert failure_line(JobState("42", "job", "FAILED", "1:0", "", "")) is None
    # no record, no srun line: nothing to name
    (tmp_path / "slurm-42.out").write_text("")
    assert failure_line(_state(tmp_path)) is None
