"""The room a run's files need in its run folder, checked before it starts and named when
Open MPI runs out of it."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest

from smmpi.errors import BadInput
from smmpi.supervision.room import (
    MB,
    RANK_BYTES,
    SESSION_BYTES,
    SLACK_BYTES,
    check_room,
    daemons,
    free_bytes,
    full_line,
    needed,
    sessions_folder,
    size_of,
    where,
)
from smmpi.toolkit.shape import JobShape
from tests.helpers import ROOT

SHAPE = JobShape("job", "train.py", instances=3, ppn=2)


def test_isolated_hosts_need_one_daemons_session_files_per_instance() -> None:
    assert (daemons(SHAPE, "hosts"), daemons(SHAPE, "processes")) == (3, 1)
    ranks = 6 * RANK_BYTES
    assert needed(SHAPE, "processes") == SESSION_BYTES + ranks + SLACK_BYTES
    assert needed(SHAPE, "hosts") == 3 * SESSION_BYTES + ranks + SLACK_BYTES
    # the code is laid out on every host, in both modes
    assert needed(SHAPE, "processes", code_bytes=1000) == needed(SHAPE, "processes") + 3000


def test_a_folder_to_be_created_has_the_room_of_the_one_it_will_be_in(tmp_path: Path) -> None:
    later = free_bytes(tmp_path / "run" / "hosts")
    st = os.statvfs(tmp_path)
    assert later is not None
    assert abs(later - st.f_bavail * st.f_frsize) < 256 * MB  # other writers meanwhile


def test_the_size_of_files_counts_those_that_exist(tmp_path: Path) -> None:
    (tmp_path / "a").write_bytes(b"x" * 1000)
    (tmp_path / "b").write_bytes(b"y" * 24)
    assert size_of([tmp_path / "a", tmp_path / "gone", tmp_path / "b"]) == 1024


def test_a_folder_in_the_temporary_folder_is_named_as_tmpdir(tmp_path: Path) -> None:
    tmp = Path(tempfile.gettempdir())
    inside = tmp / f"smmpi-room-test-{os.getpid()}" / "run"  # not created
    assert where(inside) == f"TMPDIR ({tmp})"
    assert where(tmp) == f"TMPDIR ({tmp})"
    assert where(ROOT / "run") == str(ROOT / "run")


def test_a_run_that_does_not_fit_is_refused_in_one_line(tmp_path: Path) -> None:
    free = free_bytes(tmp_path)
    assert free is not None
    check_room(tmp_path, SHAPE, "hosts")  # a few dozen MB: fits
    with pytest.raises(BadInput) as refused:
        check_room(tmp_path, SHAPE, "hosts", code_bytes=free)  # three copies cannot fit
    text = str(refused.value)
    assert "\n" not in text
    in_tmp = Path(tempfile.gettempdir()) in tmp_path.parents  # pytest's own: yes, unless told
    assert refused.value.field == ("TMPDIR" if in_tmp else "run folder")
    assert "Open MPI's session files take about 9 MB per emulated instance" in text
    assert "set TMPDIR to a roomier folder" in text


def test_the_full_line_names_the_folder_its_room_and_what_failed(tmp_path: Path) -> None:
    line = full_line(tmp_path, SHAPE, "hosts")
    assert line.startswith(f"{where(tmp_path)} is too small or full (")
    assert " MB free): Open MPI could not create its session files and the ranks failed" in line
    assert line.endswith(
        f"a run of 3 emulated host(s) needs about {needed(SHAPE, 'hosts') / MB:.1f} MB there"
    )
    assert ": no rank was started; " in full_line(tmp_path, SHAPE, "hosts", started=False)


def test_the_session_files_go_where_the_jobs_mpi_options_say(tmp_path: Path) -> None:
    run = tmp_path / "run"
    env = {"OMPI_MCA_orte_tmpdir_base": "/env/tmp"}
    assert sessions_folder({}, "", run) == run
    assert sessions_folder(env, "", run) == Path("/env/tmp")
    assert sessions_folder(env, "-mca orte_tmpdir_base /opts/tmp", run) == Path("/opts/tmp")
    options = "--gmca orte_tmpdir_base /g/tmp -x NCCL_DEBUG=INFO"
    assert sessions_folder(env, options, run) == Path("/g/tmp")
    assert sessions_folder({}, "-mca btl_tcp_if_include eth0", run) == run
    assert sessions_folder({}, "-mca orte_tmpdir_base", run) == run  # no folder given
