"""A ModelTrainer request's drivers channel read as the SDK's MPI driver reads it."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from smmpi.errors import BadInput
from smmpi.runners.local.trainer_request import (
    DRIVERS,
    REMOTE_FUNCTION,
    channel_source,
    distributed_config,
    driver_world,
    trainer_shape,
)
from smmpi.toolkit.driver_world import driver_np


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
    shape, np, api = driver_world(request, {})
    assert (shape.instances, shape.ppn, np, api, shape.job_name) == (3, 2, 2, "remote", "rf-job")
    assert not shape.toolkit_tags
    request["AlgorithmSpecification"]["ContainerArguments"] = args  # the instance's CPUs
    assert driver_world(request, {})[0].ppn == len(os.sched_getaffinity(0))


def test_remote_function_request_runs_under_serve_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from smmpi.api import options
    from smmpi.runners.local.trainer import run_trainer

    monkeypatch.setenv("SMMPI_LOCAL_JOBS", str(tmp_path / "jobs"))
    request: dict[str, Any] = {
        "TrainingJobName": "rf-job",
        "AlgorithmSpecification": {"TrainingImage": "img", "ContainerEntrypoint": ["/bin/bash"]},
        "ResourceConfig": {"InstanceCount": 2, "InstanceType": "ml.c5.2xlarge"},
        "InputDataConfig": [{"ChannelName": REMOTE_FUNCTION}],
    }
    with pytest.raises(BadInput) as refused:
        run_trainer(request, None, options())  # type: ignore[arg-type]
    assert str(refused.value) == (
        'invalid request: "@remote\'s job script"; allowed: a run under smmpi serve (its ranks '
        "reach S3 through the job's own endpoint and key, which serve gives them)"
    )
    assert not (tmp_path / "jobs").exists()
