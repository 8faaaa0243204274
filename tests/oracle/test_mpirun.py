"""The container's mpirun line: smmpi's prediction against MasterRunner._create_command()."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.oracle import matrix
from tests.oracle.compare import Substitutions, argv_diff


def _subs(built: matrix.Built, master: dict[str, Any], ours: list[str]) -> Substitutions:
    preload = next(t for t in master["command"] if t.startswith("LD_PRELOAD="))
    our_preload = next(t for t in ours if t.startswith("LD_PRELOAD="))
    python = master["command"][master["command"].index("-m") - 1]
    our_python = ours[ours.index("-m") - 1]
    return Substitutions(
        roots=list(built.roots.values()),
        pythons=[python, our_python],
        preloads=[preload.split("=", 1)[1], our_preload.split("=", 1)[1]],
    )


@pytest.mark.parametrize("case", [c.id for c in matrix.CASES])
def test_mpirun_argv_is_the_toolkits(differential: dict[str, Any], case: str) -> None:
    built: matrix.Built = differential["built"][case]
    hosts = differential["answer"]["cases"][case]
    master = hosts["algo-1"]
    assert master["runner"] == "MasterRunner"
    assert all(hosts[h]["runner"] == "WorkerRunner" for h in hosts if h != "algo-1")
    diff = argv_diff(master["command"], built.mpirun, _subs(built, master, built.mpirun))
    assert not diff, "\n".join(diff)


def test_the_oracle_is_the_pinned_toolkit(differential: dict[str, Any]) -> None:
    assert differential["answer"]["versions"] == {
        "sagemaker-training": "5.1.4",
        "sagemaker-tensorflow-training": "20.5.0",
        "sagemaker-pytorch-training": "3.0.0",
    }
    # the TensorFlow images run the toolkit their framework toolkit pins (<=4.8.3)
    assert differential["answer"]["tf_versions"]["sagemaker-training"] == "4.8.3"


def test_a_changed_token_is_named(differential: dict[str, Any]) -> None:
    """The comparison itself can fail, and says where."""
    built: matrix.Built = differential["built"]["tf-3x2-cpu-seed004"]
    master = differential["answer"]["cases"]["tf-3x2-cpu-seed004"]["algo-1"]
    ours = [t.replace("NCCL_MIN_NRINGS=4", "NCCL_MIN_NRINGS=8") for t in built.mpirun]
    diff = argv_diff(master["command"], ours, _subs(built, master, ours))
    assert len(diff) == 1 and "'NCCL_MIN_NRINGS=4' != smmpi 'NCCL_MIN_NRINGS=8'" in diff[0]


def test_trees_are_where_the_oracle_read_them(differential: dict[str, Any]) -> None:
    for built in differential["built"].values():
        for root in built.roots.values():
            assert (Path(root) / "input" / "config" / "resourceconfig.json").is_file()
