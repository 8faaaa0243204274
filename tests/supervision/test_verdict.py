"""How a failed local run is told in one line: the rank to blame, its host and why, from the
ranks' records first and mpirun's output where they say nothing."""

from __future__ import annotations

import json
from pathlib import Path

from smmpi.causes import say
from smmpi.mpi_output import FailureScan
from smmpi.supervision.exits import Ends
from smmpi.supervision.rank_records import RankEnd
from smmpi.supervision.result import EXIT_FAILED, Run, RunResult
from smmpi.supervision.room import full_line
from smmpi.supervision.verdict import blame, crashed, failed, path_hint
from smmpi.toolkit.hosts import host_dirs
from smmpi.toolkit.shape import JobShape

SHAPE = JobShape("job", "train.py", instances=2, ppn=2)
TRACEBACK = (
    "[1,2]<stderr>:Traceback (most recent call last):\n",
    '[1,2]<stderr>:  File "train.py", line 3, in <module>\n',
    "[1,2]<stderr>:ValueError: from the output\n",
)


def _record(folder: Path, name: str, row: object) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_text(json.dumps(row), encoding="utf-8")


def _run(tmp_path: Path, code: int | None = 1, shape: JobShape = SHAPE) -> Run:
    return Run(shape, "hosts", tmp_path / "stacks", tmp_path, 0.0, code, oom_kills=None)


def _result(tmp_path: Path) -> RunResult:
    return RunResult(0, "Completed", 1.0, tmp_path, SHAPE.world_size)


def _scan(*lines: str) -> FailureScan:
    scan = FailureScan()
    for line in lines:
        scan.feed(line)
    return scan


def _blame(tmp_path: Path, scan: FailureScan | None = None, code: int | None = 1) -> RunResult:
    run = _run(tmp_path, code)
    result = _result(tmp_path)
    blame(result, Ends.read(run.record_dir), scan or FailureScan(), run)
    return result


def test_a_run_fails_on_mpiruns_code_or_a_ranks_abort_with_zero(tmp_path: Path) -> None:
    assert not failed(Ends(), 0)
    assert failed(Ends(), 1)
    assert failed(Ends(), None)  # killed by smmpi
    _record(tmp_path, "rank-1.abort", {"code": 0, "time": 1.0})
    assert failed(Ends.read(tmp_path), 0)


def test_the_rank_whose_exception_came_first_is_blamed_on_its_host(tmp_path: Path) -> None:
    stacks = tmp_path / "stacks"
    _record(stacks, "rank-3.exc", {"text": "ValueError: boom", "time": 100.0})
    _record(stacks, "rank-0.exit", {"rank": 0, "code": None, "signal": 15, "time": 101.0})
    result = _blame(tmp_path)
    assert (result.exit_code, result.status) == (EXIT_FAILED, "Failed")
    assert (result.failed_rank, result.failed_host) == (3, "algo-2")
    assert result.reason == "ValueError: boom"
    assert result.failure_line == "rank 3 (algo-2) failed: ValueError: boom"


def test_a_traceback_the_program_printed_itself_is_the_reason(tmp_path: Path) -> None:
    """A program that replaced ``sys.excepthook`` records no exception: its exit code 1 is
    explained by the traceback it printed."""
    _record(tmp_path / "stacks", "rank-2.exit", {"code": 1, "signal": None, "time": 5.0})
    result = _blame(tmp_path, _scan(*TRACEBACK))
    assert (result.failed_rank, result.phrase) == (2, "failed: ValueError: from the output")


