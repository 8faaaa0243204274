"""Where a job goes: role, bucket, region and VPC by the documented precedence."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from smmpi.errors import BadInput
from smmpi.spec import MPIJob

pytestmark = pytest.mark.usefixtures("no_aws_settings")


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
