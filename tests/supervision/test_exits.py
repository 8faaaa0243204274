"""The run's records read back: one classification, and the rank to blame."""

from __future__ import annotations

import json
import os
from pathlib import Path

from smmpi.causes import say
from smmpi.supervision.exits import Ends
from smmpi.supervision.rank_records import RankEnd, user_frame


def _record(folder: Path, name: str, row: dict[str, object]) -> None:
    (folder / name).write_text(json.dumps(row), encoding="utf-8")


def _orphan(folder: Path, rank: int, stack: str, when: float) -> None:
    path = folder / f"rank-{rank}.orphan"
    path.write_text(stack, encoding="utf-8")
    os.utime(path, (when, when))


STACK = (
    "Current thread 0x00007f (most recent call first):\n"
    '  File "/x/lib/python3.11/site-packages/mpi4py/run.py", line 53 in run_command_line\n'
)
USER_STACK = (
    "Current thread 0x00007f (most recent call first):\n"
    '  File "train.py", line 12 in <module>\n'
    '  File "<frozen runpy>", line 88 in _run_code\n'
)


def test_a_rank_whose_launcher_died_outranks_the_ranks_mpirun_stopped(tmp_path: Path) -> None:
    _record(tmp_path, "rank-0.exit", {"rank": 0, "code": None, "signal": 15, "time": 100.0})
    _orphan(tmp_path, 1, USER_STACK, 100.5)  # noticed after mpirun had stopped rank 0
    (tmp_path / "rank-1.pid").write_text("4242")
    (tmp_path / "strays.json").write_text(
        json.dumps([{"rank": 1, "pid": 4242, "command": "python -m mpi4py train.py"}])
    )
    ends = Ends.read(tmp_path)
    blame = ends.blame({1: 9})
    assert blame is not None and blame.rank == 1
    assert blame.phrase == (
        "failed: the process that started it (smmpi's rank watcher) was killed by signal 9 "
        "(SIGKILL) while the rank ran (the rank was at train.py, line 12)"
    )
    assert ends.stray_lines(lambda r: "algo-1") == []  # the rank itself is no stray


def test_the_first_failure_by_time_is_blamed_when_all_were_signalled(tmp_path: Path) -> None:
    _record(tmp_path, "rank-0.exit", {"rank": 0, "code": None, "signal": 15, "time": 101.0})
    _record(tmp_path, "rank-1.exit", {"rank": 1, "code": None, "signal": 9, "time": 100.0})
    blame = Ends.read(tmp_path).blame()
    assert blame is not None and (blame.rank, blame.phrase) == (1, say("sigkill"))


def test_a_sigkill_before_any_other_end_outranks_a_later_exit_code(tmp_path: Path) -> None:
    """Blamed before: rank 0, whose exit code 3 was its answer to mpirun's SIGTERM."""
    _record(tmp_path, "rank-1.exit", {"rank": 1, "code": None, "signal": 9, "time": 100.0})
    _record(tmp_path, "rank-0.status", {"code": 3, "time": 101.0})
    blame = Ends.read(tmp_path).blame()
    assert blame is not None and (blame.rank, blame.phrase) == (1, say("sigkill"))


def test_an_oom_kill_counted_by_the_cgroup_is_named_for_certain() -> None:
    ends = Ends(ends={1: RankEnd(1, None, 9, 100.0, oom_kills=1)})
    blame = ends.blame()
    assert blame is not None and (blame.rank, blame.phrase) == (1, say("oom-kill"))
    assert "out of memory (its memory cgroup counted an OOM kill)" in blame.phrase


def test_mpiruns_sigkill_after_another_ranks_failure_is_collateral(tmp_path: Path) -> None:
    """A rank that ignored mpirun's SIGTERM and got its SIGKILL is not to blame."""
    _record(tmp_path, "rank-0.exc", {"text": "ValueError: first", "time": 100.0})
    _record(tmp_path, "rank-1.exit", {"rank": 1, "code": None, "signal": 9, "time": 101.0})
    blame = Ends.read(tmp_path).blame()
    assert blame is not None and (blame.rank, blame.phrase) == (0, "failed: ValueError: first")


def test_abort_status_and_exception_records_name_what_the_rank_did(tmp_path: Path) -> None:
    _record(tmp_path, "rank-0.abort", {"code": 0, "time": 100.0})
    _record(tmp_path, "rank-0.exit", {"rank": 0, "code": 0, "signal": None, "time": 100.1})
    _record(tmp_path, "rank-1.status", {"code": 3, "time": 100.2})
    _record(tmp_path, "rank-1.exit", {"rank": 1, "code": None, "signal": 15, "time": 100.3})
    _record(tmp_path, "rank-2.abort", {"code": 5, "time": 100.4})
    _record(tmp_path, "rank-3.exc", {"text": "ValueError: x", "time": 100.5})
    _record(tmp_path, "rank-3.status", {"code": 1, "time": 100.45})
    ends = Ends.read(tmp_path)
    phrases = {r: e.phrase for r in range(4) if (e := ends.event(r)) is not None}
    assert phrases == {
        0: "called MPI_Abort(0)",
        1: "failed: exit code 3",
        2: "failed: exit code 5 (MPI_Abort)",
        3: "failed: ValueError: x",
    }
    assert ends.aborted_zero is not None and ends.aborted_zero.rank == 0
    blame = ends.blame()
    assert blame is not None and blame.rank == 0


