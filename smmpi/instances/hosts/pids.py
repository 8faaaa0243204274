"""Process ids across the pod's PID namespace: what ranks record inside, what smmpi signals outside.

A rank records ``os.getpid()``, its id inside its instance. smmpi runs outside and must signal
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


def outside_ids(pid: int) -> dict[int, int]:
    """Every live process that ``pid`` started, in the pod's PID namespaces: id inside -> id here.

    A process's id inside is its id in its own instance's namespace (the last of its
    NSpid line). Each instance's ids start at a different offset (pod.py), so they do not
    collide across instances.
    """
    own = _pid_namespace("self")
    found: dict[int, int] = {}
    todo, seen = [pid], set()
    while todo:
        current = todo.pop()
        if current in seen:
            continue
        seen.add(current)
        todo += _children(current)
        if _pid_namespace(current) not in (own, None):
            inner = _ns_pid(str(current))
            if inner is not None:
                found.setdefault(inner, current)
    return found
