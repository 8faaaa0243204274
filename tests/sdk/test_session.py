"""The SDK session: telemetry opted out with a config the SDK accepts."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.usefixtures("no_aws_settings")


def test_telemetry_opt_out_config_is_valid_for_the_sdk() -> None:
    """smmpi skips the SDK's repeated schema check for this constant; prove it is valid."""
    from sagemaker.config.config import validate_sagemaker_config

    from smmpi.sdk.session import TELEMETRY_OPT_OUT_CONFIG, import_sdk

    import_sdk()
    validate_sagemaker_config(TELEMETRY_OPT_OUT_CONFIG)
    assert TELEMETRY_OPT_OUT_CONFIG["SageMaker"]["PythonSDK"]["Modules"]["TelemetryOptOut"]
