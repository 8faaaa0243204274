"""Where a run's reaper makes the CPU cgroup all of the run's processes share, or that it makes
none; and the sweep of the groups that killed reapers left."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from smmpi.supervision import cpu_share
from tests.helpers import ROOT

ASK = "from smmpi.supervision import cpu_share; print(cpu_share.group())"


def test_the_sweep_removes_only_smmpis_empty_groups(tmp_path: Path) -> None:
    (tmp_path / "smmpi-run-11-0a0b0c0d").mkdir()  # a killed reaper's
    live = tmp_path / "smmpi-run-12-1a1b1c1d"
    live.mkdir()
    (live / "cgroup.procs").write_text("4242")  # not empty: removing it is refused
    (tmp_path / "user.slice").mkdir()  # not smmpi's
    target = tmp_path / "elsewhere"
    target.mkdir()
    (tmp_path / "smmpi-run-13-link").symlink_to(target)
    (tmp_path / "smmpi-run-14-file").write_text("")
    cpu_share.sweep(tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "elsewhere",
        "smmpi-run-12-1a1b1c1d",
        "smmpi-run-13-link",
        "smmpi-run-14-file",
        "user.slice",
    ]
    cpu_share.sweep(tmp_path / "gone")  # a hierarchy that is not there: nothing to do


def test_no_group_is_made_where_autogroups_are_off(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    switch = tmp_path / "sched_autogroup_enabled"
    monkeypatch.setattr(cpu_share, "AUTOGROUP", str(switch))
    assert cpu_share.group() is None  # a kernel without autogroups
    switch.write_text("0\n")
    assert cpu_share.group() is None


def _cpu_root() -> Path:
    """This machine's CPU hierarchy, as the tests of the isolated hosts expect it."""
    assert Path(cpu_share.AUTOGROUP).read_text().strip() == "1", "a machine with autogroups"
    cpu = next((m for m, _, opts in cpu_share._mounts() if "cpu" in opts), None)
    assert cpu is not None, "a cgroup v1 hierarchy with the cpu controller"
    assert cpu_share._own_groups().get("cpu") == "/", "tests that start at its root"
    return Path(cpu)


def test_a_process_at_the_cpu_root_gets_a_new_group_of_its_own_there() -> None:
    cpu = _cpu_root()
    first, second = cpu_share.group(), cpu_share.group()
    assert first is not None and second is not None and first != second
    pattern = rf"{re.escape(cpu_share.PREFIX)}{os.getpid()}-[0-9a-f]{{8}}"
    assert Path(first).parent == cpu and re.fullmatch(pattern, Path(first).name)
    assert not Path(first).exists()  # named only: the reaper makes it


def test_a_process_in_a_cpu_group_makes_none_and_its_group_outlives_the_sweep() -> None:
    cpu = _cpu_root()
    where = cpu_share.group()
    assert where is not None
    group = Path(where)
    # it waits for a line before it asks, so it asks from inside the group
    inside = subprocess.Popen(
        ["sh", "-c", f'read _ && exec "{sys.executable}" -c "{ASK}"'],
        cwd=ROOT,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        group.mkdir()  # as the reaper does, then moves in at once (a sweep removes it if empty)
        (group / "cgroup.procs").write_text(str(inside.pid))
        cpu_share.sweep(cpu)
        assert group.is_dir()  # a live run's group stays
        out, _ = inside.communicate("go\n", timeout=120)
        assert (inside.returncode, out) == (0, "None\n")
    finally:
        inside.kill()
        inside.wait()
        cpu_share.sweep(cpu)
    assert not group.exists()  # empty once its process ended: swept
