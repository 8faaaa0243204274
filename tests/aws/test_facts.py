"""SageMaker API facts: instance sizes, job names."""

from __future__ import annotations

from pathlib import Path

import pytest

from smmpi.spec import (
    vcpus,
)


@pytest.fixture(autouse=True)
def _isolated(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for var in ("SMMPI_ROLE", "SMMPI_BUCKET", "SMMPI_REGION"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("SMMPI_CONFIG", str(tmp_path / "none.json"))


def test_vcpus_rule() -> None:
    assert vcpus("ml.c5.large") == 2
    assert vcpus("ml.c5.xlarge") == 4
    assert vcpus("ml.c5.2xlarge") == 8
    assert vcpus("ml.m5.24xlarge") == 96
    assert vcpus("ml.c5.metal") is None
