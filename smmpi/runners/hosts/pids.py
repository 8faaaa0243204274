"""Process ids across the pod's PID namespace: what ranks record inside, what smmpi signals outside.

A rank records ``os.getpid()``, its id inside the pod. smmpi runs outside and must signal
the same process by its id here; /proc/PID/status ``NSpid`` lists both.
"""

from __future__ import annotations

import os


def _pid_namespace(pid: int | str, which: str = "pid") -> str | None:
    try:
        return os.readlink(f"/proc/{pid}/ns/{which}")
    except OSError:
        return None


def _ns_pid(pid: str) -> int | None:
    """The innermost id of process ``pid`` (the last field of its NSpid line)."""
    try:
        with open(f"/proc/{pid}/status", encoding="ascii", errors="replace") as status:
            for line in status:
                if line.startswith("NSpid:"):
                    return int(line.split()[-1])
    except (OSError, ValueError):
        return None
    return None


def _children(pid: int) -> list[int]:
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return []
    kids: list[int] = []
    for task in tasks:
        try:
            with open(f"/proc/{pid}/task/{task}/children", encoding="ascii") as f:
                kids += [int(k) for k in f.read().split()]
        except (OSError, ValueError):
            pass
    return kids


def pod_namespace(pid: int, depth: int = 3) -> str | None:
    """The PID namespace of the pod ``pid`` is, or started (a reaper may stand in between)."""
    own = _pid_namespace("self")
    todo = [(pid, 0)]
    while todo:
        current, level = todo.pop(0)
        namespace = _pid_namespace(current, "pid_for_children")
        if namespace is not None and namespace != own:
            return namespace
        if level < depth:
            todo += [(kid, level + 1) for kid in _children(current)]
    return None


def outside_ids(pid: int) -> dict[int, int]:
    """Every live process of the pod that ``pid`` is or started: id inside -> id here."""
    namespace = pod_namespace(pid)
    if namespace is None:
        return {}
    found: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit() and _pid_namespace(entry) == namespace:
            inner = _ns_pid(entry)
            if inner is not None:
                found[inner] = int(entry)
    return found
