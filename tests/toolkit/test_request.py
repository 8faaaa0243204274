"""The container's reading of a CreateTrainingJob request: hyperparameters, hosts, world, argv."""

from __future__ import annotations

import json
from typing import Any

from smmpi.toolkit import request as rq
from tests.helpers import GOLDEN


def _golden(framework: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((GOLDEN / f"demo_3x2_{framework}.request.json").read_text())
    return data


def _request(hps: dict[str, str], instances: int = 3) -> dict[str, Any]:
    return {"ResourceConfig": {"InstanceCount": instances}, "HyperParameters": hps}


def test_hyperparameters_are_json_decoded_where_they_can_be() -> None:
    hps = {"a": '"x"', "b": "3", "c": "not json", "d": "true", "e": '{"k": 1}', "f": "0.5"}
    assert rq.decode_hyperparameters(_request(hps)) == {
        "a": "x",
        "b": 3,
        "c": "not json",
        "d": True,
        "e": {"k": 1},
        "f": 0.5,
    }
    assert rq.decode_hyperparameters({"HyperParameters": None}) == {}
    assert rq.decode_hyperparameters({}) == {}


def test_the_sdks_request_splits_into_the_programs_and_the_frameworks_hyperparameters() -> None:
    request = _golden("tensorflow")
    assert rq.user_hyperparameters(request) == {"model_dir": "/opt/ml/model"}
    # the toolkit consumes program, submit dir, region, job name and log level itself
    assert rq.framework_params(request) == {
        "sagemaker_mpi_enabled": True,
        "sagemaker_mpi_num_of_processes_per_host": 2,
        "sagemaker_mpi_custom_mpi_options": "",
    }
    assert rq.program(request) == "demo.py"
    assert rq.hosts(request) == ["algo-1", "algo-2", "algo-3"]
    assert (rq.processes_per_host(request), rq.world_size(request)) == (2, 6)
    assert rq.channels(request) == []


def test_the_programs_arguments_are_the_lines_tail() -> None:
    """What follows the script on the container's mpirun line (the golden line)."""
    for framework in ("tensorflow", "pytorch"):
        line: list[str] = json.loads((GOLDEN / f"demo_3x2_{framework}.mpirun.json").read_text())
        args = rq.program_args(_golden(framework))
        assert line[line.index("demo.py") + 1 :] == args
    assert rq.program_args(_golden("tensorflow")) == ["--model_dir", "/opt/ml/model"]


def test_the_world_is_ppn_times_hosts_unless_the_request_says_its_size() -> None:
    assert rq.world_size(_request({}, instances=2)) == 2  # one process per host by default
    assert rq.world_size(_request({rq.MPI_PROCESSES_PER_HOST: "4"})) == 12
    explicit = {rq.MPI_PROCESSES_PER_HOST: "4", rq.MPI_NUM_PROCESSES: "5"}
    assert rq.world_size(_request(explicit)) == 5


def test_hyperparameters_become_sorted_options_as_the_toolkit_maps_them() -> None:
    hps = {"lr": 0.1, "b": "x", "flag": True, "none": None, "opts": {"z": 1, "a": "y"}}
    assert rq.hyperparameter_args(hps) == [
        "-b",
        "x",
        "--flag",
        "True",
        "--lr",
        "0.1",
        "--none",
        "",
        "--opts",
        "a=y,z=1",
    ]
    assert rq.hyperparameter_args({}) == []


def test_channels_are_named_in_the_requests_order() -> None:
    request = {"InputDataConfig": [{"ChannelName": "train"}, {"ChannelName": "eval"}]}
    assert rq.channels(request) == ["train", "eval"]


def test_sagemaker_hyperparameters_never_reach_the_program() -> None:
    hps = {"sagemaker_program": '"t.py"', "sagemaker_mpi_enabled": "true", "epochs": "2"}
    request = _request(hps)
    assert rq.user_hyperparameters(request) == {"epochs": 2}
    assert rq.program_args(request) == ["--epochs", "2"]
    assert rq.framework_params(request) == {"sagemaker_mpi_enabled": True}
