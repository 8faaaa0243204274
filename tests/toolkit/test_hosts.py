"""The instances' names, the rank-to-instance map, and each emulated instance's ``/opt/ml`` tree."""

from __future__ import annotations

from pathlib import Path

from smmpi.toolkit.hosts import (
    CONTAINER_ROOT,
    HostDirs,
    host_dirs,
    host_name,
    host_of_rank,
    on_host,
)


def test_instances_are_named_algo_1_to_n() -> None:
    assert [host_name(i) for i in range(3)] == ["algo-1", "algo-2", "algo-3"]


def test_ranks_fill_each_instance_slot_by_slot() -> None:
    """``-map-by slot``: ppn consecutive ranks per instance, in instance order."""
    assert [host_of_rank(r, 2, 3) for r in range(6)] == [
        "algo-1",
        "algo-1",
        "algo-2",
        "algo-2",
        "algo-3",
        "algo-3",
    ]
    assert [host_of_rank(r, 1, 2) for r in range(2)] == ["algo-1", "algo-2"]
    # a rank past every instance's slots is placed on the last instance
    assert host_of_rank(6, 2, 3) == "algo-3"
    assert host_of_rank(99, 4, 2) == "algo-2"


def test_container_paths_move_under_the_hosts_tree_and_nothing_else_does(tmp_path: Path) -> None:
    dirs = host_dirs(tmp_path, "algo-2")
    root = tmp_path / "algo-2" / "opt" / "ml"
    assert dirs.root == root
    assert on_host("/opt/ml", dirs) == str(root)
    assert on_host("/opt/ml/model", dirs) == str(root / "model")
    assert on_host("/opt/ml/input/data/train/x.csv", dirs) == str(root / "input/data/train/x.csv")
    for value in ("/opt/mlx", "/opt/ml2/model", "opt/ml/model", "s3://b/opt/ml", "--lr"):
        assert on_host(value, dirs) == value
    assert on_host(3, dirs) == 3 and on_host(None, dirs) is None
    assert on_host("/opt/ml/model", None) == "/opt/ml/model"  # no host: the container's path


def test_the_tree_has_sagemakers_paths() -> None:
    dirs = HostDirs(Path(CONTAINER_ROOT))
    assert {
        "code": dirs.code,
        "input": dirs.input,
        "config": dirs.config,
        "data": dirs.data,
        "channel": dirs.channel("train"),
        "model": dirs.model,
        "output": dirs.output,
        "output_data": dirs.output_data,
        "intermediate": dirs.intermediate,
        "failure": dirs.failure,
    } == {
        "code": Path("/opt/ml/code"),
        "input": Path("/opt/ml/input"),
        "config": Path("/opt/ml/input/config"),
        "data": Path("/opt/ml/input/data"),
        "channel": Path("/opt/ml/input/data/train"),
        "model": Path("/opt/ml/model"),
        "output": Path("/opt/ml/output"),
        "output_data": Path("/opt/ml/output/data"),
        "intermediate": Path("/opt/ml/output/intermediate"),
        "failure": Path("/opt/ml/output/failure"),
    }


def test_create_makes_the_folders_and_leaves_the_failure_file_to_the_program(
    tmp_path: Path,
) -> None:
    dirs = host_dirs(tmp_path, "algo-1")
    dirs.create()
    dirs.create()  # a second time is harmless
    made = sorted(p.relative_to(dirs.root).as_posix() for p in dirs.root.rglob("*"))
    assert made == [
        "code",
        "input",
        "input/config",
        "input/data",
        "model",
        "output",
        "output/data",
        "output/intermediate",
    ]
    assert all((dirs.root / p).is_dir() for p in made)
    assert not dirs.failure.exists()
