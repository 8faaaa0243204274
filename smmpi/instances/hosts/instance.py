"""One emulated instance: a process that holds its UTS, IPC, network, cgroup and mount namespaces.

The holder is forked by the pod (see pod.py), sets its namespaces up, reports on a pipe
and then serves the launch agent (service.py) until the pod ends: its namespaces, the
mounts in them and its eth0 go with it. Nothing is written to this machine's filesystem:
- /opt becomes a tmpfs carrying bind mounts of everything the machine's /opt holds, plus
  ``ml``, which is the instance's own tree;
- /tmp, /var/tmp, /root and /dev/shm are empty tmpfs of the instance's own, as a
  container's are, with the folders the run needs there (its run folder, Python, smmpi)
  bound back in place;
- /etc is an overlay of the machine's /etc: the instance reads it and writes its own copy
  (its /etc/hosts lists every algo-k);
- /sys is a sysfs of the instance's network namespace, read-only as in a container.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from smmpi import keepers
from smmpi.instances.hosts import first, kernel, service, sshd
from smmpi.instances.hosts.strays import Strays

#: Folders each instance has of its own, empty at start (as in a fresh container).
PRIVATE = ("/tmp", "/var/tmp", "/root", "/dev/shm")
_OPEN_DIR = os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC


@dataclass(frozen=True)
class Instance:
    name: str  # algo-k
    address: str  # eth0's IPv4 address; "": no network of its own (this machine's)
    netmask: str
    opt_ml: str  # this instance's tree, seen at /opt/ml inside
    hosts: str  # the text of /etc/hosts inside
    sockets: str = ""  # the folder of the launch services' sockets ("": no service)
    keep: tuple[str, ...] = ()  # folders that stay the machine's when under a PRIVATE one
    env: dict[str, str] | None = field(default=None, hash=False)  # commands' environment
    records: str = ""  # where ranks record their end (rank-R.exit): "" no stray is killed
    first_pid: int = 0  # the first process id inside the instance (0: the kernel's choice)
    ssh_keys: str = ""  # exact mode: the run's keys (sshd.py), and sshd on port 22; "": none
    ssh_log: str = ""  # where this instance's sshd logs; "": the instance's command starts it
    own_copies: tuple[str, ...] = ()  # folders of ``keep`` this instance has a copy of its own
    worker: bool = True  # algo-2..N: where the toolkit writes ``env`` to /etc/environment
    joins: tuple[int, ...] = ()  # a warm instance's network and UTS namespaces (descriptors)


def _rebind(root_fd: int, root: str, entries: list[str], skip: str) -> None:
    """Re-create the machine's ``root`` entries on the tmpfs, each a bind mount of the original."""
    for name in entries:
        if name == skip:
            continue
        source, target = f"/proc/self/fd/{root_fd}/{name}", f"{root}/{name}"
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
        _rebind(opt_fd, "/opt", entries, "ml")
    finally:
        os.close(opt_fd)
    os.mkdir("/opt/ml", 0o755)
    kernel.mount(opt_ml, "/opt/ml", None, kernel.MS_BIND | kernel.MS_REC)


def _mounts_under(root: str) -> list[str]:
    with open("/proc/self/mountinfo") as table:
        points = [line.split()[4] for line in table]
    return [p for p in points if p.startswith(root + "/")]


def _top_mounts_under(root: str) -> list[str]:
    """Mount points below ``root`` that are not below another one (the ones to re-bind)."""
    points = _mounts_under(root)
    return sorted(p for p in points if not any(p.startswith(q + "/") for q in points))


def private_sysfs() -> None:
    """A read-only sysfs of this network namespace (/sys/class/net lists eth0 and lo), with
    the machine's mounts under /sys (cgroups, ...) bound back in place, read-only too."""
    below = _top_mounts_under("/sys")
    sys_fd = os.open("/sys", _OPEN_DIR)
    try:
        flags = kernel.MS_RDONLY | kernel.MS_NOSUID | kernel.MS_NODEV | kernel.MS_NOEXEC
        kernel.mount("sysfs", "/sys", "sysfs", flags)
        for point in below:
            source = f"/proc/self/fd/{sys_fd}/{point[len('/sys/') :]}"
            kernel.mount(source, point, None, kernel.MS_BIND | kernel.MS_REC)
    finally:
        os.close(sys_fd)
    for point in _mounts_under("/sys"):
        kernel.read_only(point)


