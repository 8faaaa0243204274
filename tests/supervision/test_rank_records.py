"""The ranks' and their watchers' records (``rank-R.*``, ``strays*.json``, ``init-HOST.json``)
read back from a run's stack folder, damaged or foreign files skipped."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from smmpi.runners.local.hostfiles import WATCH
from smmpi.supervision.rank_records import (
    InitEnd,
    RankAbort,
    RankEnd,
    RankException,
    Stray,
    read_aborts,
    read_ends,
    read_exceptions,
    read_init_ends,
    read_orphans,
    read_pids,
    read_statuses,
    read_strays,
    read_unfinalized,
    user_frame,
)


def _record(folder: Path, name: str, row: object) -> None:
    (folder / name).write_text(json.dumps(row), encoding="utf-8")


def test_ends_are_read_per_rank_and_damaged_records_are_skipped(tmp_path: Path) -> None:
    _record(tmp_path, "rank-0.exit", {"rank": 0, "code": 0, "signal": None, "time": 10.5})
    _record(tmp_path, "rank-1.exit", {"code": None, "signal": 9, "time": 11, "eth0_route": False})
    _record(tmp_path, "rank-2.exit", {"code": True, "signal": "9"})  # not integers: unknown
    (tmp_path / "rank-3.exit").write_text('{"code": 1', encoding="utf-8")  # cut short
    _record(tmp_path, "rank-4.exit", [1, 2])  # not a record
    _record(tmp_path, "rank-x.exit", {"code": 1})  # no rank number
    _record(tmp_path, "rank-5.exit.tmp", {"code": 1})  # a record still being written
    assert read_ends(tmp_path) == {
        0: RankEnd(0, 0, None, 10.5),
        1: RankEnd(1, None, 9, 11.0, eth0_route=False),
        2: RankEnd(2, None, None, 0.0),
    }


def test_a_time_that_is_no_number_reads_as_zero_in_every_record(tmp_path: Path) -> None:
    """A rank writes its own records: one that says ``"time": "x"`` stops no reader."""
    for suffix in ("exit", "exc", "abort", "status"):
        _record(tmp_path, f"rank-0.{suffix}", {"code": 3, "text": "E: e", "time": "x"})
    assert read_ends(tmp_path) == {0: RankEnd(0, 3, None, 0.0)}
    assert read_exceptions(tmp_path)[0].time == 0.0
    assert read_aborts(tmp_path)[0].time == read_statuses(tmp_path)[0].time == 0.0


def test_a_rank_end_fails_on_a_signal_or_a_code_other_than_zero() -> None:
    assert not RankEnd(0, 0, None, 0.0).failed
    assert not RankEnd(0, None, None, 0.0).failed  # nothing known of it
    assert RankEnd(0, 3, None, 0.0).failed
    assert RankEnd(0, 3, None, 0.0).cause == "exit code 3"
    assert RankEnd(0, None, 11, 0.0).failed
    assert RankEnd(0, None, 11, 0.0).cause == "killed by signal 11 (SIGSEGV)"
    assert RankEnd(0, None, 9, 0.0, oom_kills=1).cause.endswith(
        "out of memory (its memory cgroup counted an OOM kill)"
    )


def test_the_abort_code_record_of_an_exception_wins_over_the_excepthooks(tmp_path: Path) -> None:
    _record(tmp_path, "rank-0.exc", {"text": "ValueError: hook", "time": 2.0})
    _record(tmp_path, "rank-0.status", {"code": 1, "text": "ValueError: status", "time": 1.0})
    _record(tmp_path, "rank-1.exc", {"text": "KeyError: 'k'", "time": 3.0})
    _record(tmp_path, "rank-1.status", {"code": 4, "time": 3.5})  # sys.exit(4): no text
    _record(tmp_path, "rank-2.exc", {"text": None, "time": 4.0})
    assert read_exceptions(tmp_path) == {
        0: RankException(0, "ValueError: status", 1.0),
        1: RankException(1, "KeyError: 'k'", 3.0),
    }
    assert read_statuses(tmp_path) == {0: RankAbort(0, 1, 1.0), 1: RankAbort(1, 4, 3.5)}


def test_abort_and_status_records_without_a_code_have_their_defaults(tmp_path: Path) -> None:
    """``MPI_Abort`` with no code read is taken as 0; ``python -m mpi4py``'s exit as 1."""
    _record(tmp_path, "rank-0.abort", {"time": 5.0})
    _record(tmp_path, "rank-1.abort", {"code": 7, "time": 6.0})
    _record(tmp_path, "rank-2.status", {"code": "2"})
    assert read_aborts(tmp_path) == {0: RankAbort(0, 0, 5.0), 1: RankAbort(1, 7, 6.0)}
    assert read_statuses(tmp_path) == {2: RankAbort(2, 1, 0.0)}


