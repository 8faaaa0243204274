"""Room for a run's files, checked before it starts and named when it runs out.

A local run writes its host trees (the code on every emulated host) and Open
MPI's session files in its run folder: ``TMPDIR`` for ``smmpi run``, the local
job's folder for ``submit --local``. Each Open MPI daemon (mpirun in processes
mode, one per emulated instance in isolated hosts) creates about 8 MB of PMIx
shared-memory segments there. When they do not fit, ranks fail in
``MPI_Init`` with a dozen lines of PMIx errors and mpirun hangs; so the room is
checked before anything is created, and the failure is named in one line.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterable
from pathlib import Path

from smmpi.errors import BadInput
from smmpi.toolkit.shape import JobShape

MB = 1024 * 1024
SESSION_BYTES = 9 * MB  # one Open MPI daemon's session files (measured: 8.1-8.3 MB)
RANK_BYTES = 64 * 1024  # each rank's own session files and records
SLACK_BYTES = 1 * MB


def daemons(shape: JobShape, mode: str) -> int:
    """Open MPI daemons that write session files: one per instance in isolated hosts."""
    return shape.instances if mode == "hosts" else 1


def needed(shape: JobShape, mode: str, code_bytes: int = 0) -> int:
    """Bytes a run needs in its run folder (``code_bytes``: the code laid out on each host)."""
    session = daemons(shape, mode) * SESSION_BYTES + shape.world_size * RANK_BYTES
    return session + code_bytes * shape.instances + SLACK_BYTES


def free_bytes(folder: Path) -> int | None:
    """Free bytes where ``folder`` is (or would be created); None if that cannot be told."""
    path = folder
    while not path.exists() and path != path.parent:
        path = path.parent  # the folder to be created: the room of the one it will be in
    try:
        st = os.statvfs(path)
    except OSError:
        return None
    return st.f_bavail * st.f_frsize


def size_of(files: Iterable[Path]) -> int:
    total = 0
    for path in files:
        try:
            total += path.stat().st_size
        except OSError:
            pass
    return total


def _mb(size: int) -> str:
    return f"{size / MB:.1f} MB"


def _device(path: Path) -> int | None:
    while not path.exists() and path != path.parent:
        path = path.parent
    try:
        return path.stat().st_dev
    except OSError:
        return None


def where(folder: Path) -> str:
    """``TMPDIR (/tmp/x)`` when ``folder`` is in the temporary folder's filesystem, under it;
    else the folder."""
    tmp = Path(tempfile.gettempdir())
    if (folder == tmp or tmp in folder.parents) and _device(folder) == _device(tmp):
        return f"TMPDIR ({tmp})"
    return str(folder)


def check_room(folder: Path, shape: JobShape, mode: str, code_bytes: int = 0) -> None:
    """One line and exit 2 if ``folder`` has less room than the run needs."""
    need, free = needed(shape, mode, code_bytes), free_bytes(folder)
    if free is not None and free < need:
        raise BadInput(
            "TMPDIR" if where(folder).startswith("TMPDIR") else "run folder",
            str(folder),
            f"a folder with {_mb(need)} free for this run; it is too small or full "
            f"({_mb(free)} free; Open MPI's session files take about {SESSION_BYTES // MB} MB "
            f"per {'emulated instance' if mode == 'hosts' else 'run'}): set TMPDIR to a "
            "roomier folder",
        )


def full_line(folder: Path, shape: JobShape, mode: str, started: bool = True) -> str:
    """The line for a run whose ranks failed in ``MPI_Init`` for want of room (``started``;
    else: a run stopped before any rank started)."""
    free = free_bytes(folder)
    has = f"{_mb(free)} free" if free is not None else "unknown free space"
    what = (
        "Open MPI could not create its session files and the ranks failed in MPI_Init"
        if started
        else "no rank was started"
    )
    return (
        f"{where(folder)} is too small or full ({has}): {what}; a run of {shape.instances} "
        f"emulated host(s) needs about {_mb(needed(shape, mode))} there"
    )


def sessions_folder(env: dict[str, str], custom_mpi_options: str, run_dir: Path) -> Path:
    """Where processes mode's mpirun writes its session files: the job's own
    ``-mca orte_tmpdir_base DIR`` (``--mpi-options``; mpirun's command line wins over its
    environment), else the folder its environment names, else the run folder."""
    words = custom_mpi_options.split()
    for i, word in enumerate(words[:-2]):
        if word.lstrip("-") in ("mca", "gmca") and words[i + 1] == "orte_tmpdir_base":
            return Path(words[i + 2])
    return Path(env.get("OMPI_MCA_orte_tmpdir_base") or run_dir)
