"""The footprint checks count this session's runs only: what tests beside it do is not theirs."""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.instances.hosts import footprint
from tests.instances.hosts.footprint import Machine, holders_of, namespaces_in_use, new_namespaces


def _uts(proc: subprocess.Popen[bytes]) -> str:
    """The UTS namespace of ``unshare --uts sleep``, once it has its own."""
    own = os.readlink("/proc/self/ns/uts")
    deadline = time.monotonic() + 30
    while (ns := os.readlink(f"/proc/{proc.pid}/ns/uts")) == own:
        assert time.monotonic() < deadline, "unshare never made its namespace"
        time.sleep(0.02)
    return ns


@pytest.fixture
def sleepers() -> Iterator[list[subprocess.Popen[bytes]]]:
    started: list[subprocess.Popen[bytes]] = []
    yield started
    for proc in started:
        proc.kill()
        proc.wait()


def _cgroup_can_be_made() -> bool:
    """Whether this process may make a cgroup (v2) beside its own, as the session did."""
    found = footprint._cgroup2()
    if found is None:
        return False
    mount, own = found
    probe = mount / own / f"smmpi-probe-{os.getpid()}"
    try:
        probe.mkdir()
    except OSError:
        return False
    probe.rmdir()
    return True


def test_this_session_has_a_cgroup_of_its_own_where_one_can_be_made(
    request: pytest.FixtureRequest,
) -> None:
    """As root on cgroup v2 (this suite's machines) each pytest process has a cgroup of its own,
    and this folder runs side by side; without one it runs one at a time (tests/conftest.py)."""
    possible = _cgroup_can_be_made()
    assert footprint.tracked() == possible
    assert (request.node.get_closest_marker("side_by_side") is not None) == possible
    if possible:
        group = footprint._OWN[0]
        assert str(os.getpid()) in (group / "cgroup.procs").read_text().split()
        assert Path("/proc/self/cgroup").read_text().rstrip().endswith(f"/{group.name}")


def test_a_namespace_held_by_this_sessions_process_is_counted(
    sleepers: list[subprocess.Popen[bytes]],
) -> None:
    before = namespaces_in_use()
    sleepers.append(subprocess.Popen(["unshare", "--uts", "sleep", "60"]))
    ns = _uts(sleepers[0])
    assert ns in namespaces_in_use()
    assert ns in new_namespaces(before, timeout=0.5)
    assert f"{sleepers[0].pid}:{ns}" in holders_of({ns})
    sleepers[0].kill()
    sleepers[0].wait()
    assert new_namespaces(before) == set()


def test_a_namespace_held_by_another_sessions_process_is_not(
    sleepers: list[subprocess.Popen[bytes]],
) -> None:
    """A process in another cgroup (a test beside this one) holds a new namespace: not ours."""
    assert footprint.tracked(), "as root on cgroup v2, each pytest process has a cgroup of its own"
    before = namespaces_in_use()
    sleepers.append(subprocess.Popen(["unshare", "--uts", "sleep", "60"]))
    ns = _uts(sleepers[0])
    (footprint._OWN[0].parent / "cgroup.procs").write_text(str(sleepers[0].pid))
    assert ns not in namespaces_in_use()
    assert holders_of({ns}) == []  # (its number may be one this session's run had)
    assert new_namespaces(before, timeout=0.5) == set()


def test_mounts_in_other_pytest_folders_are_left_out(
    tmp_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """Tests beside this one mount scratch file systems in their own pytest folders."""
    own = tmp_path_factory.getbasetemp()
    other = Path(f"{own}-beside") / "scratch"
    mine = tmp_path / "scratch"
    for point in (other, mine):
        point.mkdir(parents=True)
    before = Machine.now(own)
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(other)], check=True)
    try:
        assert Machine.now(own) == before
        assert Machine.now() != Machine.now(own)  # unfiltered, it is there
        subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(mine)], check=True)
        try:
            assert Machine.now(own) != before  # a mount in this session's folder counts
        finally:
            subprocess.run(["umount", str(mine)], check=True)
    finally:
        subprocess.run(["umount", str(other)], check=True)
        other.rmdir()
        other.parent.rmdir()
    assert Machine.now(own) == before
