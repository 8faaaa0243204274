"""A local job's owner: the process that runs it, named by pid *and* start time.

A pid alone could be reused by another process once the owner is gone (even by SIGKILL);
with the start time from ``/proc/PID/stat`` a reader tells the owner from a newcomer.
"""

from __future__ import annotations

import os


def owner_record() -> str:
    """This process as a local job's owner: ``pid start-time`` (start time from /proc)."""
    return f"{os.getpid()} {_start_time(os.getpid()) or ''}".strip() + "\n"


def _start_time(pid: int) -> str | None:
    """The process's start time in clock ticks since boot (/proc/PID/stat field 22)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8", errors="replace") as f:
            return f.read().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return None


def owner_alive(record: str) -> bool:
    """True while the process that ``record`` names runs (the same pid *and* start time)."""
    fields = record.split()
    if not fields or not fields[0].isdigit():
        return False
    pid = int(fields[0])
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    if len(fields) < 2:
        return True  # an owner recorded before start times were: the pid alone
    started = _start_time(pid)
    return started is None or started == fields[1]
