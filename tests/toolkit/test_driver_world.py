"""The SDK drivers' world: ``-np`` per node, as SageMaker runs it."""

from __future__ import annotations

from smmpi.toolkit.driver_world import driver_np, short_world, started_hosts


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
