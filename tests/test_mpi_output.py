"""The tag parser of local runs and CloudWatch logs: lines rebuilt per rank, failures named."""

from __future__ import annotations

from smmpi.causes import say
from smmpi.mpi_output import FailureScan, LineAssembler, Tagged, is_tagged, split_tags

# Seed 004's log: ranks that print without a newline share physical lines.
SEED_004 = [
    "[1,3]<stdout>:Data at rank 3 [1,2]<stdout>:Data at rank 2 [1,2]<stdout>:[0 1 2]",
    "[1,3]<stdout>:[0 1 2]",
]


def test_is_tagged_and_split() -> None:
    assert is_tagged("[1,0]<stdout>:hello") and not is_tagged("mpirun noticed that")
    assert split_tags("[1,0]<stderr>:  indented as the rank wrote it") == [
        Tagged(0, "stderr", "  indented as the rank wrote it")
    ]
    assert split_tags("untagged [1,0]<stdout>:x") == []


def test_interleaved_ranks_keep_their_own_words() -> None:
    lines = LineAssembler()
    assert lines.feed(SEED_004[0]) == [Tagged(2, "stdout", "Data at rank 2 [0 1 2]")]
    assert lines.feed(SEED_004[1]) == [Tagged(3, "stdout", "Data at rank 3 [0 1 2]")]
    assert lines.flush() == []
    lines.feed("[1,1]<stdout>:no newline yet [1,0]<stdout>:done")
    assert lines.flush() == [Tagged(1, "stdout", "no newline yet ")]


def test_failure_scan_blames_the_rank_that_raised_first() -> None:
    scan = FailureScan()
    for line in [
        "[1,2]<stderr>:Traceback (most recent call last):",
        '[1,2]<stderr>:  File "prog.py", line 3, in <module>',
        "[1,2]<stderr>:ValueError: bad input on rank 2",
        "[1,0]<stderr>:Traceback (most recent call last):",
        "[1,0]<stderr>:RuntimeError: later",
    ]:
        scan.feed(line)
    assert scan.failed_rank() == 2
    assert scan.reason(2) == "ValueError: bad input on rank 2"


def test_failure_scan_reads_mpirun_abort_and_signal_lines() -> None:
    aborted = FailureScan()
    aborted.feed("MPI_ABORT was invoked on rank 1 in communicator MPI_COMM_WORLD")
    aborted.feed("  Errorcode: 7")
    assert aborted.failed_rank() == 1 and aborted.reason(1) == "exit code 7 (MPI_Abort)"
    killed = FailureScan()
    killed.feed("mpirun noticed that process rank 3 with PID 42 on node h exited on signal 9")
    # the words of the local runs' records (the table of causes): the signal's name, and what
    # a SIGKILL may mean
    assert killed.failed_rank() == 3 and killed.phrase(3) == say("sigkill")
    segv = FailureScan()
    segv.feed("mpirun noticed that process rank 0 with PID 42 on node h exited on signal 11")
    assert segv.reason(0) == "killed by signal 11 (SIGSEGV)"
    zero = FailureScan()
    zero.feed("MPI_ABORT was invoked on rank 2 in communicator MPI_COMM_WORLD")
    zero.feed("  Errorcode: 0")
    assert zero.phrase(2) == "called MPI_Abort(0)"


def test_a_line_fed_in_parts_goes_on_with_the_rank_its_last_part_ended_in() -> None:
    lines = LineAssembler()
    assert lines.feed("[1,0]<stdout>:ab", ends=False) == []
    assert lines.feed("cd[1,1]<stderr>:x", ends=False) == []  # "cd" goes on rank 0's text
    assert lines.feed("y") == [Tagged(1, "stderr", "xy")]
    assert lines.flush() == [Tagged(0, "stdout", "abcd")]


def test_an_empty_or_untagged_line_is_no_ranks_and_stops_nothing() -> None:
    lines = LineAssembler()
    assert lines.feed("") == []
    assert lines.feed("\n") == []
    assert lines.feed("mpirun: a line of its own") == []
    assert lines.feed("[1,2]<stdout>:after") == [Tagged(2, "stdout", "after")]
