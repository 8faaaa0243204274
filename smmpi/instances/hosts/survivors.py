"""The pod's processes that outlive its command, as PID 1 of the pod sees them.

Its own ``/proc`` lists the pod's processes only: besides PID 1, the holders, each
instance's first process and (exact mode) its sshd stay until the pod ends; any other
process is a survivor of the command, given a moment to record how it ended.
"""

from __future__ import annotations

import contextlib
import os
import time


def status_of(pid: int) -> dict[str, str]:
    """``/proc/PID/status`` as name -> value (empty once the process is gone)."""
    fields = {}
    try:
        with open(f"/proc/{pid}/status", encoding="ascii", errors="replace") as status:
            for line in status:
                key, _, value = line.partition(":")
                fields[key] = value.strip()
    except OSError:
        pass
    return fields


def is_instance_init(pid: int) -> bool:
    """Whether ``pid`` is an instance's first process (id 1 in its own PID namespace)."""
    nspid = status_of(pid).get("NSpid", "").split()
    return bool(nspid) and nspid[-1] == "1"


def is_instance_sshd(pid: int, holders: set[int]) -> bool:
    """Whether ``pid`` is an instance's sshd (exact mode): started from this namespace into
    the instance's, so its parent is a holder, this PID 1 or the instance's first process."""
    fields = status_of(pid)
    parent = int(fields.get("PPid") or 0)
    if fields.get("Name") != "sshd":
        return False
    return parent in holders or parent == 1 or is_instance_init(parent)


def survivors(holders: set[int]) -> set[int]:
    """Processes of the pod (this PID namespace's own /proc) besides PID 1, the holders, the
    instances' first processes and their sshd, which stay until the pod ends."""
    alive = {int(p) for p in os.listdir("/proc") if p.isdigit()} - holders - {1}
    return {p for p in alive if not (is_instance_init(p) or is_instance_sshd(p, holders))}


def let_survivors_record(holders: set[int], wait: float = 0.5) -> None:
    """Processes that outlived the command (a rank that killed every other one, kill(-1))
    get a moment to record it before PID 1's exit kills them; usually there are none,
    and the pod ends at once."""
    deadline = time.monotonic() + wait
    while True:
        with contextlib.suppress(ChildProcessError):
            while os.waitpid(-1, os.WNOHANG)[0]:
                pass
        if not survivors(holders) or time.monotonic() >= deadline:
            return
        time.sleep(0.02)
