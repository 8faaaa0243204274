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


def test_the_default_instance_type_is_one_sagemaker_trains_on() -> None:
    """``smmpi run`` skips the botocore lookup for the default type: it must be in the enum."""
    from botocore.loaders import create_loader

    from smmpi.aws.facts import known_instance_types
    from smmpi.errors import BadInput
    from smmpi.spec import DEFAULT_INSTANCE_TYPE
    from smmpi.spec.instance_type import check_instance_type

    model = create_loader().load_service_model("sagemaker", "service-2")
    assert DEFAULT_INSTANCE_TYPE in model["shapes"]["TrainingInstanceType"]["enum"]
    assert known_instance_types() is not None and DEFAULT_INSTANCE_TYPE in known_instance_types()
    assert check_instance_type(DEFAULT_INSTANCE_TYPE) == DEFAULT_INSTANCE_TYPE
    with pytest.raises(BadInput, match="instance_type"):
        check_instance_type("ml.c5.3xlarge")
