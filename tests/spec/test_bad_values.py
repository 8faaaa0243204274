"""The spec's checks of run times, mpirun options' values, empty names and long paths, as the
Python API meets them, held to the facts they come from (botocore's model, Open MPI's help)."""

from __future__ import annotations

import math
import os
import re
import subprocess
from pathlib import Path

import pytest

from smmpi.aws.facts import MAX_RUN_LIMIT, MAX_RUN_MIN, shared_loader
from smmpi.bounded import lookup
from smmpi.errors import BadInput
from smmpi.runners.base import RunOptions
from smmpi.spec import MPIJob
from smmpi.spec.checks import parse_mpi_options
from smmpi.spec.launch import VALUE_COUNTS
from smmpi.spec.limits import check_timeout
from tests.helpers import BIN


def test_the_run_time_range_is_sagemakers() -> None:
    """At least botocore's minimum for MaxRuntimeInSeconds/MaxWaitTimeInSeconds, at most the
    28 days its documentation states."""
    shapes = shared_loader().load_service_model("sagemaker", "service-2")["shapes"]
    assert shapes["MaxRuntimeInSeconds"]["min"] == MAX_RUN_MIN
    assert shapes["MaxWaitTimeInSeconds"]["min"] == MAX_RUN_MIN
    member = shapes["StoppingCondition"]["members"]["MaxRuntimeInSeconds"]
    assert "The maximum value is 28 days." in member["documentation"]
    assert MAX_RUN_LIMIT == 28 * 24 * 3600


@pytest.mark.parametrize("value", [0, -1, 2419201, 10**400, "9" * 400, 1.5, "1e3", "nan", "", True])
@pytest.mark.parametrize("field", ["max_run", "max_wait"])
def test_a_run_time_outside_sagemakers_range_is_refused(field: str, value: object) -> None:
    extra = {"use_spot": True} if field == "max_wait" else {}
    with pytest.raises(BadInput) as err:
        MPIJob("demo", instances=1, ppn=2, **{field: value}, **extra)  # type: ignore[arg-type]
    assert err.value.field == field
    assert err.value.allowed.startswith("whole seconds from 1 to 2419200")


@pytest.mark.parametrize("value", [1, "1", 2419200, "2419200"])
def test_the_ends_of_the_run_time_range_are_taken(value: object) -> None:
    job = MPIJob("demo", instances=1, ppn=2, max_run=value)  # type: ignore[arg-type]
    assert job.max_run == int(str(value))


@pytest.mark.parametrize(
    "value", [1e-9, 0, -1, 0.999, 1e30, 10**400, 2419200.5, math.nan, math.inf, "5"]
)
def test_a_timeout_outside_sagemakers_range_is_refused_wherever_a_run_is_built(
    value: object,
) -> None:
    with pytest.raises(BadInput) as err:
        RunOptions(timeout=value)  # type: ignore[arg-type]
    assert err.value.field == "timeout"
    assert "from 1 to 2419200" in err.value.allowed
    with pytest.raises(BadInput):
        check_timeout(value, "--timeout")


@pytest.mark.parametrize("value", [1, 1.5, 2419200, None])
def test_a_timeout_in_range_is_taken(value: float | None) -> None:
    assert RunOptions(timeout=value).timeout == value


@pytest.mark.parametrize(
    ("options", "token"),
    [
        ("-x", "-x takes 1 value"),
        ("-x A=1 -x", "-x takes 1 value"),
        ("-mca btl", "-mca takes 2 values"),
        ("--mca btl_tcp_if_include", "--mca takes 2 values"),
        ("-gmca", "-gmca takes 2 values"),
        ("--bind-to", "--bind-to takes 1 value"),
        ("-bind-to", "-bind-to takes 1 value"),
        ("-x --bind-to none", "-x takes 1 value"),
        ("--bind-to -x A=1", "--bind-to takes 1 value"),
        ("-mca btl --oversubscribe", "-mca takes 2 values"),
        ("--output-filename", "--output-filename takes 1 value"),
        ("--NCCL_DEBUG", "--NCCL_DEBUG takes 1 value"),
    ],
)
def test_an_option_without_its_values_is_refused(options: str, token: str) -> None:
    with pytest.raises(BadInput) as err:
        MPIJob("demo", instances=1, ppn=2, mpi_options=options)
    assert err.value.field == "mpi_options"
    assert token in err.value.allowed


