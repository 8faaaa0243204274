"""``smmpi run``'s request, built offline from its flags: what the toolkit reads of it."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from smmpi.catalog import resolve
from smmpi.errors import BadInput
from smmpi.toolkit.environment import hyperparameters_json
from smmpi.toolkit.offline import Choices, Framework, request_from_program, run_job_name
from smmpi.toolkit.shape import shape_from_request


def test_the_request_is_what_the_toolkit_reads_of_the_default_estimators() -> None:
    program = resolve("demo")
    request = request_from_program(
        program, 3, 2, "ml.c5.2xlarge", "eu-west-1", "s3://b/k/sourcedir.tar.gz"
    )
    hps = request["HyperParameters"]
    assert all(isinstance(v, str) for v in hps.values())  # JSON-encoded, as the SDK sends them
    assert json.loads(hps["sagemaker_program"]) == "demo.py"
    assert json.loads(hps["sagemaker_mpi_num_of_processes_per_host"]) == 2
    assert json.loads(hps["model_dir"]) == "/opt/ml/model"  # TensorFlow's estimator adds it
    shape = shape_from_request(request, ["--extra", "1"])
    assert (shape.instances, shape.ppn, shape.world_size) == (3, 2, 6)
    assert shape.job_name == run_job_name(program) == "smmpi-run-demo"
    assert shape.image.startswith("tensorflow-training:") and shape.image.endswith("-cpu-py312")
    assert shape.user_args == ["--model_dir", "/opt/ml/model", "--extra", "1"]
    assert (shape.region, shape.module_dir) == ("eu-west-1", "s3://b/k/sourcedir.tar.gz")
    # the instances' hyperparameters.json is the request's, key for key
    assert hyperparameters_json(shape) == hps


def test_the_users_choices_reach_the_request() -> None:
    request = request_from_program(
        resolve("demo"),
        1,
        1,
        framework=Framework("pytorch"),
        choices=Choices(["lr=0.1"], ["A=b"], "-x NCCL_DEBUG=INFO"),
    )
    shape = shape_from_request(request)
    assert shape.image.startswith("pytorch-training:")
    assert dict(shape.hyperparameters) == {"lr": "0.1"}  # no model_dir: not TensorFlow
    assert dict(shape.environment) == {"A": "b"}
    assert shape.custom_mpi_options == "-x NCCL_DEBUG=INFO"


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"instances": 0}, "instances"),
        ({"ppn": "two"}, "ppn"),
        ({"instance_type": "c5.large"}, "instance_type"),
    ],
)
def test_bad_flags_are_one_line_naming_the_field(kwargs: dict[str, object], field: str) -> None:
    args: dict[str, object] = {"instances": 1, "ppn": 1, **kwargs}
    with pytest.raises(BadInput) as err:
        request_from_program(resolve("demo"), **args)  # type: ignore[arg-type]
    assert err.value.exit_code == 2
    assert str(err.value).startswith(f"invalid {field}: "), str(err.value)


def test_the_request_is_built_without_the_sagemaker_sdk() -> None:
    code = (
        "import sys\n"
        "from smmpi.catalog import resolve\n"
        "from smmpi.toolkit.offline import request_from_program\n"
        "request_from_program(resolve('demo'), 3, 2)\n"
        "print(sorted(m for m in sys.modules if m == 'sagemaker' or m.startswith('boto')))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    )
    assert done.stdout.strip() == "[]", done.stdout