def test_only_ranks_that_say_they_did_not_finalize_are_unfinalized(tmp_path: Path) -> None:
    _record(tmp_path, "rank-0.mpi", {"finalized": True})
    _record(tmp_path, "rank-1.mpi", {"finalized": False})
    _record(tmp_path, "rank-2.mpi", {})
    _record(tmp_path, "rank-3.mpi", {"finalized": 0})
    assert read_unfinalized(tmp_path) == {1}


def test_the_users_frame_is_the_innermost_one_outside_mpi4py_and_the_interpreter() -> None:
    stack = (
        '  File "/v/lib/python3.11/threading.py", line 320 in wait\n'
        '  File "/v/lib/python3.11/site-packages/mpi4py/run.py", line 53 in run_command_line\n'
        '  File "lib/helpers.py", line 7 in work\n'
        '  File "train.py", line 12 in <module>\n'
        '  File "<frozen runpy>", line 88 in _run_code\n'
    )
    assert user_frame(stack) == "lib/helpers.py, line 7"
    assert user_frame('  File "<frozen runpy>", line 88 in _run_code\n') is None
    assert user_frame("") is None


def test_an_orphan_is_read_from_its_current_threads_stack_once_dumped(tmp_path: Path) -> None:
    (tmp_path / "rank-0.orphan").write_text(
        "Thread 0x00007f01 (most recent call first):\n"
        '  File "worker.py", line 3 in loop\n'
        "\n"
        "Current thread 0x00007f02 (most recent call first):\n"
        '  File "train.py", line 21 in <module>\n',
        encoding="utf-8",
    )
    os.utime(tmp_path / "rank-0.orphan", (123.0, 123.0))
    (tmp_path / "rank-1.orphan").write_text("", encoding="utf-8")  # not dumped yet
    orphans = read_orphans(tmp_path)
    assert set(orphans) == {0}
    assert (orphans[0].where, orphans[0].time) == ("train.py, line 21", 123.0)


def test_pids_strays_and_ended_inits_are_read_from_every_file(tmp_path: Path) -> None:
    (tmp_path / "rank-0.pid").write_text("4242\n")
    (tmp_path / "rank-1.pid").write_text("")  # written as the rank started
    _record(tmp_path, "strays.json", [{"rank": 0, "pid": 11, "command": "sleep 300"}, "x"])
    _record(tmp_path, "strays-algo-2.json", [{"pid": 12}])
    (tmp_path / "strays-algo-3.json").write_text("[{", encoding="utf-8")
    _record(tmp_path, "init-algo-2.json", {"host": "algo-2", "signal": 15, "pid": 9, "time": 8})
    sender = {"signal": 9, "pid": 3, "rank": 1, "command": "python train.py", "time": 7.5}
    _record(tmp_path, "init-algo-1.json", {"host": "algo-1", **sender})
    _record(tmp_path, "init-algo-3.json", {"host": "algo-3", "pid": 4, "time": 1})  # no signal
    assert read_pids(tmp_path) == {0: 4242}
    # every file's rows, in the order of the files' names
    assert read_strays(tmp_path) == [Stray(None, 12, ""), Stray(0, 11, "sleep 300")]
    assert read_init_ends(tmp_path) == [
        InitEnd("algo-1", 9, 3, 1, "python train.py", 7.5),
        InitEnd("algo-2", 15, 9, None, "", 8.0),
    ]


def test_a_rank_watchers_own_record_is_read_back(tmp_path: Path) -> None:
    """What ``watch.py rank`` writes as a rank dies of a signal reads as that rank's end."""
    hosts = tmp_path / "algo-1.env"
    hosts.write_bytes(b"SM_CURRENT_HOST=algo-1")
    env = {**os.environ, "SMMPI_STACK_DIR": str(tmp_path), "OMPI_COMM_WORLD_RANK": "3"}
    rank = "import os, signal; os.kill(os.getpid(), signal.SIGTERM)"
    argv = [sys.executable, "-I", "-S", str(WATCH), "rank", str(hosts), "--"]
    proc = subprocess.run([*argv, sys.executable, "-c", rank], env=env, timeout=120)
    assert proc.returncode == -15
    [(rank_no, end)] = read_ends(tmp_path).items()
    assert (rank_no, end.rank, end.code, end.signal, end.failed) == (3, 3, None, 15, True)
    assert end.cause == "killed by signal 15 (SIGTERM)" and end.time > 0
