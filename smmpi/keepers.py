"""Keepers: processes of this user's that outlive one command to keep something ready for the
next one (warm instances: ``smmpi run --keep-warm``; the imported SageMaker SDK:
``SMMPI_WARM_SDK``).

Their sockets live in ``$SMMPI_WARM_DIR`` (default ``~/.smmpi/warm``), a folder of this user's,
0700, never a link; each socket is 0600 and answers only processes of the same user. A keeper
says ``ok`` on a descriptor once it is ready; a socket whose keeper is gone (killed) is removed
by the next command that looks for it. The first line a client sends says what it wants:
``end`` ends any keeper.
"""

from __future__ import annotations

import contextlib
import os
import select
import socket
import stat
import struct
import subprocess
from collections.abc import Sequence
from pathlib import Path

START_SECONDS = 60.0  # a keeper that is not ready by then is given up on
REQUEST_SECONDS = 5.0  # a client that has not said what it wants by then is dropped
_CRED = struct.Struct("3i")  # SO_PEERCRED: pid, uid, gid


class Refused(Exception):
    """Why a keeper cannot be used (the command goes on without it; the message is one line)."""


def folder(create: bool = True, sub: str = "") -> Path:
    """The keepers' folder (or its folder ``sub``): this user's own, 0700, not a link (made if
    ``create``)."""
    where = Path(os.environ.get("SMMPI_WARM_DIR") or Path.home() / ".smmpi" / "warm")
    for path in (where, where / sub) if sub else (where,):
        if create:
            path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            with contextlib.suppress(FileExistsError):
                path.mkdir(mode=0o700)
        info = os.lstat(path)
        if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid() or info.st_mode & 0o077:
            raise Refused(f"{path} is not a folder of this user's only (0700, not a link)")
    return where / sub if sub else where


def connect(path: Path) -> socket.socket | None:
    """The keeper at ``path``; None when there is none (a stale socket is removed)."""
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return None
    if not stat.S_ISSOCK(info.st_mode) or info.st_uid != os.getuid():
        raise Refused(f"{path} is not a keeper's socket; leaving it as it is")
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    here = os.open(path.parent, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
    try:  # through the folder's descriptor: a socket's path has a length limit
        sock.connect(f"/proc/self/fd/{here}/{path.name}")
    except (ConnectionRefusedError, FileNotFoundError):
        sock.close()
        with contextlib.suppress(FileNotFoundError):
            if os.lstat(path).st_ino == info.st_ino:
                os.unlink(path)  # its keeper was killed: what it left goes
        return None
    finally:
        os.close(here)
    return sock


def start(argv: Sequence[str], env: dict[str, str], name: str) -> None:
    """Start the keeper ``argv`` (the descriptor it says ``ok`` on is its last argument) in a
    session of its own, and wait until it is ready; :class:`Refused` if it is not."""
    ready_r, ready_w = os.pipe()
    try:
        subprocess.Popen(
            [*argv, str(ready_w)],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            env=env,
            cwd="/",
            pass_fds=(ready_w,),
            start_new_session=True,  # it outlives this command, and no terminal's signal reaches it
        )
    finally:
        os.close(ready_w)
    with os.fdopen(ready_r, "rb") as ready:
        said = b""
        if select.select([ready], [], [], START_SECONDS)[0]:
            said = ready.readline()
    if said.strip() != b"ok":
        why = said.decode(errors="replace").strip() or "no answer"
        raise Refused(f"the keeper of {name} did not start: {why}")


def tell(path: Path, what: str = "end") -> bool:
    """Tell the keeper at ``path`` to end (or ``keep N``); whether one was there."""
    sock = connect(path)
    if sock is None:
        return False
    with sock:
        sock.settimeout(10)
        sock.sendall(f"{what}\n".encode())
        with contextlib.suppress(OSError):
            sock.recv(64)
    return True


def listen(where: str, name: str) -> socket.socket:
    """A socket ``where/name`` to serve on (bound by a relative name: any length of path)."""
    here = os.open(".", os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        os.chdir(where)
        with contextlib.suppress(FileNotFoundError):
            os.unlink(name)
        sock.bind(name)
        sock.listen(128)
    except OSError:
        sock.close()
        raise
    finally:
        os.fchdir(here)
        os.close(here)
    return sock


def peer_uid(conn: socket.socket) -> int:
    raw = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, _CRED.size)
    return int(_CRED.unpack(raw)[1])


def peer_pid(conn: socket.socket) -> int:
    raw = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, _CRED.size)
    return int(_CRED.unpack(raw)[0])


def asked(conn: socket.socket) -> str:
    """What a client of this user's asks (its first line); "" from another user or none."""
    if peer_uid(conn) != os.getuid():
        return ""
    conn.settimeout(REQUEST_SECONDS)
    line = b""
    try:
        while not line.endswith(b"\n") and len(line) < 64:
            got = conn.recv(1)
            if not got:
                break
            line += got
    except OSError:
        return ""
    finally:
        conn.settimeout(None)
    return line.decode(errors="replace").strip()


def is_ours(path: Path, inode: int) -> bool:
    """Whether ``path`` is still the socket of inode ``inode`` (no other keeper took it)."""
    try:
        return os.lstat(path).st_ino == inode
    except OSError:
        return False
