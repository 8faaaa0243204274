"""Fields of MPIJob that ModelTrainer can express reach its request, from either SDK: the
output path, network isolation and inter-container traffic encryption."""

from __future__ import annotations

from typing import Any

import pytest

from smmpi.spec import MPIJob
from tests.helpers import ROLE
from tests.sdk.sdk3 import sdk3_python

pytestmark = pytest.mark.usefixtures("no_aws_settings")

VPC = {"subnets": ["subnet-0123456789abcdef0"], "security_groups": ["sg-0123456789abcdef0"]}


@pytest.mark.parametrize("sdk", ["v2", "v3"])
def test_output_path_and_network_flags_reach_the_request(
    sdk: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    if sdk == "v3":
        monkeypatch.setenv("SMMPI_SDK3_PYTHON", sdk3_python())
    else:
        monkeypatch.delenv("SMMPI_SDK3_PYTHON", raising=False)
    vpc = VPC if sdk == "v2" else {}  # v2's ModelTrainer isolates or encrypts only in a VPC
    fields: dict[str, Any] = dict(
        **vpc,
        instances=2,
        ppn=2,
        role=ROLE,
        region="us-west-2",
        api="model-trainer",
        output_path="s3://smmpi-out-bucket/runs",
        network_isolation=True,
        encrypt_inter_container_traffic=True,
    )
    request = MPIJob("demo", **fields).plan().request
    assert request["OutputDataConfig"] == {
        "S3OutputPath": "s3://smmpi-out-bucket/runs",
        "CompressionType": "GZIP",
    }
    assert request["EnableNetworkIsolation"] is True
    assert request["EnableInterContainerTrafficEncryption"] is True
    if vpc:
        assert request["VpcConfig"] == {
            "SecurityGroupIds": vpc["security_groups"],
            "Subnets": vpc["subnets"],
        }
    else:
        assert "VpcConfig" not in request
    plain = MPIJob("demo", instances=2, ppn=2, role=ROLE, region="us-west-2", api="model-trainer")
    request = plain.plan().request
    assert request["OutputDataConfig"]["S3OutputPath"].endswith("/smmpi-demo")  # the SDK's
    assert "EnableNetworkIsolation" not in request


@pytest.mark.parametrize("field", ["network_isolation", "encrypt_inter_container_traffic"])
def test_v2_refuses_them_outside_a_vpc_in_one_line(
    field: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from smmpi.errors import BadInput

    monkeypatch.delenv("SMMPI_SDK3_PYTHON", raising=False)
    job = MPIJob("demo", role=ROLE, region="us-west-2", api="model-trainer", **{field: True})
    with pytest.raises(BadInput) as refused:
        job.plan()
    assert str(refused.value).startswith(
        f"invalid {field}: True; allowed: with api model-trainer, only in a VPC"
    ), refused.value
    assert refused.value.exit_code == 2
