"""Open MPI's session files of a local run: in its own folder, and room for them checked."""

from __future__ import annotations

from pathlib import Path

from smmpi.runners.local.sessions import SESSIONS, check_room_left, mpirun_env, sessions_of
from smmpi.toolkit.shape import JobShape


def _shape(instances: int = 2, options: str = "") -> JobShape:
    return JobShape("job", "demo.py", instances, 2, custom_mpi_options=options)


def test_processes_mode_keeps_session_files_in_the_runs_folder_and_no_free_slot(
    tmp_path: Path,
) -> None:
    env: dict[str, str] = {}
    mpirun_env(env, _shape(), tmp_path, "processes")
    assert env == {SESSIONS: str(tmp_path / ".smmpi" / "ompi"), "SMMPI_NO_FREE_SLOTS": "1"}
    assert (tmp_path / ".smmpi" / "ompi").is_dir()
    assert sessions_of(env, _shape(), tmp_path, "processes") == tmp_path / ".smmpi" / "ompi"


def test_the_jobs_own_choices_win(tmp_path: Path) -> None:
    env = {SESSIONS: "/elsewhere"}
    mpirun_env(env, _shape(options="--oversubscribe"), tmp_path, "processes")
    assert env == {SESSIONS: "/elsewhere"}  # and Spawn may use the free slots it asked for
    named = _shape(options="-mca orte_tmpdir_base /mine")
    assert sessions_of(env, named, tmp_path, "processes") == Path("/mine")


def test_isolated_hosts_keep_theirs_in_the_run_folder(tmp_path: Path) -> None:
    env: dict[str, str] = {}
    mpirun_env(env, _shape(), tmp_path, "hosts")
    assert env == {}  # (each instance's environment names it: isolation.py)
    assert sessions_of({SESSIONS: "/x"}, _shape(), tmp_path, "hosts") == tmp_path


def test_a_folder_without_room_fails_the_run_before_it_starts(tmp_path: Path) -> None:
    assert check_room_left(_shape(), tmp_path, "hosts") is None
    huge = _shape(instances=10**9)  # more session files than any disk holds
    result = check_room_left(huge, tmp_path, "hosts")
    assert result is not None
    assert (result.exit_code, result.status) == (1, "Failed")
    assert result.reason is not None and "no rank was started" in result.reason
