"""Exact mode's toolkit environment: built once, only where none is named, nothing left over."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from smmpi.runners.local import toolkit_build, toolkits


def test_a_named_or_switched_off_toolkit_is_never_built(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    said: list[str] = []
    monkeypatch.setenv(toolkits.VENV, "none")
    toolkit_build.ensure("", said.append)
    venv = os.environ.get("SMMPI_TEST_TOOLKIT") or str(Path(__file__).parents[3] / ".venv-toolkit")
    monkeypatch.setenv(toolkits.VENV, venv)
    toolkit_build.ensure("pytorch-training:2.8.0-cpu-py312", said.append)
    assert said == []
    assert not (tmp_path / ".smmpi").exists()  # nothing made under HOME


def test_what_a_killed_build_left_is_removed_and_a_running_ones_kept(tmp_path: Path) -> None:
    dead = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    stale = tmp_path / f".building-{dead}-abc"
    running = tmp_path / f".building-{os.getpid()}-def"
    for folder in (stale, running):
        (folder / "site").mkdir(parents=True)
    toolkit_build.clean_stale(tmp_path)
    assert not stale.exists()
    assert running.is_dir()
