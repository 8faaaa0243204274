"""An emulated instance's own view of the filesystem, made in its mount namespace.

Nothing here writes to this machine's filesystem: each step mounts a tmpfs, an overlay or a
bind mount in the instance's private mount namespace (see instance.py for the whole list).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
from collections.abc import Sequence
from pathlib import Path

from smmpi.instances.hosts import kernel

_OPEN_DIR = os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC


def _cover(old: int, target: str) -> None:
    """A tmpfs over ``target`` with the mode of the folder ``old`` (opened before it)."""
    mode = f"mode={stat.S_IMODE(os.fstat(old).st_mode):o}"
    kernel.mount("tmpfs", target, "tmpfs", kernel.MS_NOSUID | kernel.MS_NODEV, mode)


def _rebound(folder: str, target: str, skip: str = "") -> None:
    """A tmpfs at ``target`` carrying a bind mount of each entry of ``folder`` (but ``skip``)."""
    old = os.open(folder, _OPEN_DIR)
    try:
        entries = sorted(os.listdir(f"/proc/self/fd/{old}"))
        _cover(old, target)
        _rebind(old, target, entries, skip)
    finally:
        os.close(old)


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


def private_root(stage: str) -> None:
    """A root of this instance's own: a tmpfs carrying a bind mount of each entry of the
    machine's /, so that what a process makes at the top (a container's working directory is
    /) stays in this instance and goes with it, as it would in a container's own root.

    ``stage`` (a folder smmpi made, the instance's own tree) is where the new root is built;
    the recursive binds show it again inside the new root, and that copy is taken away after
    the switch, so ``stage`` is again the folder it was.
    """
    _rebound("/", stage)
    os.chdir(stage)
    kernel.pivot_root(".", ".")  # the machine's root now lies over the new one, at /
    kernel.umount(".", kernel.MNT_DETACH)  # and goes (this namespace's view only)
    os.chdir("/")
    kernel.umount(stage, kernel.MNT_DETACH)  # the copy of the new root inside itself


def private_opt_ml(opt_ml: str) -> None:
    """/opt/ml is ``opt_ml``; the rest of /opt is the machine's, through bind mounts."""
    _rebound("/opt", "/opt", "ml")
    os.mkdir("/opt/ml", 0o755)
    kernel.mount(opt_ml, "/opt/ml", None, kernel.MS_BIND | kernel.MS_REC)


def mounts_under(root: str) -> list[str]:
    with open("/proc/self/mountinfo") as table:
        points = [line.split()[4] for line in table]
    return [p for p in points if p.startswith(root + "/")]


def _top_mounts_under(root: str) -> list[str]:
    """Mount points below ``root`` that are not below another one (the ones to re-bind)."""
    points = mounts_under(root)
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
    for point in mounts_under("/sys"):
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
        _cover(old, root)
        for path in _outermost(keep, root):
            _bind_back(old, root, path)
    finally:
        os.close(old)


def own_copy(path: str) -> None:
    """``path`` (a folder): this instance's own copy of it, in a tmpfs over it, so that what a
    process writes there stays in this instance."""
    old = os.open(path, _OPEN_DIR)
    try:
        _cover(old, path)
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