def _outermost(paths: Sequence[str], root: str) -> list[str]:
    """Those of ``paths`` strictly under ``root`` and not under another one of them."""
    below = {p for p in paths if p.startswith(root.rstrip("/") + "/")}
    return sorted(p for p in below if not any(p.startswith(q + "/") for q in below))


def _bind_back(old: int, root: str, path: str) -> None:
    """Bind the machine's ``path`` (reached through ``old``, ``root`` before it was covered)."""
    rel = path[len(root) :].strip("/")
    source = f"/proc/self/fd/{old}/{rel}"
    try:
        info = os.stat(source)
    except OSError:
        return  # nothing there to keep
    parts = rel.split("/")
    for depth in range(1, len(parts)):
        folder = "/".join(parts[:depth])
        if not os.path.isdir(f"{root}/{folder}"):
            mode = stat.S_IMODE(os.stat(f"/proc/self/fd/{old}/{folder}").st_mode)
            os.mkdir(f"{root}/{folder}", mode)
    if stat.S_ISDIR(info.st_mode):
        os.mkdir(path, stat.S_IMODE(info.st_mode))
    else:
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW, 0o600))
    kernel.mount(source, path, None, kernel.MS_BIND | kernel.MS_REC)


def private_folder(root: str, keep: Sequence[str]) -> None:
    """An empty tmpfs of this instance at ``root``, with ``keep``'s folders under it bound back.

    A ``root`` that is itself to be kept, or that does not exist, stays as it is.
    """
    if root in keep or not os.path.isdir(root) or os.path.islink(root):
        return
    old = os.open(root, _OPEN_DIR)
    try:
        mode = f"mode={stat.S_IMODE(os.fstat(old).st_mode):o}"
        kernel.mount("tmpfs", root, "tmpfs", kernel.MS_NOSUID | kernel.MS_NODEV, mode)
        for path in _outermost(keep, root):
            _bind_back(old, root, path)
    finally:
        os.close(old)


def own_copy(path: str) -> None:
    """``path`` (a folder): this instance's own copy of it, in a tmpfs over it, so that what a
    process writes there stays in this instance."""
    old = os.open(path, _OPEN_DIR)
    try:
        mode = f"mode={stat.S_IMODE(os.fstat(old).st_mode):o}"
        kernel.mount("tmpfs", path, "tmpfs", kernel.MS_NOSUID | kernel.MS_NODEV, mode)
        shutil.copytree(f"/proc/self/fd/{old}", path, symlinks=True, dirs_exist_ok=True)
    finally:
        os.close(old)


def _overlay_etc(old: int, files: list[str], hosts: bytes) -> bool | None:
    """/etc as an overlay of the machine's: True; None if refused; False if it may not be
    written (a user namespace's root may not write the files it does not own)."""
    os.mkdir("/etc/upper", 0o755)
    os.mkdir("/etc/work", 0o700)
    layers = f"lowerdir=/proc/self/fd/{old},upperdir=/etc/upper,workdir=/etc/work"
    try:
        kernel.mount("overlay", "/etc", "overlay", kernel.MS_NOSUID, layers)
    except OSError:
        shutil.rmtree("/etc/upper")
        shutil.rmtree("/etc/work")
        return None
    try:
        for path in files:  # a file mounted on the machine's /etc: the overlay lacks it
            with open(f"/proc/self/fd/{old}/{path[len('/etc/') :]}", "rb") as f:
                _write_file(path, f.read())
        _write_file("/etc/hosts", hosts)
    except PermissionError:
        kernel.umount("/etc", kernel.MNT_DETACH)
        shutil.rmtree("/etc/upper", ignore_errors=True)
        shutil.rmtree("/etc/work", ignore_errors=True)
        return False
    return True