def test_a_pitfall_seen_in_the_output_is_named_unless_the_rank_crashed(tmp_path: Path) -> None:
    pitfall = "[1,0]<stderr>:AttributeError: module 'numpy' has no attribute 'float'\n"
    _record(tmp_path / "stacks", "rank-1.status", {"code": 3, "time": 5.0})
    result = _blame(tmp_path, _scan(pitfall))
    assert result.failed_rank == 1
    assert result.phrase is not None and result.phrase.startswith("failed: exit code 3 (np.float ")

    crash = tmp_path / "crash"
    _record(crash / "stacks", "rank-1.exit", {"code": None, "signal": 11, "time": 5.0})
    result = _blame(crash, _scan(pitfall))
    assert result.phrase == "failed: killed by signal 11 (SIGSEGV)"
    assert crashed(Ends.read(crash / "stacks"), 1)
    assert not crashed(Ends(ends={1: RankEnd(1, None, 9, 5.0)}), 1)
    assert not crashed(Ends(), 1)


def test_open_mpi_out_of_room_is_told_as_the_folder_being_full(tmp_path: Path) -> None:
    line = "[algo-1:00042] PMIX ERROR: OUT-OF-RESOURCE in file /x/gds/ds12/dstore_base.c at line 1"
    _record(tmp_path / "stacks", "rank-0.exit", {"code": 1, "signal": None, "time": 5.0})
    result = _blame(tmp_path, _scan(line))
    assert result.failed_rank is None
    assert result.reason == full_line(tmp_path, SHAPE, "hosts")


def test_a_rank_that_ended_its_instances_init_is_blamed_for_it(tmp_path: Path) -> None:
    row = {"host": "algo-2", "signal": 9, "pid": 77, "rank": 2, "command": "python", "time": 3}
    _record(tmp_path / "stacks", "init-algo-2.json", row)
    result = _blame(tmp_path)
    assert (result.failed_rank, result.failed_host) == (2, "algo-2")
    assert result.phrase == say("init-ended", signal="9 (SIGKILL)", host="algo-2")

    other = tmp_path / "other"
    row = {"host": "algo-1", "signal": 15, "pid": 51, "rank": None, "command": "", "time": 3}
    _record(other / "stacks", "init-algo-1.json", row)
    result = _blame(other)
    assert result.failed_rank is None
    assert result.reason is not None
    assert result.reason.startswith("algo-1: pid 51 (ended since) ended its instance's init")


def test_a_container_that_failed_before_any_rank_is_told_from_its_failure_file(
    tmp_path: Path,
) -> None:
    failure = host_dirs(tmp_path, "algo-2").failure
    failure.parent.mkdir(parents=True)
    failure.write_text(
        'InstallRequirementsError:\n  no such package\x1b[31m\nCommand "pip install"', "utf-8"
    )
    result = _blame(tmp_path)
    assert result.failed_rank is None
    assert result.reason == (
        "algo-2's /opt/ml/output/failure: InstallRequirementsError: no such package\\x1b[31m"
    )


def test_mpirun_that_found_no_program_on_the_jobs_path_is_explained(tmp_path: Path) -> None:
    environment = {"PATH": "/opt/mine"}
    assert path_hint(environment, 1) == ""
    assert path_hint({}, 127) == ""
    assert path_hint(environment, 127).startswith(": PATH='/opt/mine' from the job's environment")

    shape = JobShape("job", "train.py", 2, 2, environment=environment)
    result = _result(tmp_path)
    blame(result, Ends(), FailureScan(), _run(tmp_path, 127, shape))
    assert result.failed_rank is None
    assert result.reason == say("mpirun", code=127, known=path_hint(environment, 127))


def test_a_rank_that_outlived_every_other_process_is_told_so(tmp_path: Path) -> None:
    """kill(-1) from a rank: mpirun and every watcher die of SIGKILL, and no rank records an
    end; the rank whose watcher was killed under it is the one left."""
    orphan = tmp_path / "stacks" / "rank-1.orphan"
    orphan.parent.mkdir(parents=True)
    orphan.write_text('Current thread 0x7f:\n  File "train.py", line 9 in <module>\n', "utf-8")
    result = _blame(tmp_path, code=137)
    assert result.failed_rank == 1
    assert result.phrase == say("killed-everything", at=" (it was at train.py, line 9)")
