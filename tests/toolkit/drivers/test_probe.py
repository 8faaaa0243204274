"""The probe: ModelTrainer's own MPI driver run on algo-1's variables, up to its mpirun line."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from smmpi.toolkit.drivers.line import PROBE, container_environment
from smmpi.toolkit.environment import input_data_config, resource_config
from smmpi.toolkit.shape import JobShape
from tests.toolkit.drivers.test_line import sdk_drivers

IMAGE = "pytorch-training:2.8.0-gpu-py312"


def _given(instance_type: str, environment: dict[str, str]) -> dict[str, Any]:
    """What :func:`~smmpi.toolkit.drivers.line.driver_mpirun` gives the probe on algo-1."""
    shape = JobShape(
        "mt-job",
        "",
        2,
        1,
        channels={"code": "", "sm_drivers": ""},
        environment=environment,
        instance_type=instance_type,
        image=IMAGE,
    )
    return {
        "resource_config": resource_config(shape, "algo-1"),
        "input_data_config": input_data_config(shape),
        "hyperparameters": {"epochs": "3", "name": '"x"'},
        "environment": container_environment(shape),
    }


def _probe(drivers: Path, given: dict[str, Any], env: dict[str, str] | None = None) -> Any:
    done = subprocess.run(
        [sys.executable, "-I", "-B", str(PROBE), str(drivers)],
        input=json.dumps(given),
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
        env=env,
    )
    return json.loads(done.stdout.strip().splitlines()[-1])["mpirun"]


def test_the_probe_prints_the_line_the_driver_would_run(tmp_path: Path) -> None:
    distributed = {"process_count_per_node": 2, "mpi_additional_options": ["-x", "A=1"]}
    drivers = sdk_drivers(tmp_path / "sm_drivers", distributed)
    line = _probe(drivers, _given("ml.p4d.24xlarge", {}))
    assert line[:5] == ["mpirun", "--host", "algo-1:2,algo-2:2", "-np", "2"]
    # the driver's environment.py read the resource config: its instance type and host count
    i = line.index("plm_rsh_num_concurrent")
    assert line[i - 1 : i + 2] == ["-mca", "plm_rsh_num_concurrent", "2"]
    assert "FI_PROVIDER=efa" in line and "FI_EFA_USE_DEVICE_RDMA=1" in line
    assert line[line.index("PATH") + 1 : line.index("PATH") + 3] == ["-x", "A=1"]
    # the probe's own interpreter runs the script (the line puts the container's back)
    tail = [sys.executable, "-m", "mpi4py", "demo.py", "--epochs", "3", "--name", "x"]
    assert line[-8:] == tail


def test_the_driver_sees_only_the_containers_environment(tmp_path: Path) -> None:
    """The probe's own variables never reach the driver: here, the credentials it forwards."""
    distributed = {"process_count_per_node": 1, "mpi_additional_options": []}
    drivers = sdk_drivers(tmp_path / "sm_drivers", distributed)
    own = {**os.environ, "AWS_ACCESS_KEY_ID": "AKID", "AWS_SESSION_TOKEN": "t"}
    line = _probe(drivers, _given("ml.c5.xlarge", {}), own)
    assert "AWS_ACCESS_KEY_ID" not in line and "AWS_SESSION_TOKEN" not in line
    assert "FI_PROVIDER=efa" not in line
    line = _probe(drivers, _given("ml.c5.xlarge", {"AWS_SECRET_ACCESS_KEY": "s"}), own)
    assert line[line.index("AWS_SECRET_ACCESS_KEY") - 1] == "-x"
    assert "AWS_ACCESS_KEY_ID" not in line and "s" not in line


def test_the_probe_changes_nothing_here(tmp_path: Path) -> None:
    """sshd, the ssh bootstrap, the status files and /etc/environment are the probe's to skip:
    the drivers' folder and this machine's /etc/environment are as they were."""
    distributed = {"process_count_per_node": 1, "mpi_additional_options": []}
    drivers = sdk_drivers(tmp_path / "sm_drivers", distributed)
    etc = Path("/etc/environment")
    before = etc.read_bytes() if etc.exists() else None
    files = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*"))
    assert _probe(drivers, _given("ml.c5.xlarge", {}))[0] == "mpirun"
    assert sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*")) == files
    assert (etc.read_bytes() if etc.exists() else None) == before