def test_an_exception_is_dated_by_mpi4pys_abort_status_which_comes_before_the_excepthook(
    tmp_path: Path,
) -> None:
    _record(tmp_path, "rank-0.status", {"code": 1, "text": "KeyError: 'b'", "time": 100.2})
    _record(tmp_path, "rank-0.exc", {"text": "KeyError: 'b'", "time": 100.3})
    _record(tmp_path, "rank-1.status", {"code": 1, "text": "ValueError: a", "time": 100.1})
    _record(tmp_path, "rank-1.exit", {"rank": 1, "code": None, "signal": 15, "time": 100.4})
    _record(tmp_path, "rank-2.status", {"code": 4, "time": 100.0})  # sys.exit(4): no text
    _record(tmp_path, "rank-2.exit", {"rank": 2, "code": 4, "signal": None, "time": 100.5})
    _record(tmp_path, "rank-3.exc", {"text": "OSError: c", "time": 100.7})
    _record(tmp_path, "rank-3.status", {"code": 1, "time": 100.6})  # one that names none
    ends = Ends.read(tmp_path)
    assert {r: e.phrase for r in range(4) if (e := ends.event(r)) is not None} == {
        0: "failed: KeyError: 'b'",
        1: "failed: ValueError: a",
        2: "failed: exit code 4",
        3: "failed: OSError: c",
    }
    blame = ends.blame()
    assert blame is not None and (blame.rank, blame.reason) == (2, "exit code 4")
    (tmp_path / "rank-2.status").unlink()
    (tmp_path / "rank-2.exit").unlink()
    blame = Ends.read(tmp_path).blame()
    assert blame is not None and (blame.rank, blame.reason) == (1, "ValueError: a")


def test_a_normal_end_is_no_failure(tmp_path: Path) -> None:
    _record(tmp_path, "rank-0.exit", {"rank": 0, "code": 0, "signal": None, "time": 100.0})
    _orphan(tmp_path, 1, "", 100.0)  # armed, never signalled: empty
    ends = Ends.read(tmp_path)
    assert ends.blame() is None and ends.orphans == {}


def test_user_frame_skips_the_launchers_frames() -> None:
    assert user_frame(USER_STACK) == "train.py, line 12"
    assert user_frame(STACK) is None
    assert user_frame("Current thread 0x1 (most recent call first):\n  <no Python frame>\n") is None


def test_a_rank_killed_before_it_recorded_its_launchers_death(tmp_path: Path) -> None:
    """mpirun's SIGTERM reached the rank before the signal that its launcher had died: no
    record but the pid, and mpirun's word that the launcher was killed by SIGKILL."""
    _record(tmp_path, "rank-0.exit", {"rank": 0, "code": None, "signal": 15, "time": 100.0})
    (tmp_path / "rank-1.pid").write_text("4242")
    blame = Ends.read(tmp_path).blame({1: 9})
    assert blame is not None and blame.rank == 1, blame
    assert blame.reason.startswith("the process that started it (smmpi's rank watcher) was killed")
    assert Ends.read(tmp_path).blame() == Ends.read(tmp_path).blame({})  # no word: rank 0


def test_a_rank_that_exited_0_before_mpi_finalize_is_blamed(tmp_path: Path) -> None:
    """Rank 1 left with exit code 0 before MPI_Finalize; mpirun then stopped the others."""
    _record(tmp_path, "rank-1.exit", {"rank": 1, "code": 0, "signal": None, "time": 100.0})
    _record(tmp_path, "rank-1.mpi", {"finalized": False, "time": 99.0})
    for rank in (0, 2):
        _record(tmp_path, f"rank-{rank}.mpi", {"finalized": False, "time": 99.0})
        _record(tmp_path, f"rank-{rank}.exit", {"code": None, "signal": 15, "time": 100.2})
    _record(tmp_path, "rank-3.mpi", {"finalized": True, "time": 100.1})
    _record(tmp_path, "rank-3.exit", {"rank": 3, "code": 0, "signal": None, "time": 100.1})
    ends = Ends.read(tmp_path)
    blame = ends.blame()
    assert blame is not None and blame.rank == 1
    assert blame.phrase == "failed: exited without MPI_Finalize (exit code 0)"
    assert ends.event(3) is None  # finalized, then exit code 0: no failure
