"""Fixtures of the local runner's tests."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture
def run_env(env: dict[str, str], tmp_path: Path) -> dict[str, str]:
    """The clean env with TMPDIR private to the test, so created run dirs can be counted."""
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    env["TMPDIR"] = str(tmp)
    return env
