"""A SLURM job's failed rank, named from its records and srun's lines in the table's words."""

from __future__ import annotations

import json
import signal
from pathlib import Path

from smmpi.causes import say
from smmpi.runners.slurm.operate import JobState
from smmpi.runners.slurm.verdict import failure_line, task_ends


def _job(folder: Path, output: str, state: str = "FAILED") -> JobState:
    (folder / "records").mkdir()
    (folder / "slurm-42.out").write_text(output, encoding="utf-8")
    return JobState("42", "job", state, "1:0", "node[1-3]", str(folder))


def test_srun_lines_give_each_tasks_end_and_node() -> None:
    ends, nodes = task_ends(
        "srun: error: node2: tasks 2-3: Exited with exit code 1\n"
        "srun: error: node1: task 0: Segmentation fault (core dumped)\n"
        "srun: error: node3: task 5: Out Of Memory\n"
        "srun: error: node3: task 4: Killed\n"
    )
    assert ends[2].cause == "exit code 1" and nodes[3] == "node2"
    assert ends[0].cause == "killed by signal 11 (SIGSEGV)"
    assert ends[5].signal == signal.SIGKILL and f"failed: {ends[5].cause}" == say("oom-kill")
    assert f"failed: {ends[4].cause}" == say("sigkill")


def test_a_tasks_out_of_memory_is_named_for_certain(tmp_path: Path) -> None:
    st = _job(tmp_path, "srun: error: node3: task 5: Out Of Memory\n", "OUT_OF_MEMORY")
    assert failure_line(st) == f"rank 5 (node3) {say('oom-kill')}"


def test_a_known_pitfall_in_the_output_is_named_as_local_runs_name_it(tmp_path: Path) -> None:
    output = (
        "3: AttributeError: module 'numpy' has no attribute 'float'.\n"
        "srun: error: node2: task 3: Exited with exit code 1\n"
    )
    st = _job(tmp_path, output)
    row = {"text": "AttributeError: module 'numpy' has no attribute 'float'.", "time": 100.0}
    (tmp_path / "records" / "rank-3.exc").write_text(json.dumps(row), encoding="utf-8")
    line = failure_line(st) or ""
    assert line.startswith(
        "rank 3 (node2) failed: AttributeError: module 'numpy' has no attribute 'float'. "
        "(np.float was removed in NumPy 1.24"
    ), line
