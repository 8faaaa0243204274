"""Counting what an isolated run leaves on the machine: namespaces, processes, links, mounts."""

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


@dataclass(frozen=True)
class Machine:
    """What the machine looks like from its own namespaces."""

    links: frozenset[str]  # interfaces of this network namespace
    mounts: tuple[str, ...]  # this mount namespace's table
    opt: frozenset[str]  # entries of /opt
    opt_ml: bool  # whether /opt/ml exists

    @classmethod
    def now(cls) -> Machine:
        mounts = tuple(
            " ".join(line.split()[3:5])
            for line in Path("/proc/self/mountinfo").read_text().split("\n")
            if line
        )
        return cls(
            frozenset(os.listdir("/sys/class/net")),
            mounts,
            frozenset(os.listdir("/opt")),
            os.path.lexists("/opt/ml"),
        )


def _descendants(pid: int) -> list[str]:
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
    for pid in _descendants(outer_pid):
        found.update(ns for kind in KINDS if (ns := _ns(pid, kind)))
    own = {ns for kind in KINDS if (ns := _ns("self", kind))}
    return found - own


def holders_of(namespaces: set[str]) -> list[str]:
    """Processes that still hold any of ``namespaces``: pids with the namespace they hold."""
    left = []
    for pid in _pids():
        for kind in KINDS:
            ns = _ns(pid, kind)
            if ns in namespaces:
                left.append(f"{pid}:{ns}")
    return left


def namespaces_in_use() -> set[str]:
    """Every namespace some process of the machine is in."""
    return {ns for pid in _pids() for kind in KINDS if (ns := _ns(pid, kind))}


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
