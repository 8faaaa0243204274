"""The container planned from a request in one call: the world, algo-1's line, each host's files."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest

from smmpi.catalog import resolve
from smmpi.errors import BadInput
from smmpi.toolkit.driver_world import DRIVERS
from smmpi.toolkit.mpirun import container_mpirun
from smmpi.toolkit.offline import request_from_program
from smmpi.toolkit.plan import is_entrypoint_request, plan
from smmpi.toolkit.shape import shape_from_request


def test_an_estimators_plan_is_the_toolkits_reading_of_its_request() -> None:
    request = request_from_program(resolve("demo"), 3, 2)
    planned = plan(request, ("--x", "1"))
    assert planned.shape == shape_from_request(request, ("--x", "1"))
    assert planned.line == [*container_mpirun(request), "--x", "1"]
    assert planned.line[planned.line.index("mpi4py") + 1] == "demo.py"
    assert not planned.entrypoint and planned.driver_np is None
    assert planned.hyperparameters == request["HyperParameters"]  # hyperparameters.json
    files = planned.files("algo-2")
    assert files["resourceconfig.json"]["current_host"] == "algo-2"
    assert files["resourceconfig.json"]["hosts"] == ["algo-1", "algo-2", "algo-3"]
    assert files["hyperparameters.json"] == request["HyperParameters"]
    with pytest.raises(dataclasses.FrozenInstanceError):
        planned.shape = planned.shape  # type: ignore[misc]
    with pytest.raises(TypeError):  # (what every host's hyperparameters.json holds)
        planned.hyperparameters["sagemaker_program"] = '"other.py"'  # type: ignore[index]


def test_an_installed_package_runs_as_a_module_on_the_same_line() -> None:
    request = request_from_program(resolve("demo"), 2, 1)
    planned = plan(request).installed()
    assert planned.shape.package
    assert planned.line == container_mpirun(request, package=True)
    assert planned.line[planned.line.index("mpi4py") + 1 :][:2] == ["-m", "demo"]


def test_a_requests_own_start_is_planned_from_its_drivers_channel(tmp_path: Path) -> None:
    drivers = tmp_path / DRIVERS
    drivers.mkdir()
    distributed = {"process_count_per_node": 2, "mpi_additional_options": ["-np", "4"]}
    (drivers / "distributed.json").write_text(json.dumps(distributed), encoding="utf-8")
    (drivers / "sourcecode.json").write_text(json.dumps({"entry_script": "train.py"}))
    request = _trainer_request("s3://bucket/drivers")
    assert is_entrypoint_request(request)
    planned = plan(request, channels={DRIVERS: drivers})  # (what the SDK would upload)
    assert planned.entrypoint and planned.line == ["/bin/bash", "-c", "sm_train.sh"]
    assert (planned.shape.instances, planned.shape.ppn, planned.driver_np) == (2, 2, 4)
    assert planned.environment["TRAINING_JOB_NAME"] == "mt-job"
    assert planned.environment["MY_SETTING"] == "1"
    assert not planned.shape.toolkit_tags  # the driver's mpirun keeps its own tags


def test_a_drivers_channel_not_read_here_is_refused_in_one_line() -> None:
    with pytest.raises(BadInput, match=r"^invalid InputDataConfig.sm_drivers: "):
        plan(_trainer_request("s3://bucket/drivers"))


def _trainer_request(uri: str) -> dict[str, Any]:
    return {
        "TrainingJobName": "mt-job",
        "AlgorithmSpecification": {
            "TrainingImage": "pytorch-training:2.8.0-cpu-py312",
            "ContainerEntrypoint": ["/bin/bash"],
            "ContainerArguments": ["-c", "sm_train.sh"],
        },
        "ResourceConfig": {"InstanceCount": 2, "InstanceType": "ml.c5.xlarge"},
        "Environment": {"MY_SETTING": "1"},
        "InputDataConfig": [
            {"ChannelName": DRIVERS, "DataSource": {"S3DataSource": {"S3Uri": uri}}}
        ],
    }
