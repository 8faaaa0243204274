"""The field checks behind MPIJob: pairs, mpirun options."""

from __future__ import annotations

from pathlib import Path

import pytest

from smmpi.spec import (
    MPIJob,
    parse_mpi_options,
    parse_pairs,
)


@pytest.fixture(autouse=True)
def _isolated(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for var in ("SMMPI_ROLE", "SMMPI_BUCKET", "SMMPI_REGION"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("SMMPI_CONFIG", str(tmp_path / "none.json"))


def test_mpi_options_are_argv_not_shell() -> None:
    assert parse_mpi_options("-x FOO=1  --NCCL_DEBUG WARN") == (
        "-x",
        "FOO=1",
        "--NCCL_DEBUG",
        "WARN",
    )
    assert parse_mpi_options(["-x", "A=1"]) == ("-x", "A=1")
    job = MPIJob("demo", mpi_options="-x FOO=1   -mca btl_tcp_if_include eth0")
    assert job.mpi_options == "-x FOO=1 -mca btl_tcp_if_include eth0"
    assert job.mpi_argv == ("-x", "FOO=1", "-mca", "btl_tcp_if_include", "eth0")


def test_pairs() -> None:
    assert parse_pairs("env", ["A=1", "B=x=y", "C="]) == {"A": "1", "B": "x=y", "C": ""}
    assert parse_pairs("hyperparameter", {"lr": 0.1, "on": True}) == {"lr": "0.1", "on": "true"}
