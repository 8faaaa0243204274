"""The job as the container sees it, read from a request: world, program, arguments, image."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from smmpi.errors import BadInput
from smmpi.toolkit.hosts import host_dirs
from smmpi.toolkit.shape import JobShape, shape_from_request
from tests.helpers import GOLDEN


def _golden(framework: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((GOLDEN / f"demo_3x2_{framework}.request.json").read_text())
    return data


def test_the_sdks_request_gives_the_job_the_toolkit_sees() -> None:
    request = _golden("tensorflow")
    shape = shape_from_request(request, ["--extra", "1"])
    assert (shape.job_name, shape.script, shape.module_name) == (
        "smmpi-demo-GOLDEN",
        "demo.py",
        "demo",
    )
    assert (shape.instances, shape.ppn, shape.world_size) == (3, 2, 6)
    assert shape.hosts == ["algo-1", "algo-2", "algo-3"]
    assert dict(shape.hyperparameters) == {"model_dir": "/opt/ml/model"}
    assert list(shape.user_args) == ["--model_dir", "/opt/ml/model", "--extra", "1"]
    assert (shape.instance_type, shape.num_cpus) == ("ml.c5.2xlarge", 8)
    assert shape.image == request["AlgorithmSpecification"]["TrainingImage"]
    assert shape.framework_module == "sagemaker_tensorflow_container.training:main"
    assert (shape.region, shape.sagemaker_job_name) == ("us-west-2", "smmpi-demo-GOLDEN")
    assert shape.module_dir == json.loads(request["HyperParameters"]["sagemaker_submit_directory"])
    assert (shape.custom_mpi_options, dict(shape.channels), dict(shape.environment)) == ("", {}, {})
    assert shape.toolkit_tags and not shape.package
    pytorch = shape_from_request(_golden("pytorch"))
    assert pytorch.framework_module == "sagemaker_pytorch_container.training:main"
    assert list(pytorch.user_args) == [] and dict(pytorch.hyperparameters) == {}


def test_channels_environment_and_mpi_options_are_read_as_the_container_reads_them() -> None:
    request = _golden("pytorch")
    request["InputDataConfig"] = [
        {"ChannelName": "train", "ContentType": "text/csv"},
        {"ChannelName": "eval"},
    ]
    request["Environment"] = {"A": "b", "N": 1}
    request["HyperParameters"]["sagemaker_mpi_custom_mpi_options"] = '"-x NCCL_DEBUG=WARN"'
    request["ResourceConfig"]["InstanceType"] = "ml.not-a-type"
    shape = shape_from_request(request)
    assert dict(shape.channels) == {"train": "text/csv", "eval": ""}
    assert dict(shape.environment) == {"A": "b", "N": "1"}
    assert shape.custom_mpi_options == "-x NCCL_DEBUG=WARN"
    assert shape.num_cpus == 0  # unknown instance type: this machine's CPUs


def test_a_request_without_a_program_or_mpi_is_refused_naming_what_is_missing() -> None:
    request = _golden("pytorch")
    del request["HyperParameters"]["sagemaker_program"]
    with pytest.raises(BadInput, match=r"^invalid request: .*'sagemaker_program'"):
        shape_from_request(request)
    request = _golden("pytorch")
    del request["ResourceConfig"]["InstanceCount"]
    with pytest.raises(BadInput, match=r"^invalid request: .*'InstanceCount'"):
        shape_from_request(request)
    for value in (None, "false"):
        request = _golden("pytorch")
        if value is None:
            del request["HyperParameters"]["sagemaker_mpi_enabled"]
        else:
            request["HyperParameters"]["sagemaker_mpi_enabled"] = value
        with pytest.raises(BadInput) as err:
            shape_from_request(request)
        assert err.value.field == "HyperParameters.sagemaker_mpi_enabled"


def test_container_paths_in_arguments_name_each_hosts_own_tree(tmp_path: Path) -> None:
    shape = JobShape(
        job_name="j",
        script="pkg/train.py",
        instances=2,
        ppn=1,
        hyperparameters={"model_dir": "/opt/ml/model", "lr": 0.1},
        user_args=["--model_dir", "/opt/ml/model", "--data", "/opt/ml/input/data/train"],
    )
    dirs = host_dirs(tmp_path, "algo-2")
    assert shape.args(dirs) == [
        "--model_dir",
        str(dirs.model),
        "--data",
        str(dirs.channel("train")),
    ]
    assert shape.args() == list(shape.user_args)  # no host: the container's own paths
    assert shape.host_hyperparameters(dirs) == {"model_dir": str(dirs.model), "lr": 0.1}
    assert shape.module_name == "pkg.train"
    assert JobShape("j", "run", 1, 1).module_name == "run"


@pytest.mark.parametrize(
    ("given", "world", "per_host", "asked"),
    [
        (None, 6, [2, 2, 2], "3 x 2 = 6 ranks"),
        ("3", 3, [2, 1, 0], "3 ranks (sagemaker_mpi_num_processes) on 3 x 2 slots"),
        ("1", 1, [1, 0, 0], "1 ranks (sagemaker_mpi_num_processes) on 3 x 2 slots"),
        ("8", 8, [2, 2, 2], "8 ranks (sagemaker_mpi_num_processes) on 3 x 2 slots"),
    ],
)
def test_sagemaker_mpi_num_processes_is_the_containers_np_placed_by_slot(
    given: str | None, world: int, per_host: list[int], asked: str
) -> None:
    """The toolkit runs ``mpirun --host algo-1:2,algo-2:2,algo-3:2 -np K`` for an explicit
    ``sagemaker_mpi_num_processes`` (sagemaker_training/mpi.py): K ranks, by slot."""
    request = _golden("pytorch")
    if given is not None:
        request["HyperParameters"]["sagemaker_mpi_num_processes"] = given
    shape = shape_from_request(request)
    assert shape.world_size == world
    assert [shape.ranks_on(i) for i in range(3)] == per_host
    assert shape.ranked_hosts == [h for h, n in zip(shape.hosts, per_host, strict=True) if n]
    assert shape.asked == asked
    assert shape.counts.startswith("3 emulated host(s) x 2 process(es)")


@pytest.mark.parametrize("given", ["0", "-2", "two", "1.5", "\uff13", "1_0"])
def test_a_num_processes_that_is_no_count_of_ranks_is_refused(given: str) -> None:
    request = _golden("pytorch")
    request["HyperParameters"]["sagemaker_mpi_num_processes"] = given
    with pytest.raises(BadInput) as err:
        shape_from_request(request)
    assert err.value.field == "HyperParameters.sagemaker_mpi_num_processes"
    assert err.value.allowed == "a whole number of ranks, 1 or more"
