"""The one table of failure causes: its rows, its words, and the FailureReason built from it."""

from __future__ import annotations

import signal
from pathlib import Path

import pytest

from smmpi.causes import (
    CAUSES,
    FAILURE_CHARS,
    cause,
    ended,
    failure_reason,
    own_lines,
    ranked,
    say,
    signal_text,
    signalled,
    summary,
)


def test_each_cause_has_one_row_with_its_words() -> None:
    keys = [c.key for c in CAUSES]
    assert len(keys) == len(set(keys))
    for row in CAUSES:
        assert row.what and row.phrase and row.sagemaker
    with pytest.raises(KeyError):
        cause("no-such-cause")


def test_the_phrases_name_exit_codes_and_signals_alike_everywhere() -> None:
    assert ended(3, None) == "failed: exit code 3" == say("exit-code", code=3)
    assert ended(None, signal.SIGSEGV) == "failed: killed by signal 11 (SIGSEGV)"
    assert signal_text(99) == "99"  # a number without a name
    assert say("mpi-abort", code=5) == "failed: exit code 5 (MPI_Abort)"
    assert ranked(1, "algo-2", say("exception", text="ValueError: x")) == (
        "rank 1 (algo-2) failed: ValueError: x"
    )
    assert ranked(1, None, "failed: exit code 1") == "rank 1 failed: exit code 1"


def test_a_sigkill_says_out_of_memory_for_certain_only_when_the_cgroup_counted_it() -> None:
    unsure = signalled(signal.SIGKILL)
    assert unsure.startswith("failed: killed by signal 9 (SIGKILL) (out of memory?")
    assert signalled(signal.SIGKILL, 0) == unsure
    sure = signalled(signal.SIGKILL, 1)
    assert sure.startswith("failed: killed by signal 9 (SIGKILL): out of memory (")
    assert cause("oom-kill").sagemaker == cause("sigkill").sagemaker
    assert "ExitCode 137" in cause("sigkill").sagemaker


def test_failure_reason_is_sagemakers_text_then_smmpis_line_whole() -> None:
    line = "rank 3 (algo-2) failed: ValueError: boom"
    command = "mpirun " + "-x SM_VAR " * 300 + "python -m mpi4py train.py"
    text = failure_reason("ExecuteUserScriptError", 1, "ValueError: boom", command, line)
    assert len(text) == FAILURE_CHARS
    assert text.startswith(
        'AlgorithmError: ExecuteUserScriptError:\nExitCode 1\nErrorMessage "ValueError: boom"\n'
        'Command "mpirun -x SM_VAR'
    )
    assert text.endswith(f'...", exit code: 1\nsmmpi: {line}')
    assert summary(text) == line
    extra = failure_reason("E", 137, "", "mpirun", None, 'ExtraInfo "OutOfMemory"\n')
    assert extra == (
        'AlgorithmError: E:\nExitCode 137\nErrorMessage ""\nExtraInfo "OutOfMemory"\n'
        'Command "mpirun", exit code: 137'
    )


def test_summary_and_own_lines_read_a_failure_reason_back() -> None:
    assert summary(None) is None and summary(" \n") is None
    assert summary("AlgorithmError: ExecuteUserScriptError:\nExitCode 1\nErrorMessage") == (
        "AlgorithmError: ExecuteUserScriptError: ExitCode 1"
    )
    assert summary("ClientError: bad\nmore") == "ClientError: bad"
    reason = "AlgorithmError: E:\nExitCode 1\nsmmpi: rank 0 (algo-1) failed: X\nlink refused"
    assert summary(reason) == "rank 0 (algo-1) failed: X"
    assert own_lines(reason) == "rank 0 (algo-1) failed: X\nlink refused"
    # smmpi's line whole, as the run said it, with the lines after the reason's copy of it
    assert own_lines(reason, "rank 0 (algo-1) failed: X and more") == (
        "rank 0 (algo-1) failed: X and more\nlink refused"
    )
    assert own_lines("a program's own reason", "rank 0 (algo-1) failed: X") == (
        "rank 0 (algo-1) failed: X"
    )


def test_the_reliability_doc_shows_every_row_of_the_table() -> None:
    doc = (Path(__file__).parents[1] / "docs" / "RELIABILITY.md").read_text(encoding="utf-8")
    for row in CAUSES:
        line = ("rank R (algo-k) " if row.ranked else "") + row.phrase
        log = row.log or "SageMaker's FailureReason only"
        assert f"  | {row.what} | `{line}` | {row.sagemaker} | {log} |\n" in doc, row.key
