"""The mpirun line ModelTrainer's own MPI driver builds on algo-1, from the request's drivers."""

from __future__ import annotations

import importlib.util
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from smmpi.errors import SmmpiError
from smmpi.toolkit.drivers.line import (
    CONTAINER_PATH,
    CONTAINER_PYTHON,
    container_environment,
    driver_mpirun,
    forwarded_credentials,
)
from smmpi.toolkit.images import image_env
from smmpi.toolkit.shape import JobShape
from tests.helpers import GOLDEN


def sdk_drivers(folder: Path, distributed: dict[str, Any]) -> Path:
    """The ``sm_drivers`` channel as ModelTrainer uploads it, found without importing the SDK."""
    spec = importlib.util.find_spec("sagemaker")
    assert spec is not None and spec.submodule_search_locations
    source = Path(spec.submodule_search_locations[0]) / "modules" / "train" / "container_drivers"
    shutil.copytree(source, folder)
    (folder / "sourcecode.json").write_text(json.dumps({"entry_script": "demo.py"}))
    (folder / "distributed.json").write_text(json.dumps(distributed))
    return folder


def _golden(name: str) -> Any:
    return json.loads((GOLDEN / name).read_text())


@pytest.mark.parametrize("framework", ["tensorflow", "pytorch"])
def test_the_driver_builds_the_golden_line(framework: str, tmp_path: Path) -> None:
    """The golden demo request (3 x 2, epochs=3, smmpi's ``-np 6``) gives the golden line."""
    distributed = {"process_count_per_node": 2, "mpi_additional_options": ["-np", "6"]}
    drivers = sdk_drivers(tmp_path / "sm_drivers", distributed)
    request = _golden(f"demo_3x2_{framework}.model_trainer.request.json")
    line = driver_mpirun(request, drivers)
    assert line == _golden(f"demo_3x2_{framework}.model_trainer.mpirun.json")
    assert line[line.index("-m") - 1] == CONTAINER_PYTHON  # not this machine's interpreter
    assert forwarded_credentials(line) == []


def test_the_driver_forwards_the_credentials_in_the_containers_environment(
    tmp_path: Path,
) -> None:
    distributed = {"process_count_per_node": 1, "mpi_additional_options": []}
    drivers = sdk_drivers(tmp_path / "sm_drivers", distributed)
    request = _golden("demo_3x2_pytorch.model_trainer.request.json")
    request["Environment"] = {"AWS_SESSION_TOKEN": "t", "AWS_ACCESS_KEY_ID": "AKID"}
    request["ResourceConfig"]["InstanceType"] = "ml.p4d.24xlarge"
    line = driver_mpirun(request, drivers)
    assert forwarded_credentials(line) == ["AWS_ACCESS_KEY_ID", "AWS_SESSION_TOKEN"]
    assert "AKID" not in line and "t" not in line  # names only: each rank reads its own
    assert line[1:5] == ["--host", "algo-1,algo-2,algo-3", "-np", "1"]
    assert "FI_PROVIDER=efa" in line and "FI_EFA_USE_DEVICE_RDMA=1" in line


def test_a_drivers_channel_the_driver_cannot_run_is_one_error(tmp_path: Path) -> None:
    request = _golden("demo_3x2_pytorch.model_trainer.request.json")
    with pytest.raises(SmmpiError, match=r"^ModelTrainer's MPI driver did not build its line: "):
        driver_mpirun(request, tmp_path)  # no drivers there


def test_algo_1s_environment_is_the_images_the_requests_and_the_job_name() -> None:
    image = "pytorch-training:2.8.0-cpu-py312"
    shape = JobShape("mt-job", "", 2, 1, environment={"MINE": "1", "LANG": "C"}, image=image)
    env = container_environment(shape)
    assert env == {
        **image_env(image),
        "PATH": CONTAINER_PATH,
        "MINE": "1",
        "LANG": "C",
        "TRAINING_JOB_NAME": "mt-job",
    }
    renamed = JobShape("mt-job", "", 1, 1, environment={"TRAINING_JOB_NAME": "x"}, image=image)
    assert container_environment(renamed)["TRAINING_JOB_NAME"] == "mt-job"


def test_only_credential_names_after_x_count_as_forwarded() -> None:
    line = ["mpirun", "-x", "PATH", "-x", "AWS_SECRET_ACCESS_KEY", "AWS_ACCESS_KEY_ID", "-x"]
    assert forwarded_credentials(line) == ["AWS_SECRET_ACCESS_KEY"]
    assert forwarded_credentials(["-x", "AWS_SESSION_TOKEN=t"]) == []
