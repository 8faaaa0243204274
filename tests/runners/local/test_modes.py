"""Which local mode a run gets: the one asked for, else isolated hosts where they can run."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from smmpi.errors import BadInput
from smmpi.runners.local import modes
from smmpi.runners.local.mpi import mpirun_path


@pytest.fixture(autouse=True)
def fresh_lookup(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """mpirun is looked up once a process: each test looks it up anew, and leaves it so."""
    monkeypatch.delenv("SMMPI_ISOLATION", raising=False)
    mpirun_path.cache_clear()
    yield
    mpirun_path.cache_clear()


def _launcher(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, version: str) -> Path:
    """``$SMMPI_MPIRUN``: a launcher that says ``version`` when asked for its version."""
    path = tmp_path / "launcher"
    path.write_text(f"#!/bin/sh\necho '{version}'\n")
    path.chmod(0o755)
    monkeypatch.setenv("SMMPI_MPIRUN", str(path))
    return path


def test_processes_asked_for_is_granted_without_looking_at_the_machine(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("SMMPI_MPIRUN", str(tmp_path / "no-such-mpirun"))  # never looked at
    assert modes.choose("processes", 500) == ("processes", "asked for")
    monkeypatch.setenv("SMMPI_ISOLATION", "processes")
    assert modes.choose(None) == ("processes", "asked for")


def test_an_unknown_mode_is_refused_from_the_option_or_the_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with pytest.raises(BadInput) as err:
        modes.choose("containers")
    assert (err.value.field, err.value.value) == ("isolation", "containers")
    assert err.value.allowed == "auto | hosts | processes"
    monkeypatch.setenv("SMMPI_ISOLATION", "Hosts")
    with pytest.raises(BadInput):
        modes.choose(None)


def test_above_the_hosts_limit_auto_runs_processes_and_hosts_is_refused() -> None:
    over = modes.HOSTS_MAX + 1
    assert modes.choose("auto", over) == (
        "processes",
        f"isolated hosts run at most {modes.HOSTS_MAX} instances",
    )
    with pytest.raises(BadInput, match=f"auto or processes above {modes.HOSTS_MAX} instances"):
        modes.choose("hosts", over)


def test_an_mpirun_other_than_open_mpi_4_rules_out_isolated_hosts_naming_it(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    launcher = _launcher(tmp_path, monkeypatch, "mpirun (Open MPI) 5.0.3")
    reason = modes.open_mpi_4_reason()
    assert reason == (
        f"the container's line needs Open MPI 4; mpirun here is openmpi 5 ({launcher})"
    )
    assert modes.hosts_unavailable() == (reason, modes.OPEN_MPI_4_FIX)
    assert modes.choose("auto") == ("processes", reason)
    monkeypatch.setenv("SMMPI_ISOLATION", "hosts")
    with pytest.raises(BadInput, match="auto or processes on this machine") as err:
        modes.choose(None)
    assert reason in err.value.allowed


def test_mpich_is_named_as_such(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    _launcher(tmp_path, monkeypatch, "HYDRA build details:")
    reason = modes.open_mpi_4_reason()
    assert reason is not None and "mpirun here is mpich (" in reason


def test_open_mpi_4_or_no_mpirun_at_all_is_no_reason_of_this_check(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Without mpirun the run's own preflight says so, in its words."""
    _launcher(tmp_path, monkeypatch, "mpirun (Open MPI) 4.1.7")
    assert modes.open_mpi_4_reason() is None
    mpirun_path.cache_clear()
    monkeypatch.setenv("SMMPI_MPIRUN", str(tmp_path / "no-such-mpirun"))
    assert modes.open_mpi_4_reason() is None
