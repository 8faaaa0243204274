"""An ``@remote`` job's S3 endpoint: sockets inside its instances, answered by serve itself.

An emulated instance has no route off this machine, to serve's port included. For an
``@remote`` job serve binds a unix socket (the *relay*) in the job's work folder; the job's
worker moves it into the run folder, which the instances see, and each instance starts by
handing serve a socket listening on its own loopback
(:mod:`smmpi.platform.instance_endpoint`). serve checks what it got (a listening TCP socket
on 127.0.0.1, one per instance, from a process of this user's), then accepts its
connections and answers them with its own HTTP handler, marked as the job's: there, only
the job's minted key signs (:mod:`.job_keys`). Everything closes as the job ends, the
connections clients keep alive included.
"""

from __future__ import annotations

import array
import contextlib
import os
import selectors
import socket
import struct
import threading
import weakref
from collections.abc import Callable
from pathlib import Path

Serve = Callable[[socket.socket, object, str], None]  # a connection, its address, the job
_CRED = struct.Struct("3i")  # SO_PEERCRED: pid, uid, gid
HAND_OVER_SECONDS = 10.0  # an instance that has not sent its socket by then is dropped


def _bind(path: Path) -> socket.socket:
    """A unix socket listening at ``path`` (0600), bound through its folder's descriptor."""
    folder = os.open(path.parent, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        old = os.umask(0o177)
        try:
            sock.bind(f"/proc/self/fd/{folder}/{path.name}")
        finally:
            os.umask(old)
        sock.listen(16)
    except OSError:
        sock.close()
        raise
    finally:
        os.close(folder)
    return sock


def _received(conn: socket.socket) -> socket.socket | None:
    """The one descriptor an instance sent, if it is a TCP socket listening on 127.0.0.1."""
    space = socket.CMSG_SPACE(4 * 4)
    _, ancillary, _, _ = conn.recvmsg(256, space)
    fds = array.array("i")
    for level, kind, data in ancillary:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            fds.frombytes(data[: len(data) - len(data) % fds.itemsize])
    for extra in fds[1:]:
        os.close(extra)
    if not fds:
        return None
    try:
        sock = socket.socket(fileno=fds[0])
    except OSError:
        os.close(fds[0])
        return None
    listening = sock.getsockopt(socket.SOL_SOCKET, socket.SO_ACCEPTCONN)
    good = sock.family == socket.AF_INET and sock.type == socket.SOCK_STREAM and listening
    if not good or sock.getsockname()[0] != "127.0.0.1":
        sock.close()
        return None
    return sock


class JobEndpoint:
    """The relay of job ``job`` at ``path`` and, once its instances have sent them, their
    listeners; at most ``instances`` of them. :meth:`close` ends it all."""

    def __init__(self, job: str, path: Path, instances: int, serve: Serve) -> None:
        self.job, self.path, self.instances, self.serve = job, path, instances, serve
        self.relay = _bind(path)
        self.listeners: list[socket.socket] = []
        self.connections: weakref.WeakSet[socket.socket] = weakref.WeakSet()
        self.chooser = selectors.DefaultSelector()
        self.chooser.register(self.relay, selectors.EVENT_READ, self._hand_over)
        self.ended = threading.Event()
        self.thread = threading.Thread(target=self._loop, daemon=True)
        self.thread.start()

    def _loop(self) -> None:
        while not self.ended.is_set():
            for key, _ in self.chooser.select(0.5):
                with contextlib.suppress(OSError):
                    key.data(key.fileobj)

    def _hand_over(self, relay: socket.socket) -> None:
        conn, _ = relay.accept()
        with conn:
            conn.settimeout(HAND_OVER_SECONDS)
            uid = _CRED.unpack(conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, 12))[1]
            got = _received(conn) if uid == os.getuid() else None
            if got is None or len(self.listeners) >= self.instances:
                if got is not None:
                    got.close()
                conn.sendall(b"refused: one listening TCP socket on 127.0.0.1 per instance\n")
                return
            got.setblocking(False)
            self.listeners.append(got)
            self.chooser.register(got, selectors.EVENT_READ, self._accept)
            conn.sendall(b"ok\n")

    def _accept(self, listener: socket.socket) -> None:
        conn, address = listener.accept()
        conn.setblocking(True)
        self.connections.add(conn)
        self.serve(conn, address, self.job)

    def close(self) -> None:
        self.ended.set()
        if self.thread is not threading.current_thread():
            self.thread.join(timeout=5)
        for sock in [self.relay, *self.listeners]:
            with contextlib.suppress(OSError):
                sock.close()
        for conn in list(self.connections):  # a kept-alive client's too: nothing answers now
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)
        self.chooser.close()
        with contextlib.suppress(OSError):
            self.path.unlink()
