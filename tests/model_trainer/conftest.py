"""Fixtures of the ModelTrainer tests."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers import base_env
from tests.serve.serving import ServeProcess


@pytest.fixture
def in_process(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """This process runs local jobs as a user would from Python: its own HOME and local jobs
    folder, isolated hosts (the default), the SDK's banner off. Returns ``tmp_path``."""
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("SMMPI_LOCAL_JOBS", str(tmp_path / "jobs"))
    monkeypatch.delenv("SMMPI_ISOLATION", raising=False)
    monkeypatch.setenv("SAGEMAKER_SUPPRESS_V2_WARNING", "1")
    return tmp_path


@pytest.fixture(scope="module")
def serve(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServeProcess]:
    """One ``smmpi serve`` per test module, on isolated hosts (ModelTrainer's requests)."""
    root = tmp_path_factory.mktemp("serve-mt")
    env = base_env(root)
    env.pop("SMMPI_ISOLATION", None)
    server = ServeProcess(root / "state", env)
    try:
        yield server
    finally:
        server.stop()
