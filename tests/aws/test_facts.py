"""SageMaker API facts: instance sizes, job names."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from smmpi.aws import facts
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


@pytest.mark.parametrize("service", ["sagemaker", "cloudwatch"])
def test_the_model_read_from_botocores_data_is_the_one_its_loader_gives(service: str) -> None:
    from botocore.loaders import create_loader

    facts.service_model.cache_clear()
    assert facts.service_model(service) == create_loader().load_service_model(service, "service-2")


def _run(code: str, env: dict[str, str]) -> str:
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    )
    return done.stdout.strip()


def test_checking_an_instance_type_and_count_imports_no_botocore() -> None:
    code = (
        "import sys\n"
        "from smmpi.aws.facts import known_instance_types\n"
        "from smmpi.spec.world import instance_range\n"
        "assert 'ml.c5.xlarge' in known_instance_types()\n"
        "print(instance_range(), 'botocore' in sys.modules)\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "AWS_DATA_PATH"}
    assert _run(code, env) == "(1, 512) False"


def test_a_model_in_aws_models_is_read_as_botocores_loader_would(tmp_path: Path) -> None:
    model = facts.service_model("sagemaker")
    version = model["metadata"]["apiVersion"]
    changed = json.loads(json.dumps(model))
    changed["shapes"]["TrainingInstanceType"]["enum"] = ["ml.only.xlarge"]
    folder = tmp_path / ".aws" / "models" / "sagemaker" / version
    folder.mkdir(parents=True)
    (folder / "service-2.json").write_text(json.dumps(changed))
    code = "from smmpi.aws.facts import known_instance_types; print(sorted(known_instance_types()))"
    env = dict(os.environ, HOME=str(tmp_path))
    assert _run(code, env) == "['ml.only.xlarge']"
