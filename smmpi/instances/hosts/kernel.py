"""The few Linux system calls isolated hosts need, through ctypes (Python 3.10 has no os.setns).

Everything here is a thin, checked wrapper: a failing call raises ``OSError`` with the
call's name, so the set-up can say which step the kernel refused.
"""

from __future__ import annotations

import ctypes
import errno
import fcntl
import os
import platform
import socket
import struct

CLONE_NEWNS = 0x00020000
CLONE_NEWCGROUP = 0x02000000
CLONE_NEWUTS = 0x04000000
CLONE_NEWIPC = 0x08000000
CLONE_NEWUSER = 0x10000000
CLONE_NEWPID = 0x20000000
CLONE_NEWNET = 0x40000000

MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_REMOUNT = 0x1, 0x2, 0x4, 0x8, 0x20
MS_BIND, MS_REC, MS_PRIVATE = 0x1000, 0x4000, 0x40000
MNT_DETACH = 0x2

PR_SET_PDEATHSIG, PR_CAPBSET_DROP, PR_CAP_AMBIENT = 1, 24, 47
PR_CAP_AMBIENT_CLEAR_ALL = 4
_CAPABILITY_VERSION_3 = 0x20080522

#: The capabilities Docker gives a container by default, and so a SageMaker training
#: container: CHOWN, DAC_OVERRIDE, FOWNER, FSETID, KILL, SETGID, SETUID, SETPCAP,
#: NET_BIND_SERVICE, NET_RAW, SYS_CHROOT, MKNOD, AUDIT_WRITE, SETFCAP.
CONTAINER_CAPABILITIES = 0xA80425FB

_SIOCGIFFLAGS, _SIOCSIFFLAGS = 0x8913, 0x8914
_SIOCSIFADDR, _SIOCSIFNETMASK = 0x8916, 0x891C
_IFF_UP = 0x1

# The C library's symbols, through this process's own (find_library would run ldconfig).
_libc = ctypes.CDLL(None, use_errno=True)


def _check(result: int, call: str, what: str = "") -> None:
    if result != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{call}({what}): {os.strerror(err)}")


def unshare(flags: int) -> None:
    _check(_libc.unshare(ctypes.c_int(flags)), "unshare", hex(flags))


def setns(fd: int, nstype: int = 0) -> None:
    _check(_libc.setns(ctypes.c_int(fd), ctypes.c_int(nstype)), "setns", str(nstype))


#: The namespaces an emulated instance has of its own (the mount namespace last: it moves /).
INSTANCE_KINDS = ("uts", "ipc", "net", "cgroup", "mnt")


def _ns_id(path: str) -> tuple[int, int]:
    info = os.stat(path)
    return info.st_dev, info.st_ino


def enter(pid: int, kinds: tuple[str, ...] = INSTANCE_KINDS) -> None:
    """Join the namespaces of process ``pid`` (as nsenter -t pid does), then cd to /.

    One this process is in already is left alone (an instance on this machine's network)."""
    wanted = [k for k in kinds if _ns_id(f"/proc/{pid}/ns/{k}") != _ns_id(f"/proc/self/ns/{k}")]
    fds = [os.open(f"/proc/{pid}/ns/{kind}", os.O_RDONLY | os.O_CLOEXEC) for kind in wanted]
    try:
        for fd in fds:
            setns(fd)
    finally:
        for fd in fds:
            os.close(fd)


def mount(source: str | None, target: str, fstype: str | None, flags: int, data: str = "") -> None:
    result = _libc.mount(
        source.encode() if source is not None else None,
        target.encode(),
        fstype.encode() if fstype is not None else None,
        ctypes.c_ulong(flags),
        data.encode() if data else None,
    )
    _check(result, "mount", f"{source or fstype} on {target}")


#: pivot_root(2)'s number where smmpi runs (the C library has no wrapper)
_SYS_PIVOT_ROOT = {"x86_64": 155, "aarch64": 41}


def pivot_root(new_root: str, put_old: str) -> None:
    number = _SYS_PIVOT_ROOT.get(platform.machine())
    if number is None:
        raise OSError(errno.ENOSYS, f"pivot_root: not known on {platform.machine()}")
    result = _libc.syscall(ctypes.c_long(number), new_root.encode(), put_old.encode())
    _check(result, "pivot_root", new_root)


