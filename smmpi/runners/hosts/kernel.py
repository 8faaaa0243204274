"""The few Linux system calls isolated hosts need, through ctypes (Python 3.10 has no os.setns).

Everything here is a thin, checked wrapper: a failing call raises ``OSError`` with the
call's name, so the set-up can say which step the kernel refused.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import fcntl
import os
import socket
import struct

CLONE_NEWNS = 0x00020000
CLONE_NEWUTS = 0x04000000
CLONE_NEWUSER = 0x10000000
CLONE_NEWPID = 0x20000000
CLONE_NEWNET = 0x40000000

MS_NOSUID, MS_NODEV, MS_NOEXEC = 0x2, 0x4, 0x8
MS_BIND, MS_REC, MS_PRIVATE = 0x1000, 0x4000, 0x40000

PR_SET_PDEATHSIG = 1

_SIOCGIFFLAGS, _SIOCSIFFLAGS = 0x8913, 0x8914
_SIOCSIFADDR, _SIOCSIFNETMASK = 0x8916, 0x891C
_IFF_UP = 0x1

_libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)


def _check(result: int, call: str, what: str = "") -> None:
    if result != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{call}({what}): {os.strerror(err)}")


def unshare(flags: int) -> None:
    _check(_libc.unshare(ctypes.c_int(flags)), "unshare", hex(flags))


def setns(fd: int, nstype: int = 0) -> None:
    _check(_libc.setns(ctypes.c_int(fd), ctypes.c_int(nstype)), "setns", str(nstype))


def enter(pid: int, kinds: tuple[str, ...] = ("uts", "net", "mnt")) -> None:
    """Join the namespaces of process ``pid`` (as nsenter -t pid does), then cd to /."""
    fds = [os.open(f"/proc/{pid}/ns/{kind}", os.O_RDONLY | os.O_CLOEXEC) for kind in kinds]
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


def sethostname(name: str) -> None:
    raw = name.encode()
    _check(_libc.sethostname(raw, ctypes.c_size_t(len(raw))), "sethostname", name)


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
