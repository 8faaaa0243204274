"""One region resolution for clients and the estimator: flag, SMMPI_REGION, config, AWS's own."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from smmpi.aws.clients import NotConfigured, clients, resolve_region, split_s3
from smmpi.errors import SmmpiError


@pytest.fixture
def clean(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    for var in ("SMMPI_REGION", "AWS_REGION", "AWS_DEFAULT_REGION", "AWS_PROFILE"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("SMMPI_CONFIG", str(tmp_path / "config.json"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "aws-config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "aws-credentials"))
    return tmp_path


def test_region_precedence(clean: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert resolve_region() is None
    (clean / "aws-config").write_text("[default]\nregion = eu-north-1\n")
    assert resolve_region() == "eu-north-1"
    monkeypatch.setenv("AWS_DEFAULT_REGION", "eu-west-3")
    assert resolve_region() == "eu-west-3"
    monkeypatch.setenv("AWS_REGION", "eu-west-2")
    assert resolve_region() == "eu-west-2"
    (clean / "config.json").write_text(json.dumps({"region": "ap-south-1"}))
    assert resolve_region() == "ap-south-1"
    monkeypatch.setenv("SMMPI_REGION", "us-east-2")
    assert resolve_region() == "us-east-2"
    assert resolve_region("sa-east-1") == "sa-east-1"


def test_clients_need_a_region(clean: Path) -> None:
    with pytest.raises(NotConfigured, match="no AWS region"):
        clients("sagemaker")
    (sm, s3) = clients("sagemaker", "s3", region="us-west-2")
    assert sm.meta.region_name == s3.meta.region_name == "us-west-2"


def test_split_s3() -> None:
    assert split_s3("s3://bkt/a/b.tar.gz") == ("bkt", "a/b.tar.gz")
    assert split_s3("s3://bkt") == ("bkt", "")
    with pytest.raises(SmmpiError, match="not an S3 URI"):
        split_s3("file:///tmp/x")
