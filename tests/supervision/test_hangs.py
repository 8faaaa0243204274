"""A timed-out run's known hangs, named from the source line each rank's stack dump points at."""

from __future__ import annotations

import os
from pathlib import Path

from smmpi.mpi_output import HANG_PITFALLS
from smmpi.supervision.hangs import hang_pitfall, innermost, source_line
from smmpi.supervision.result import Run
from smmpi.toolkit.hosts import host_dirs
from smmpi.toolkit.shape import JobShape

TRAIN = (
    "from mpi4py import MPI\n"
    "comm = MPI.COMM_WORLD\n"
    "fh = MPI.File.Open(comm, '/tmp/out.bin', MPI.MODE_CREATE | MPI.MODE_WRONLY)\n"
    "comm.Barrier()\n"
)


def _stack(path: str, line: int) -> str:
    return (
        "Current thread 0x00007f (most recent call first):\n"
        f'  File "{path}", line {line} in <module>\n'
        '  File "<frozen runpy>", line 88 in _run_code\n'
    )


def _run(tmp_path: Path, mode: str, instances: int = 2, ppn: int = 2) -> Run:
    """A run of ``train.py`` laid out on each emulated host, as its ranks saw it."""
    shape = JobShape("job", "train.py", instances, ppn)
    for host in shape.hosts:
        code = host_dirs(tmp_path, host).code
        code.mkdir(parents=True)
        (code / "train.py").write_text(TRAIN, encoding="utf-8")
    return Run(shape, mode, tmp_path / "stacks", tmp_path, 0.0, None, oom_kills=None)


def test_the_innermost_frame_is_the_first_of_a_dump() -> None:
    assert innermost(_stack("train.py", 3)) == ("train.py", 3)
    assert innermost("Stack (most recent call first):\n  <no Python frame>\n") is None


def test_a_frames_line_is_read_where_the_rank_saw_its_file(tmp_path: Path) -> None:
    code = host_dirs(tmp_path, "algo-1").code
    code.mkdir(parents=True)
    (code / "train.py").write_text("a = 1\nb = 2\n", encoding="utf-8")
    (code.parent / "input").mkdir()
    (code.parent / "input" / "config.py").write_text("c = 3\n", encoding="utf-8")
    elsewhere = tmp_path / "lib.py"
    elsewhere.write_text("d = 4\n", encoding="utf-8")
    assert source_line("train.py", 2, code) == "b = 2"  # relative: under the code dir
    assert source_line("/opt/ml/input/config.py", 1, code) == "c = 3"  # the instance's tree
    assert source_line(str(elsewhere), 1, code) == "d = 4"  # this machine's own file


def test_a_line_that_cannot_be_read_is_empty(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text("a = 1\n", encoding="utf-8")
    os.mkfifo(tmp_path / "fifo.py")  # not read (it would wait for a writer)
    assert source_line("train.py", 2, tmp_path) == ""
    assert source_line("train.py", 0, tmp_path) == ""
    assert source_line("gone.py", 1, tmp_path) == ""
    assert source_line("fifo.py", 1, tmp_path) == ""


def test_ranks_of_several_instances_in_mpi_io_on_their_own_tmp_are_named(tmp_path: Path) -> None:
    run = _run(tmp_path, "hosts")
    stacks = {0: _stack("train.py", 3), 1: _stack("train.py", 4), 2: _stack("train.py", 3)}
    note = hang_pitfall(stacks, run)
    assert note == (
        "ranks 0 (algo-1), 2 (algo-2) were in "
        "`fh = MPI.File.Open(comm, '/tmp/out.bin', MPI.MODE_CREATE | MPI.MODE_WRONLY)`: "
        f"{HANG_PITFALLS[0].note}"
    )


def test_no_hang_is_named_on_one_instance_or_where_instances_share_folders(
    tmp_path: Path,
) -> None:
    run = _run(tmp_path, "hosts")
    one_host = {0: _stack("train.py", 3), 1: _stack("train.py", 3), 2: _stack("train.py", 4)}
    assert hang_pitfall(one_host, run) is None
    assert hang_pitfall({0: "", 2: "Stack (most recent call first):\n"}, run) is None
    both = {0: _stack("train.py", 3), 2: _stack("train.py", 3)}
    shared = Run(run.shape, "processes", run.record_dir, run.run_dir, 0.0, None, oom_kills=None)
    assert hang_pitfall(both, shared) is None  # processes mode: one /tmp for every instance
    assert hang_pitfall(both, run) is not None
