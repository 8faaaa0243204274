"""Whether the kernel's OOM killer ended a rank: the OOM kills the run's memory cgroup counts.

A rank killed by SIGKILL may have run out of memory, or been sent ``kill -9``. The kernel
counts each OOM kill in the memory cgroup of the process it killed (cgroup v2's
``memory.events``, v1's ``memory.oom_control``: ``oom_kill N``). Every emulated instance runs
in smmpi's own memory cgroup (an isolated instance has a cgroup namespace of its own, not a
memory cgroup), so smmpi reads that count when a run starts (:class:`~.result.Run`) and
again at its verdict: a SIGKILL while the count grew is an OOM kill for certain.
"""

from __future__ import annotations

import dataclasses
import signal
from pathlib import Path

from smmpi.supervision.exits import Ends

CGROUP = Path("/sys/fs/cgroup")
_MAX_BYTES = 65536


def _read(path: Path) -> str:
    try:
        with path.open(encoding="ascii", errors="replace") as f:
            return f.read(_MAX_BYTES)
    except OSError:
        return ""


def _files(own: str) -> list[Path]:
    """The count's files for ``/proc/self/cgroup``'s lines: v2's, then v1's memory's."""
    files = []
    for line in own.splitlines():
        _, controllers, path = [*line.split(":", 2), "", ""][:3]
        relative = path.strip("/")
        if not controllers and path:
            files.append(CGROUP / relative / "memory.events")
        elif "memory" in controllers.split(","):
            files.append(CGROUP / "memory" / relative / "memory.oom_control")
    return files


def oom_kills() -> int | None:
    """The OOM kills this process's memory cgroup has counted; None where none can be read."""
    for path in _files(_read(Path("/proc/self/cgroup"))):
        for line in _read(path).splitlines():
            name, _, value = line.partition(" ")
            if name == "oom_kill" and value.strip().isdigit():
                return int(value)
    return None


def with_oom_kills(ends: Ends, before: int | None) -> Ends:
    """``ends`` with the OOM kills counted since ``before`` on each rank killed by SIGKILL."""
    after = oom_kills() if before is not None else None
    if after is None or before is None:
        return ends
    killed = {
        rank: dataclasses.replace(end, oom_kills=after - before)
        for rank, end in ends.ends.items()
        if end.signal == signal.SIGKILL
    }
    return dataclasses.replace(ends, ends={**ends.ends, **killed})
