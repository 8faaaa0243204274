"""The SDK session: telemetry opted out with a config the SDK accepts."""

from __future__ import annotations

import os
from pathlib import Path

import pytest


@pytest.fixture(autouse=True)
def _isolated(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No credentials, no SMMPI_* settings: planning must not need them."""
    for var in list(os.environ):
        if var.startswith(("AWS_", "SMMPI_")):
            monkeypatch.delenv(var)
    monkeypatch.setenv("SMMPI_CONFIG", str(tmp_path / "none.json"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "no-aws-config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "no-aws-credentials"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")


def test_telemetry_opt_out_config_is_valid_for_the_sdk() -> None:
    """smmpi skips the SDK's repeated schema check for this constant; prove it is valid."""
    from sagemaker.config.config import validate_sagemaker_config

    from smmpi.sdk.session import TELEMETRY_OPT_OUT_CONFIG, import_sdk

    import_sdk()
    validate_sagemaker_config(TELEMETRY_OPT_OUT_CONFIG)
    assert TELEMETRY_OPT_OUT_CONFIG["SageMaker"]["PythonSDK"]["Modules"]["TelemetryOptOut"]
