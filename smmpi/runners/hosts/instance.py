"""One emulated instance: a process that holds its UTS, network and mount namespaces.

The holder is forked by the pod (see pod.py), sets its namespaces up, reports on a pipe
and then blocks reading the pod's pipe. It ends when the pod does: its namespaces, the
mounts in them and its eth0 go with it. Nothing is written to this machine's filesystem:
/opt becomes a tmpfs in the holder's private mount namespace, carrying bind mounts of
everything the machine's /opt holds plus ``ml``, which is the instance's own tree.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass

from smmpi.runners.hosts import kernel


@dataclass(frozen=True)
class Instance:
    name: str  # algo-k
    address: str  # eth0's IPv4 address
    netmask: str
    opt_ml: str  # this instance's tree, seen at /opt/ml inside
    hosts_file: str  # seen at /etc/hosts inside


def _rebind_opt(opt_fd: int, entries: list[str]) -> None:
    """Re-create the machine's /opt entries on the tmpfs, each a bind mount of the original."""
    for name in entries:
        if name == "ml":
            continue
        source, target = f"/proc/self/fd/{opt_fd}/{name}", f"/opt/{name}"
        info = os.lstat(source)
        if stat.S_ISLNK(info.st_mode):
            os.symlink(os.readlink(source), target)
            continue
        if stat.S_ISDIR(info.st_mode):
            os.mkdir(target)
        else:
            os.close(os.open(target, os.O_WRONLY | os.O_CREAT, 0o600))
        kernel.mount(source, target, None, kernel.MS_BIND | kernel.MS_REC)


def private_opt_ml(opt_ml: str) -> None:
    """/opt/ml is ``opt_ml``; the rest of /opt is the machine's, through bind mounts."""
    opt_fd = os.open("/opt", os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        info = os.fstat(opt_fd)
        entries = sorted(os.listdir(f"/proc/self/fd/{opt_fd}"))
        mode = f"mode={stat.S_IMODE(info.st_mode):o}"
        kernel.mount("tmpfs", "/opt", "tmpfs", kernel.MS_NOSUID | kernel.MS_NODEV, mode)
        _rebind_opt(opt_fd, entries)
    finally:
        os.close(opt_fd)
    os.mkdir("/opt/ml", 0o755)
    kernel.mount(opt_ml, "/opt/ml", None, kernel.MS_BIND | kernel.MS_REC)


def _top_mounts_under(root: str) -> list[str]:
    """Mount points below ``root`` that are not below another one (the ones to re-bind)."""
    points = []
    with open("/proc/self/mountinfo") as table:
        for line in table:
            point = line.split()[4]
            if point.startswith(root + "/"):
                points.append(point)
    return sorted(p for p in points if not any(p.startswith(q + "/") for q in points))


def private_sysfs() -> None:
    """A sysfs of this network namespace (/sys/class/net lists eth0 and lo), with the
    machine's mounts under /sys (cgroups, ...) bound back in place."""
    below = _top_mounts_under("/sys")
    sys_fd = os.open("/sys", os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        kernel.mount(
            "sysfs", "/sys", "sysfs", kernel.MS_NOSUID | kernel.MS_NODEV | kernel.MS_NOEXEC
        )
        for point in below:
            source = f"/proc/self/fd/{sys_fd}/{point[len('/sys/') :]}"
            kernel.mount(source, point, None, kernel.MS_BIND | kernel.MS_REC)
    finally:
        os.close(sys_fd)


def private_shm() -> None:
    """The instance's own /dev/shm, as each container has. Open MPI names its shared-memory
    segments there by hostname and job id, both the same in every pod (algo-k, and a PID
    inside the pod's namespace): two runs at once on one machine would map each other's."""
    if os.path.isdir("/dev/shm"):
        kernel.mount("tmpfs", "/dev/shm", "tmpfs", kernel.MS_NOSUID | kernel.MS_NODEV, "mode=1777")


def set_up(instance: Instance) -> None:
    """Namespaces, hostname and mounts: everything but eth0, which the bridge side creates."""
    kernel.unshare(kernel.CLONE_NEWUTS | kernel.CLONE_NEWNET | kernel.CLONE_NEWNS)
    kernel.sethostname(instance.name)
    kernel.mount(None, "/", None, kernel.MS_REC | kernel.MS_PRIVATE)
    private_opt_ml(instance.opt_ml)
    private_sysfs()
    private_shm()
    kernel.mount(instance.hosts_file, "/etc/hosts", None, kernel.MS_BIND)
    kernel.link_up("lo")


def hold(instance: Instance, report: int, go: int) -> int:
    """The holder's whole life (in the forked child); returns its exit status."""
    try:
        set_up(instance)
        os.write(report, b"ok\n")
        if os.read(go, 1) != b"g":  # the pod has moved eth0 in, or has ended
            return 0
        kernel.link_up("eth0", instance.address, instance.netmask)
        os.write(report, b"ok\n")
    except OSError as err:
        os.write(report, f"{instance.name}: {err}\n".encode())
        return 1
    os.close(report)
    while os.read(go, 64):  # until the pod ends
        pass
    return 0
