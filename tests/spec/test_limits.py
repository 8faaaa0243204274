"""Checks on a job as a whole: each field's type, SageMaker's limits, the run time's range,
the region's images, and a log folder that never takes a write through a link."""

from __future__ import annotations

from pathlib import Path

import pytest

from smmpi.errors import BadInput
from smmpi.spec.limits import (
    check_limits,
    check_log_dir,
    check_region,
    check_run_choices,
    check_types,
    run_seconds,
)


@pytest.mark.parametrize(
    ("fields", "line"),
    [
        ({"framework": 3}, "invalid framework: 3; allowed: a string"),
        ({"source_dir": 3}, "invalid source_dir: 3; allowed: a path to an existing directory"),
        ({"mpi_options": [1]}, "invalid mpi_options: [1]; allowed: a string of mpirun options"),
        ({"env": 5}, "invalid env: 5; allowed: a mapping, or a list of KEY=VALUE strings"),
        ({"inputs": ["a=s3://b/1", "a=s3://b/2"]}, "invalid inputs: 'a'; allowed: each channel"),
    ],
)
def test_a_field_of_the_wrong_type_is_one_line(fields: dict[str, object], line: str) -> None:
    with pytest.raises(BadInput) as refused:
        check_types(fields)
    assert str(refused.value).startswith(line)


def test_sagemakers_counts_are_checked_with_smmpis_own_tag() -> None:
    check_limits("pytorch", {"a": "1"}, {}, {f"t{i}": "v" for i in range(49)}, {})
    with pytest.raises(BadInput, match=r"^invalid tags: "):
        check_limits("pytorch", {}, {}, {f"t{i}": "v" for i in range(50)}, {})  # + smmpi:managed
    with pytest.raises(BadInput, match=r"^invalid hyperparameter"):
        check_limits("pytorch", {"a": "x" * 2501}, {}, {}, {})


def test_run_time_is_whole_seconds_in_sagemakers_range() -> None:
    assert run_seconds("max_run", 3600) == 3600 and run_seconds("max_run", "60") == 60
    for bad in (0, 2419201, 1.5, True, "１２", "1e3"):
        with pytest.raises(BadInput, match=r"^invalid max_run: "):
            run_seconds("max_run", bad)


def test_run_choices_are_checked_as_submits_are() -> None:
    assert check_run_choices("pytorch", ["lr=0.1"], {"A": "1"}, "-x B=2") == (
        {"lr": "0.1"},
        {"A": "1"},
        "-x B=2",
    )
    with pytest.raises(BadInput, match="in a TensorFlow job"):
        check_run_choices("tensorflow", ["msg=it's"], None, None)
    with pytest.raises(BadInput, match=r"^invalid mpi_options"):
        check_run_choices("pytorch", None, None, "-np 4")


def test_a_region_without_the_frameworks_images_is_refused() -> None:
    assert check_region("pytorch", "2.8.0", "us-west-2") == "us-west-2"
    with pytest.raises(BadInput, match=r"^invalid region \(from SMMPI_REGION\): 'moon-1'"):
        check_region("pytorch", "2.8.0", "moon-1", " (from SMMPI_REGION)")


def test_a_log_folder_is_made_and_its_logs_never_written_through_a_link(tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    check_log_dir(logs)
    assert logs.is_dir()
    (logs / "notes.txt").symlink_to("/etc/hostname")  # not a name smmpi writes: left alone
    check_log_dir(logs)
    (logs / "rank-0.log").symlink_to(tmp_path / "victim")
    with pytest.raises(BadInput, match="smmpi never writes through a link"):
        check_log_dir(logs)
    (tmp_path / "file").write_text("")
    with pytest.raises(BadInput, match=r"a folder smmpi can create \("):
        check_log_dir(tmp_path / "file" / "logs")
