"""Counting what an isolated run leaves on the machine: namespaces, processes, links, mounts.

A test session moves itself into a cgroup of its own (:func:`track_own_processes`, cgroup v2):
every process its tests start, and theirs, is born there, daemons and runs' instances included,
so the namespaces a test's runs left are told apart from those of tests running beside it.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path

KINDS = ("pid", "net", "uts", "mnt", "user")


def _ns(pid: str, kind: str) -> str | None:
    try:
        return os.readlink(f"/proc/{pid}/ns/{kind}")
    except OSError:
        return None


def _pids() -> list[str]:
    return [p for p in os.listdir("/proc") if p.isdigit()]


_OWN: list[Path] = []  # the cgroup this session moved into, once it did


def _cgroup2() -> tuple[Path, str] | None:
    """The cgroup v2 mount point and this process's cgroup in it, if there is one."""
    try:
        own = next(
            line[3:]
            for line in Path("/proc/self/cgroup").read_text().splitlines()
            if line.startswith("0::")
        )
        mount = next(
            fields[4]
            for fields in map(str.split, Path("/proc/self/mountinfo").read_text().splitlines())
            if fields[fields.index("-") + 1] == "cgroup2"
        )
    except (OSError, StopIteration, ValueError, IndexError):
        return None
    return Path(mount), own.strip("/")


def track_own_processes(name: str) -> Path | None:
    """Move this process into a new cgroup ``name`` beside its own; None if that is refused
    (no cgroup v2, not root): then :func:`namespaces_in_use` counts the whole machine's."""
    found = _cgroup2()
    if found is None:
        return None
    mount, parent = found
    for stale in (mount / parent).glob("smmpi-tests-*"):  # of sessions that did not end well
        if not os.path.exists(f"/proc/{stale.name.rsplit('-', 1)[1]}"):
            _remove(stale)
    group = mount / parent / name
    try:
        group.mkdir()
        (group / "cgroup.procs").write_text(str(os.getpid()))
    except OSError:
        _remove(group)
        return None
    _OWN.append(group)
    return group


def _remove(group: Path) -> None:
    """Remove an empty cgroup and those below it (the kernel refuses one that holds a process)."""
    for below in _listdir(str(group)):
        if (group / below).is_dir():
            _remove(group / below)
    try:
        group.rmdir()
    except OSError:
        pass


def untrack_own_processes() -> None:
    """Back to the cgroup this session started in; its own is removed if nothing is left in it."""
    if not _OWN:
        return
    group = _OWN.pop()
    try:
        (group.parent / "cgroup.procs").write_text(str(os.getpid()))
    except OSError:
        return
    _remove(group)


def tracked() -> bool:
    """Whether this session's processes are told apart from the machine's (a cgroup of its own)."""
    return bool(_OWN)


def _own_pids() -> list[str]:
    """This session's processes: those of its cgroup and of any cgroup below it."""
    found = []
    for procs in _OWN[0].rglob("cgroup.procs"):
        try:
            found += procs.read_text().split()
        except OSError:
            pass
    return found


@dataclass(frozen=True)
class Machine:
    """What the machine looks like from its own namespaces."""

    links: frozenset[str]  # interfaces of this network namespace
    mounts: tuple[str, ...]  # this mount namespace's table
    opt: frozenset[str]  # entries of /opt
    opt_ml: bool  # whether /opt/ml exists

    @classmethod
    def now(cls, own: Path | None = None) -> Machine:
        """With ``own`` (this session's pytest folder), the mounts of other pytest folders are
        left out: tests beside this one mount scratch file systems in theirs."""
        mounts = tuple(
            " ".join(line.split()[3:5])
            for line in Path("/proc/self/mountinfo").read_text().split("\n")
            if line and (own is None or _ours_or_not_scratch(line.split()[4], own))
        )
        return cls(
            frozenset(os.listdir("/sys/class/net")),
            mounts,
            frozenset(os.listdir("/opt")),
            os.path.lexists("/opt/ml"),
        )


#: Where tests mount scratch file systems: pytest's folders and the compat suite's shared one
SCRATCH = ("/pytest-of-", "/.pytest_cache/compat/scratch-")


def _ours_or_not_scratch(point: str, own: Path) -> bool:
    return not any(s in point for s in SCRATCH) or (point + "/").startswith(f"{own}/")


def descendants(pid: int) -> list[str]:
    """``pid`` and every process below it, in any PID namespace (as this one numbers them)."""
    found, todo = [], [str(pid)]
    while todo:
        current = todo.pop()
        found.append(current)
        for task in _listdir(f"/proc/{current}/task"):
            try:
                todo += Path(f"/proc/{current}/task/{task}/children").read_text().split()
            except OSError:
                pass
    return found


def _listdir(path: str) -> list[str]:
    try:
        return os.listdir(path)
    except OSError:
        return []


def pod_namespaces(outer_pid: int) -> set[str]:
    """Every namespace used by a process of the pod started as ``outer_pid`` (while it runs),
    each instance's own PID namespace included."""
    found: set[str] = set()
    for pid in descendants(outer_pid):
        found.update(ns for kind in KINDS if (ns := _ns(pid, kind)))
    own = {ns for kind in KINDS if (ns := _ns("self", kind))}
    return found - own


def holders_of(namespaces: set[str]) -> list[str]:
    """Processes of this session (of the machine, if not tracked) that still hold any of
    ``namespaces``: pids with the namespace they hold. Only this session's: the kernel gives
    a freed namespace's number to the next one made, by a test beside this one too."""
    left = []
    for pid in _own_pids() if _OWN else _pids():
        for kind in KINDS:
            ns = _ns(pid, kind)
            if ns in namespaces:
                left.append(f"{pid}:{ns}")
    return left


def namespaces_in_use() -> set[str]:
    """Every namespace some process of this session is in (of the machine, if not tracked)."""
    pids = _own_pids() if _OWN else _pids()
    return {ns for pid in pids for kind in KINDS if (ns := _ns(pid, kind))}


def new_namespaces(before: set[str], timeout: float = 10.0) -> set[str]:
    """Namespaces in use that were not in ``before``, once they had ``timeout`` s to go."""
    deadline = time.monotonic() + timeout
    new = namespaces_in_use() - before
    while new and time.monotonic() < deadline:
        time.sleep(0.1)
        new = namespaces_in_use() - before
    return new


def who_holds(namespaces: set[str]) -> list[str]:
    """The processes in ``namespaces``, with their command lines: a failure's message."""
    found = []
    for held in holders_of(namespaces):
        pid = held.split(":", 1)[0]
        try:
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            cmd = "(gone)"
        found.append(f"{held} {cmd[:300]}")
    return found


def wait_gone(namespaces: set[str], timeout: float = 10.0) -> list[str]:
    deadline = time.monotonic() + timeout
    left = holders_of(namespaces)
    while left and time.monotonic() < deadline:
        time.sleep(0.05)
        left = holders_of(namespaces)
    return left
