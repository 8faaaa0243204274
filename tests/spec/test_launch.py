"""mpirun options that would change the world or the launch are refused, and every option
comes with its values, as Open MPI 4.1 and the container's toolkit read them."""

from __future__ import annotations

import pytest

from smmpi.errors import BadInput
from smmpi.spec.launch import check_launch_options


@pytest.mark.parametrize(
    "argv",
    [
        ["-x", "NCCL_DEBUG=INFO", "--bind-to", "core"],
        ["-mca", "btl_tcp_if_include", "eth0", "--report-bindings"],
        ["--timeout", "-1"],  # a negative number is a value, not an option
        ["--NCCL_DEBUG=WARN"],  # given with '='
        [],
    ],
)
def test_options_that_leave_world_and_launch_alone_pass(argv: list[str]) -> None:
    check_launch_options(argv, " ".join(argv))


@pytest.mark.parametrize(
    ("argv", "why"),
    [
        (["-np", "4"], "-np: ranks are instances x ppn"),
        (["--host", "a,b"], "--host: the hosts are algo-1..algo-N"),
        (["--map-by=node"], "--map-by=node: the container puts ppn ranks on each host"),
        (["-mca", "plm_rsh_agent", "ssh"], "-mca plm_rsh_agent: the container starts the ranks"),
        (["--wdir", "/tmp"], "--wdir: ranks start in the code dir"),
    ],
)
def test_a_world_or_launch_option_is_refused_with_why(argv: list[str], why: str) -> None:
    with pytest.raises(BadInput) as refused:
        check_launch_options(argv, " ".join(argv))
    line = str(refused.value)
    assert line.startswith(f"invalid mpi_options: {' '.join(argv)!r}; allowed: options that")
    assert f"({why}" in line


@pytest.mark.parametrize(
    ("argv", "told"),
    [
        (["-x"], "-x takes 1 value, e.g. -x NAME=VALUE"),
        (["-mca", "btl"], "-mca takes 2 values, e.g. -mca btl_tcp_if_include eth0"),
        (["--bind-to", "-x", "A=1"], "--bind-to takes 1 value, e.g. --bind-to core"),
        (["--NCCL_DEBUG"], "--NCCL_DEBUG takes 1 value, e.g. --NCCL_DEBUG WARN"),
    ],
)
def test_an_option_without_its_values_is_refused(argv: list[str], told: str) -> None:
    with pytest.raises(BadInput, match="every mpirun option followed by its values") as refused:
        check_launch_options(argv, " ".join(argv))
    assert told in str(refused.value)
