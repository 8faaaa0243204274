"""Open MPI's session files of a local run: where they go, and room for them.

Open MPI writes session files (named after host and uid, alike in every run) for each
daemon and rank. A local run keeps them in its own folder, removed with it, and fails in one
line before any rank starts when that folder has no room for them.
"""

from __future__ import annotations

from pathlib import Path

from smmpi.supervision.result import EXIT_FAILED, RunResult
from smmpi.supervision.room import free_bytes, full_line, needed, sessions_folder
from smmpi.toolkit.shape import JobShape

SESSIONS = "OMPI_MCA_orte_tmpdir_base"  # where Open MPI writes its session files


def mpirun_env(how_env: dict[str, str], shape: JobShape, run_dir: Path, mode: str) -> None:
    """Processes mode: Open MPI's session files in the run's folder (removed with it, as in
    isolated hosts), and no free slot for ``Spawn`` (mpirun oversubscribes here; the
    container's does not)."""
    if mode != "processes":
        return
    if SESSIONS not in how_env:
        base = run_dir / ".smmpi" / "ompi"
        base.mkdir(parents=True, exist_ok=True)
        how_env[SESSIONS] = str(base)
    if "oversubscribe" not in (shape.custom_mpi_options or ""):
        how_env["SMMPI_NO_FREE_SLOTS"] = "1"


def check_room_left(shape: JobShape, run_dir: Path, mode: str) -> RunResult | None:
    """A run folder without room for Open MPI's session files fails before it starts."""
    free = free_bytes(run_dir)
    if free is None or free >= needed(shape, mode):
        return None
    result = RunResult(EXIT_FAILED, "Failed", 0.0, run_dir, shape.world_size)
    result.reason = full_line(run_dir, shape, mode, started=False)
    return result


def sessions_of(env: dict[str, str], shape: JobShape, run_dir: Path, mode: str) -> Path:
    """Where Open MPI keeps its session files: the run's folder, or in processes mode the
    folder the job's own ``orte_tmpdir_base`` names."""
    if mode == "processes":
        return sessions_folder(env, shape.custom_mpi_options, run_dir)
    return run_dir
