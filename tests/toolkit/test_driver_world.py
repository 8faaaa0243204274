"""The SDK drivers' world: ``-np`` per node, as SageMaker runs it; its drivers channel read
as the SDK's MPI driver reads it."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from smmpi.errors import BadInput
from smmpi.toolkit.driver_world import (
    DRIVERS,
    REMOTE_FUNCTION,
    channel_source,
    distributed_config,
    driver_np,
    remote_shape,
    short_world,
    started_hosts,
    trainer_shape,
)
from smmpi.toolkit.plan import plan


def test_the_drivers_np_is_its_per_node_count_unless_options_give_another() -> None:
    assert driver_np({"process_count_per_node": 2}) == 2
    assert driver_np({}) == 1
    assert driver_np({"process_count_per_node": 2, "mpi_additional_options": ["-np", "4"]}) == 4
    assert driver_np({"mpi_additional_options": ["-np", "x"]}) is None
    assert driver_np({"mpi_additional_options": ["-np"]}) is None


def test_np_fills_algo_1_first_slot_by_slot() -> None:
    assert started_hosts(2, 2, 3) == ["algo-1"]
    assert started_hosts(3, 2, 3) == ["algo-1", "algo-2"]
    assert started_hosts(99, 2, 3) == ["algo-1", "algo-2", "algo-3"]


def test_a_short_world_is_said_with_each_apis_fix() -> None:
    line = short_world(2, 2, 2, "model-trainer")
    assert line is not None
    assert "2 of 2 x 2 = 4 ranks started (algo-1 only), as on SageMaker" in line
    assert "add '-np 4' to MPI(mpi_additional_options=...)" in line
    remote = short_world(3, 2, 2, "remote")
    assert remote is not None and "@remote's job script always runs -np nproc_per_node" in remote
    assert short_world(2, 2, 4, "model-trainer") is None
    assert short_world(2, 2, None, "model-trainer") is None


def _drivers(tmp_path: Path, distributed: object) -> Path:
    folder = tmp_path / DRIVERS
    folder.mkdir()
    (folder / "distributed.json").write_text(json.dumps(distributed), encoding="utf-8")
    (folder / "sourcecode.json").write_text(json.dumps({"entry_script": "train.py"}))
    return folder


def _request(folder: Path) -> dict[str, Any]:
    return {
        "TrainingJobName": "mt-job",
        "AlgorithmSpecification": {"TrainingImage": "img", "ContainerEntrypoint": ["/bin/sh"]},
        "ResourceConfig": {"InstanceCount": 3, "InstanceType": "ml.c5.xlarge"},
        "InputDataConfig": [
            {
                "ChannelName": DRIVERS,
                "DataSource": {"S3DataSource": {"S3Uri": folder.as_uri()}},
            }
        ],
    }


def test_the_world_and_np_are_the_drivers(tmp_path: Path) -> None:
    folder = _drivers(
        tmp_path, {"process_count_per_node": 2, "mpi_additional_options": ["-np", "6"]}
    )
    request = _request(folder)
    assert channel_source(request, DRIVERS, {}) == folder  # a file:// URI is read here
    assert channel_source(request, DRIVERS, {DRIVERS: tmp_path}) == tmp_path
    shape = trainer_shape(request, folder)
    assert (shape.instances, shape.ppn, shape.script, shape.job_name) == (
        3,
        2,
        "train.py",
        "mt-job",
    )
    assert not shape.toolkit_tags  # the driver's mpirun keeps its own [1,R] tags
    assert driver_np(distributed_config(folder)) == 6  # Open MPI takes the last -np


def test_a_drivers_channel_without_mpi_is_refused_in_one_line(tmp_path: Path) -> None:
    folder = _drivers(tmp_path, {"process_count_per_node": 2})
    with pytest.raises(BadInput, match=r"^invalid sm_drivers/distributed.json: "):
        trainer_shape(_request(folder), folder)
    request = _request(folder)
    request["InputDataConfig"][0]["DataSource"]["S3DataSource"]["S3Uri"] = "s3://b/k"
    with pytest.raises(BadInput, match=r"^invalid InputDataConfig.sm_drivers: "):
        channel_source(request, DRIVERS, {})


def test_remote_function_world_is_nproc_per_node_and_its_np_is_per_node() -> None:
    args = ["--s3_base_uri", "s3://b/rf/job", "--distribution", "mpirun"]
    request: dict[str, Any] = {
        "TrainingJobName": "rf-job",
        "AlgorithmSpecification": {
            "TrainingImage": "img",
            "ContainerEntrypoint": ["/bin/bash", "job_driver.sh"],
            "ContainerArguments": [*args, "--user_nproc_per_node", "2"],
        },
        "ResourceConfig": {"InstanceCount": 3, "InstanceType": "ml.c5.2xlarge"},
        "InputDataConfig": [{"ChannelName": REMOTE_FUNCTION}],
    }
    planned = plan(request)
    shape = planned.shape
    assert (shape.instances, shape.ppn, planned.driver_np, planned.api) == (3, 2, 2, "remote")
    assert shape.job_name == "rf-job" and not shape.toolkit_tags
    request["AlgorithmSpecification"]["ContainerArguments"] = args  # the instance's CPUs
    assert remote_shape(request).ppn == len(os.sched_getaffinity(0))
    request["AlgorithmSpecification"]["ContainerArguments"] = [*args, "--user_nproc_per_node", "0"]
    with pytest.raises(BadInput, match="--user_nproc_per_node"):
        remote_shape(request)
