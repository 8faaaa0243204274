"""Where a job goes: role, bucket, region and VPC by the documented precedence."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from smmpi.errors import BadInput
from smmpi.spec import MPIJob


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


def test_vpc_from_the_config_file(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """What `smmpi infra deploy --vpc-id` saved is used when the job names no VPC."""
    cfg = tmp_path / "config.json"
    cfg.write_text(json.dumps({"security_group_ids": ["sg-0abc"], "subnets": ["subnet-0abc"]}))
    monkeypatch.setenv("SMMPI_CONFIG", str(cfg))
    req = MPIJob("demo", region="us-west-2").plan().request
    assert req["VpcConfig"] == {"Subnets": ["subnet-0abc"], "SecurityGroupIds": ["sg-0abc"]}
    own = MPIJob("demo", region="us-west-2", security_groups=["sg-0def"]).plan().request
    assert own["VpcConfig"] == {"Subnets": ["subnet-0abc"], "SecurityGroupIds": ["sg-0def"]}
    cfg.write_text(json.dumps({"security_group_ids": ["sg-0abc"]}))  # deployed without subnets
    with pytest.raises(BadInput) as info:
        MPIJob("demo", region="us-west-2").plan()
    assert info.value.field == "subnets" and "--subnet" in str(info.value)
    cfg.write_text("{}")
    assert "VpcConfig" not in MPIJob("demo", region="us-west-2").plan().request
