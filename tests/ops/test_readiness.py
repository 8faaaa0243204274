"""The AWS half of ``smmpi doctor``, called directly against a real moto server over HTTP."""

from __future__ import annotations

import json
import os
from pathlib import Path

import boto3
import pytest

from smmpi.ops.readiness import Check, aws_checks
from tests.helpers import MotoServer

pytestmark = pytest.mark.aws


@pytest.fixture
def no_aws(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """No AWS variable or file of this shell; the config file the test writes."""
    for name in list(os.environ):
        if name.startswith(("AWS_", "SMMPI_")):
            monkeypatch.delenv(name)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "no-config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "no-credentials"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    monkeypatch.setenv("SMMPI_CONFIG", str(tmp_path / "smmpi.json"))
    return tmp_path / "smmpi.json"


def _states(checks: list[Check]) -> dict[str, str]:
    return {c.name: c.state for c in checks}


def test_a_line_shows_the_fix_only_when_not_ok() -> None:
    assert Check("role", "fail", "not configured", "deploy").line() == (
        "fail  role        not configured; fix: deploy"
    )
    assert Check("region", "ok", "us-west-2", "unused").line() == "ok    region      us-west-2"


def test_without_credentials_nothing_is_contacted(no_aws: Path) -> None:
    checks = aws_checks()
    assert _states(checks) == {
        "credentials": "fail",
        "region": "fail",
        "endpoint": "warn",
        "role": "fail",
        "bucket": "fail",
    }
    assert checks[2].detail == "AWS public endpoints; not contacted"


def test_a_saved_role_and_bucket_are_seen_to_exist(
    no_aws: Path, moto_server: MotoServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name, value in moto_server.aws_env().items():
        monkeypatch.setenv(name, value)
    role = boto3.client("iam").create_role(RoleName="smmpi-exec", AssumeRolePolicyDocument="{}")
    boto3.client("s3").create_bucket(
        Bucket="smmpi-ready", CreateBucketConfiguration={"LocationConstraint": "us-west-2"}
    )
    no_aws.write_text(json.dumps({"role": role["Role"]["Arn"], "bucket": "smmpi-ready"}))
    checks = aws_checks()
    assert set(_states(checks).values()) == {"ok"}, [c.line() for c in checks]
    assert checks[0].detail == "found (source: env)"
    assert checks[2].detail.endswith("(AWS_ENDPOINT_URL); account 123456789012")
    no_aws.write_text(json.dumps({"role": role["Role"]["Arn"] + "-gone", "bucket": "smmpi-gone"}))
    gone = {c.name: c for c in aws_checks()}
    assert gone["role"].state == gone["bucket"].state == "fail"
    assert gone["bucket"].detail == "smmpi-gone does not exist"
    assert "testing-secret" not in "\n".join(c.line() for c in gone.values())
