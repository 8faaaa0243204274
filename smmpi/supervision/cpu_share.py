"""One CPU share for all of a local run's processes, however many sessions they start.

Linux's autogroups (``/proc/sys/kernel/sched_autogroup_enabled``, on by default in most
distributions) give every session an equal share of the CPU. Each emulated instance's
``orted`` (or, in exact mode, each ``sshd`` connection) starts a session of its own, as on
SageMaker, so without this each instance gets an equal part of this machine's cores, not
each process. A rank with work to do then shares its instance's part with the ranks that
wait beside it, while the waiting ranks of other instances keep theirs: a 2 x 2 run whose
rank 0 computes while the others wait ran that computation at half speed. Ranks that wait
yield the core (see ``isolation.sharing_cores``), but only to processes of their own group.

The kernel applies autogroups only to processes in the root CPU cgroup. So the run's reaper
(``watch.py run --cpu-group``) makes a CPU cgroup of the run's own, moves itself into it
before it starts anything, and leaves and removes it when every process of the run has
ended. This module says where that group goes, or that none is needed or can be made: a
machine without autogroups, a process already in a CPU cgroup of its own (systemd's slices
with the cpu controller, a container), or a user who cannot create one. A run without the
group behaves as before.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

PREFIX = "smmpi-run-"  # every group smmpi makes starts so; no other is touched
AUTOGROUP = "/proc/sys/kernel/sched_autogroup_enabled"


def _read(path: str | Path) -> str:
    try:
        with open(path, encoding="ascii", errors="replace") as f:
            return f.read(65536)
    except OSError:
        return ""


def _mounts() -> list[tuple[str, str, set[str]]]:
    """(mount point, file system type, super options) of each cgroup mount at its root."""
    found = []
    for line in _read("/proc/self/mountinfo").splitlines():
        fields, _, tail = line.partition(" - ")
        parts, rest = fields.split(), tail.split()
        if len(parts) >= 5 and len(rest) >= 3 and parts[3] == "/":
            if rest[0] in ("cgroup", "cgroup2"):
                found.append((parts[4], rest[0], set(rest[2].split(","))))
    return found


def _own_groups() -> dict[str, str]:
    """This process's cgroup per hierarchy: ``cpu`` (and its companions) or ``""`` (v2)."""
    groups = {}
    for line in _read("/proc/self/cgroup").splitlines():
        _, controllers, path = [*line.split(":", 2), "", ""][:3]
        for name in controllers.split(",") if controllers else [""]:
            groups[name] = path
    return groups


def _base() -> Path | None:
    """The CPU hierarchy's root, when this process is at that root (so autogroups apply)."""
    groups = _own_groups()
    if "cpu" in groups:  # cgroup v1: a hierarchy with the cpu controller
        if groups["cpu"] != "/":
            return None  # in a CPU group already: autogroups do not apply
        return next((Path(m) for m, _, opts in _mounts() if "cpu" in opts), None)
    if groups.get("") != "/":  # cgroup v2 elsewhere than its root: nothing to do or to gain
        return None
    root = next((Path(m) for m, kind, _ in _mounts() if kind == "cgroup2"), None)
    if root is None or "cpu" not in _read(root / "cgroup.subtree_control").split():
        return None
    return root


def sweep(base: Path) -> None:
    """Remove the empty groups a run left (its reaper killed with SIGKILL). The kernel removes
    a cgroup only when no process is in it, so a live run's group stays."""
    with contextlib.suppress(OSError):
        for entry in os.scandir(base):
            if entry.name.startswith(PREFIX) and entry.is_dir(follow_symlinks=False):
                with contextlib.suppress(OSError):
                    os.rmdir(entry.path)


def group() -> str | None:
    """Where this run's reaper makes its CPU group, or None when it need not or cannot."""
    if _read(AUTOGROUP).strip() != "1":
        return None
    base = _base()
    if base is None or not os.access(base, os.W_OK | os.X_OK):
        return None
    sweep(base)
    return str(base / f"{PREFIX}{os.getpid()}-{os.urandom(4).hex()}")
