"""Fixtures of the local runner's tests."""

from __future__ import annotations

import os
from pathlib import Path

import pytest


@pytest.fixture
def local_env(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, env: dict[str, str]
) -> dict[str, str]:
    """No AWS credentials; local jobs under the test's own folder."""
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    for key in [k for k in list(os.environ) if k.startswith(("AWS_", "SMMPI_"))]:
        if key not in env:
            monkeypatch.delenv(key, raising=False)
    jobs = tmp_path / "local-jobs"
    monkeypatch.setenv("SMMPI_LOCAL_JOBS", str(jobs))
    monkeypatch.setenv("SMMPI_CONFIG", env["SMMPI_CONFIG"])
    env["SMMPI_LOCAL_JOBS"] = str(jobs)
    return env