@pytest.mark.parametrize(
    "options",
    [
        "-x A=1 --bind-to core",
        "-mca btl ^openib -x A",
        "--bind-to=core",
        "--NCCL_DEBUG=WARN",
        "--NCCL_DEBUG WARN --oversubscribe",
        "-mca btl_tcp_port_min_v4 -1",
        "--tag-output --report-bindings",
    ],
)
def test_options_with_their_values_are_taken(options: str) -> None:
    assert " ".join(parse_mpi_options(options)) == options


def test_the_value_counts_are_open_mpis_own() -> None:
    """Every option that takes values, and how many, as Open MPI 4.1's mpirun lists them
    (``--help`` takes an optional topic; ``--NCCL_DEBUG`` is the container toolkit's)."""
    env = {**os.environ, "OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"}
    mpirun = str(BIN / "mpirun")
    version = subprocess.run(
        [mpirun, "--version"], capture_output=True, text=True, env=env, timeout=120
    )
    assert "(Open MPI) 4.1." in version.stdout, version.stdout
    done = subprocess.run(
        [mpirun, "--help", "all"], capture_output=True, text=True, env=env, timeout=120
    )
    listed: dict[str, int] = {}
    for line in done.stdout.splitlines():
        found = re.match(r"\s*((?:-{1,2}[\w-]+\|?)+)\s+((?:<arg\d>\s*)+)", line)
        if found:
            for name in found.group(1).split("|"):
                listed[name.lstrip("-")] = found.group(2).count("<arg")
    assert len(listed) > 40, done.stdout
    del listed["h"], listed["help"]
    assert {k: v for k, v in VALUE_COUNTS.items() if k != "NCCL_DEBUG"} == listed


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("framework", ""),
        ("framework_version", ""),
        ("instance_type", ""),
        ("source_dir", ""),
    ],
)
def test_an_empty_name_is_refused_not_defaulted(field: str, value: str) -> None:
    with pytest.raises(BadInput) as err:
        MPIJob("demo", instances=1, ppn=2, **{field: value})  # type: ignore[arg-type]
    assert err.value.field == field


def test_a_run_refuses_an_empty_framework_and_instance_type() -> None:
    from smmpi import api

    for field in ("framework", "instance_type", "framework_version"):
        with pytest.raises(BadInput) as err:
            api.run_entry("demo", instances=1, ppn=2, **{field: ""})
        assert err.value.field == field


@pytest.mark.parametrize(
    "path",
    ["/tmp/" + "e" * 256 + ".py", "e" * 10000, "/" + "/".join(["d" * 200] * 21)],
    ids=["long-name", "long-entry", "long-path"],
)
def test_a_path_over_the_systems_limits_is_one_line(path: str) -> None:
    with pytest.raises(BadInput) as err:
        MPIJob(path, instances=1, ppn=2)
    assert err.value.field == "ENTRY"
    assert "at most 4095 bytes, each name in it at most 255 bytes" in err.value.allowed
    assert len(str(err.value)) < 300  # the path is cut, its length said
    assert f"({len(path)} characters)" in str(err.value)


def test_a_path_that_cannot_be_looked_up_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "a").symlink_to(tmp_path / "b")
    (tmp_path / "b").symlink_to(tmp_path / "a")
    with pytest.raises(BadInput) as err:
        lookup("ENTRY", tmp_path / "a" / "train.py")
    assert err.value.field == "ENTRY" and "symbolic links" in err.value.allowed
    assert lookup("ENTRY", tmp_path / "missing.py") is False
    assert lookup("ENTRY", tmp_path) is True
