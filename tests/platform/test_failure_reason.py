"""A failed job's FailureReason, from the instances' files: one text for every local route."""

from __future__ import annotations

from pathlib import Path

from smmpi.causes import FAILURE_CHARS, summary
from smmpi.platform.failure_reason import program_failure, reason, toolkit_reason
from smmpi.toolkit.failure import failure_text

LINE = "rank 1 (algo-2) failed: ValueError: boom"
COMMAND = ["mpirun", "--host", "algo-1,algo-2", "-np", "2", "python", "-m", "mpi4py", "t.py"]


def _failure(hosts: Path, host: str, text: str) -> Path:
    path = hosts / host / "opt" / "ml" / "output" / "failure"
    path.parent.mkdir(parents=True)
    path.write_text(text, encoding="utf-8")
    return path


def test_the_toolkits_failure_file_becomes_sagemakers_reason_with_smmpis_line(
    tmp_path: Path,
) -> None:
    text = failure_text(COMMAND, 1, "ValueError: boom", ["ExecuteUserScriptError"])
    _failure(tmp_path, "algo-1", text)
    got = reason({}, {"line": LINE, "exit_code": 1}, tmp_path)
    assert got == (f"AlgorithmError: {text}, exit code: 1\nsmmpi: {LINE}")
    assert summary(got) == LINE
    assert toolkit_reason(tmp_path, LINE) == got
    assert program_failure(tmp_path, LINE) is None  # the toolkit's, not the program's


def test_an_oom_kill_keeps_the_toolkits_extra_info(tmp_path: Path) -> None:
    text = failure_text(COMMAND, 137, "", ["ExecuteUserScriptError"])
    _failure(tmp_path, "algo-1", text)
    got = toolkit_reason(tmp_path, LINE) or ""
    assert 'ExitCode 137\nErrorMessage ""\nExtraInfo "OutOfMemory: Process killed by SIGKILL' in got
    assert got.endswith(f", exit code: 137\nsmmpi: {LINE}")


def test_a_programs_own_failure_file_is_the_reason_then_smmpis_line(tmp_path: Path) -> None:
    _failure(tmp_path, "algo-2", "my reason " + "x" * 2000)
    got = reason({}, {"line": LINE, "exit_code": 1}, tmp_path)
    assert len(got) == FAILURE_CHARS  # the program's text is cut; smmpi's line stays whole
    assert got.startswith("my reason xxx")
    assert got.endswith("\nsmmpi: " + LINE)
    assert summary(got) == LINE


def test_a_failure_file_that_is_a_link_is_not_read(tmp_path: Path) -> None:
    secret = tmp_path / "secret"
    secret.write_text("not the job's", encoding="utf-8")
    link = tmp_path / "hosts" / "algo-1" / "opt" / "ml" / "output" / "failure"
    link.parent.mkdir(parents=True)
    link.symlink_to(secret)
    got = reason({}, {"line": LINE, "exit_code": 1}, tmp_path / "hosts")
    assert "not the job's" not in got
    # no failure file: SageMaker's shape from the request's own command
    assert got.startswith('AlgorithmError: ExecuteUserScriptError:\nExitCode 1\nErrorMessage ""')
    assert summary(got) == LINE


def test_a_refused_request_is_a_client_error(tmp_path: Path) -> None:
    got = reason({}, {"line": "bad input", "error": True}, tmp_path)
    assert got == "ClientError: bad input"


def test_without_a_failure_file_the_reason_names_the_planned_line(tmp_path: Path) -> None:
    fields = {"line": LINE, "exit_code": 1}
    got = reason({}, fields, tmp_path, COMMAND)  # the line the caller planned, not the request's
    assert f'Command "{" ".join(COMMAND)}", exit code: 1' in got
    assert 'Command "mpirun", exit code: 1' in reason({}, fields, tmp_path)  # (none to read)
    assert summary(got) == LINE