def private_etc(hosts: str) -> bool:
    """/etc: the machine's, read through an overlay whose writes stay in this instance.

    Where the overlay is refused, a copy; where the user may not write the machine's files
    anyway (a user namespace), a tmpfs of bind mounts of them and a private /etc/hosts.
    True when every file of it is the instance's own (the overlay or the copy).
    """
    files = [p for p in _top_mounts_under("/etc") if os.path.isfile(p)]
    old = os.open("/etc", _OPEN_DIR)
    try:
        entries = sorted(os.listdir(f"/proc/self/fd/{old}"))
        kernel.mount("tmpfs", "/etc", "tmpfs", kernel.MS_NOSUID | kernel.MS_NODEV, "mode=755")
        done = _overlay_etc(old, files, hosts.encode())
        if done is None:
            with contextlib.suppress(shutil.Error):  # files this user may not read are left out
                shutil.copytree(f"/proc/self/fd/{old}", "/etc", symlinks=True, dirs_exist_ok=True)
        elif not done:
            _rebind(old, "/etc", entries, "hosts")
        if not done:
            _write_file("/etc/hosts", hosts.encode())
    finally:
        os.close(old)
    return done is not False


def worker_environment(opt_ml: str) -> None:
    """What a worker's toolkit appends to its /etc/environment (the run writes it beside the
    instance's tree, ``<run>/algo-k/etc/environment``), appended to the instance's own."""
    extra = Path(opt_ml).parents[1] / "etc" / "environment"
    if extra.is_file() and not extra.is_symlink():
        fd = os.open("/etc/environment", os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW)
        with os.fdopen(fd, "ab") as f:
            f.write(extra.read_bytes())


def _write_file(path: str, data: bytes) -> None:
    """Replace ``path`` (a file or a link) with a file of its own holding ``data``."""
    if os.path.islink(path):
        os.unlink(path)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o644)
    with os.fdopen(fd, "wb") as f:
        f.write(data)


def set_up(instance: Instance) -> None:
    """Namespaces, hostname and mounts: everything but eth0, which the bridge side creates."""
    own_network = kernel.CLONE_NEWNET if instance.address else 0
    for namespace in instance.joins:  # warm: the instance's network and name are kept
        kernel.setns(namespace)
    made = 0 if instance.joins else kernel.CLONE_NEWUTS | own_network
    kernel.unshare(made | kernel.CLONE_NEWIPC | kernel.CLONE_NEWCGROUP | kernel.CLONE_NEWNS)
    kernel.sethostname(instance.name)
    kernel.mount(None, "/", None, kernel.MS_REC | kernel.MS_PRIVATE)
    private_opt_ml(instance.opt_ml)
    if own_network:
        private_sysfs()
    else:  # this machine's network, and so its sysfs, read-only
        kernel.mount("/sys", "/sys", None, kernel.MS_BIND | kernel.MS_REC)
        for point in ["/sys", *_mounts_under("/sys")]:
            kernel.read_only(point)
    own_etc = private_etc(instance.hosts)
    if own_etc and not instance.ssh_keys:  # in exact mode the toolkit or sshd.py writes it
        worker_environment(instance.opt_ml)
    for root in PRIVATE:
        private_folder(root, instance.keep)
    for path in instance.own_copies:
        own_copy(path)
    if instance.ssh_keys:
        private_folder("/run", instance.keep)  # a container's own /run (sshd's /run/sshd)
        # the toolkit writes /etc/environment itself where it starts sshd (no ssh_log), and on
        # its workers only, as here
        written = instance.ssh_log and instance.worker
        sshd.configure(instance.ssh_keys, instance.env if written else None)
    if own_network:
        kernel.link_up("lo")


def hold(instance: Instance, report: int, go: int) -> int:
    """The holder's whole life (in the forked child); returns its exit status."""
    try:
        set_up(instance)
        listener = keepers.listen(instance.sockets, instance.name) if instance.sockets else None
        strays = Strays(instance.records, instance.name) if instance.records else None
        first.start(instance.first_pid, strays)
        if instance.ssh_keys and instance.ssh_log:
            sshd.start(instance.ssh_log)
        os.write(report, b"ok\n")
        if os.read(go, 1) != b"g":  # the pod has moved eth0 in, or has ended
            return 0
        if instance.address:  # (none: the instance is on this machine's network)
            kernel.link_up("eth0", instance.address, instance.netmask)
        os.write(report, b"ok\n")
    except OSError as err:
        os.write(report, f"{instance.name}: {err}\n".encode())
        return 1
    os.close(report)
    if listener is None:
        while os.read(go, 64):  # until the pod ends
            pass
        return 0
    return service.serve(listener, go, instance.env)
