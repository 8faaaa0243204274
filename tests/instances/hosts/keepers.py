"""Finding the keepers of warm instances (smmpi.instances.warm) that a test started."""

from __future__ import annotations

import os
import time
from pathlib import Path


def keepers(warm: Path) -> list[int]:
    """Live keepers of ``warm`` and their holders (their command line names the folder)."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            words = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if len(words) > 6 and b"warm.keeper" in words[4] and words[6] == str(warm).encode():
            found.append(int(pid))
    return found


def gone(warm: Path, what: str, timeout: float = 60) -> None:
    """Wait until no keeper of ``warm`` is left (a deadline, not a timing check)."""
    deadline = time.monotonic() + timeout
    while keepers(warm):
        assert time.monotonic() < deadline, f"{what}: {keepers(warm)} still alive"
        time.sleep(0.1)


def _parent(pid: int) -> int:
    with open(f"/proc/{pid}/status") as status:
        return int(next(line.split()[1] for line in status if line.startswith("PPid:")))


def holders(warm: Path) -> list[int]:
    """The keepers' holders (one per instance): those whose parent is a keeper."""
    found = keepers(warm)
    return sorted(pid for pid in found if _parent(pid) in found)


def keeper(warm: Path) -> int:
    """The one keeper of ``warm`` (not a holder)."""
    found = keepers(warm)
    (only,) = [pid for pid in found if _parent(pid) not in found]
    return only