def sethostname(name: str) -> None:
    raw = name.encode()
    _check(_libc.sethostname(raw, ctypes.c_size_t(len(raw))), "sethostname", name)


def umount(target: str, flags: int = 0) -> None:
    _check(_libc.umount2(target.encode(), ctypes.c_int(flags)), "umount", target)


_KEPT_FLAGS = MS_NOSUID | MS_NODEV | MS_NOEXEC | 0x400 | 0x800  # and NOATIME, NODIRATIME
_ST_RELATIME, _MS_RELATIME = 0x1000, 0x200000


def read_only(target: str) -> None:
    """Make the mount at ``target`` read-only, keeping its other flags (which a user
    namespace may not drop)."""
    current = os.statvfs(target).f_flag
    flags = current & _KEPT_FLAGS | (_MS_RELATIME if current & _ST_RELATIME else 0)
    mount(None, target, None, MS_REMOUNT | MS_BIND | MS_RDONLY | flags)


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [
        ("effective", ctypes.c_uint32),
        ("permitted", ctypes.c_uint32),
        ("inheritable", ctypes.c_uint32),
    ]


def _last_capability() -> int:
    try:
        with open("/proc/sys/kernel/cap_last_cap") as f:
            return int(f.read())
    except (OSError, ValueError):
        return 63


def drop_capabilities(keep: int = CONTAINER_CAPABILITIES) -> None:
    """Hold ``keep`` and nothing more, now and after any exec (as a container's process does).

    The bounding set loses every other capability, so no exec (a set-user-ID program, a
    file with capabilities) gains one back; the ambient set is emptied; the effective and
    permitted sets become ``keep``, the inheritable set empty.
    """
    for cap in range(_last_capability() + 1):
        if not keep >> cap & 1:
            _check(_libc.prctl(PR_CAPBSET_DROP, ctypes.c_ulong(cap), 0, 0, 0), "prctl", "CAPBSET")
    clear = _libc.prctl(PR_CAP_AMBIENT, ctypes.c_ulong(PR_CAP_AMBIENT_CLEAR_ALL), 0, 0, 0)
    _check(clear, "prctl", "CAP_AMBIENT")
    header = _CapHeader(_CAPABILITY_VERSION_3, 0)
    low, high = keep & 0xFFFFFFFF, keep >> 32 & 0xFFFFFFFF
    data = (_CapData * 2)(_CapData(low, low, 0), _CapData(high, high, 0))
    _check(_libc.capset(ctypes.byref(header), data), "capset", hex(keep))


def die_with_parent(signo: int) -> None:
    """The kernel sends ``signo`` to this process when the thread that forked it exits."""
    _check(_libc.prctl(PR_SET_PDEATHSIG, ctypes.c_ulong(signo), 0, 0, 0), "prctl", "PDEATHSIG")


def map_root(uid: int, gid: int) -> None:
    """After unshare(CLONE_NEWUSER): this user is root inside, as ``unshare -r`` does."""
    with open("/proc/self/setgroups", "w") as f:
        f.write("deny")
    with open("/proc/self/uid_map", "w") as f:
        f.write(f"0 {uid} 1")
    with open("/proc/self/gid_map", "w") as f:
        f.write(f"0 {gid} 1")


def _ifreq(name: str, payload: bytes = b"") -> bytes:
    return struct.pack("16s", name.encode()) + payload.ljust(24, b"\0")


def _sockaddr_in(address: str) -> bytes:
    return struct.pack("<H", socket.AF_INET) + b"\0\0" + socket.inet_aton(address)


def link_up(name: str, address: str | None = None, netmask: str | None = None) -> None:
    """Give interface ``name`` of this network namespace an IPv4 address, and bring it up."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        if address is not None:
            fcntl.ioctl(sock, _SIOCSIFADDR, _ifreq(name, _sockaddr_in(address)))
        if netmask is not None:
            fcntl.ioctl(sock, _SIOCSIFNETMASK, _ifreq(name, _sockaddr_in(netmask)))
        flags = struct.unpack_from("H", fcntl.ioctl(sock, _SIOCGIFFLAGS, _ifreq(name)), 16)[0]
        fcntl.ioctl(sock, _SIOCSIFFLAGS, _ifreq(name, struct.pack("H", flags | _IFF_UP)))
