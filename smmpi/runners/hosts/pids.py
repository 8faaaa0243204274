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


def outside_ids(outer_pid: int) -> dict[int, int]:
    """Every live process of the pod started as ``outer_pid``: id inside -> id here."""
    namespace = _pid_namespace(outer_pid, "pid_for_children")
    if namespace is None or namespace == _pid_namespace("self"):
        return {}
    found: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit() and _pid_namespace(entry) == namespace:
            inner = _ns_pid(entry)
            if inner is not None:
                found[inner] = int(entry)
    return found
