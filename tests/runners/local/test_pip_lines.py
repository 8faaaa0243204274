"""The one line of pip's output that says what went wrong, read from pip's real output."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from smmpi.runners.local.pip_lines import pip_reason


def _pip_fails(tmp_path: Path, *args: str) -> str:
    """pip's output (stdout and stderr, as an install's file holds them) for a failing
    offline install: no index is asked."""
    env = {**os.environ, "PIP_DISABLE_PIP_VERSION_CHECK": "1", "PIP_NO_INPUT": "1"}
    argv = [sys.executable, "-m", "pip", "install", "--no-index", "--target", str(tmp_path / "t")]
    proc = subprocess.run(
        [*argv, *args], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=120
    )
    assert proc.returncode != 0
    return proc.stdout.decode(errors="replace")


def test_a_builds_own_error_is_chosen_over_pips_summary_lines(tmp_path: Path) -> None:
    code = tmp_path / "code"
    code.mkdir()
    (code / "setup.py").write_text("import smmpi_no_such_module\n")
    out = _pip_fails(tmp_path, "--no-deps", "--no-build-isolation", str(code))
    assert "error: subprocess-exited-with-error" in out  # pip's summary comes first
    assert pip_reason(out) == "ModuleNotFoundError: No module named 'smmpi_no_such_module'"


def test_a_requirement_no_index_has_is_pips_first_error_line(tmp_path: Path) -> None:
    out = _pip_fails(tmp_path, "smmpi-no-such-package==1.0")
    assert pip_reason(out).startswith(
        "ERROR: Could not find a version that satisfies the requirement smmpi-no-such-package==1.0"
    )


def test_without_an_error_line_the_last_line_but_pips_generic_ones_is_said() -> None:
    out = "Processing ./code\n  something odd happened  \n\nhint: See above for details.\n"
    assert pip_reason(out) == "something odd happened"


def test_output_of_generic_lines_only_or_none_says_pip_failed() -> None:
    assert pip_reason("") == "pip failed"
    assert pip_reason("error: metadata-generation-failed\nhint: See above for details.\n") == (
        "pip failed"
    )
