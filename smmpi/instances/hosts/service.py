"""Each instance's launch service: what sshd is on a SageMaker worker, for the launch agent.

The instance's holder listens on a socket named after the instance. The launch agent
(agent.py, Open MPI's ``plm_rsh_agent``) connects, hands over its stdin, stdout and
stderr with the command and its environment; the service starts ``/bin/sh -c COMMAND``
in the instance, as the container's processes run: with the instance's own environment
(or the agent's, when the instance has none), in a session of its own, and with the
container's capabilities only. Signals the agent receives reach the command; when the
agent goes away the command is killed (as sshd hangs up a dropped session); the agent
ends as the command ends.

So nothing a rank can start holds more than a container's capabilities: the agent
itself needs none to reach another instance.
"""

from __future__ import annotations

import contextlib
import os
import selectors
import signal
import socket
import struct
from dataclasses import dataclass

from smmpi.instances.hosts import kernel

LENGTH = struct.Struct("!I")  # the request's size, then the request
STATUS = struct.Struct("!i")  # the command's wait status, sent back when it ends
FDS = 3  # the agent's stdin, stdout and stderr
MAX_REQUEST = 64 << 20
REQUEST_SECONDS = 10.0  # a client that has not sent its request by then is dropped
FORWARDED = frozenset(
    (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1, signal.SIGUSR2)
)


def _decode(raw: bytes) -> tuple[str, dict[str, str]]:
    """A request (agent.py writes it): the command, then the environment, NUL-separated."""
    command, *entries = raw.split(b"\0")
    env = {}
    for entry in entries:
        name, eq, value = entry.partition(b"=")
        if eq and name:
            env[name.decode(errors="surrogateescape")] = value.decode(errors="surrogateescape")
    return command.decode(errors="surrogateescape"), env


def _receive(conn: socket.socket) -> tuple[bytes, list[int]]:
    """The request and the three descriptors that come with it."""
    conn.settimeout(REQUEST_SECONDS)
    space = socket.CMSG_SPACE(FDS * 4)
    data, ancillary, _, _ = conn.recvmsg(LENGTH.size, space, socket.MSG_CMSG_CLOEXEC)
    fds: list[int] = []
    for level, kind, payload in ancillary:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            count = len(payload) // 4
            fds += list(struct.unpack(f"{count}i", payload[: count * 4]))
    if len(fds) != FDS or len(data) != LENGTH.size:
        for fd in fds:
            os.close(fd)
        raise OSError("a launch request without its descriptors")
    (size,) = LENGTH.unpack(data)
    if size > MAX_REQUEST:
        raise OSError("a launch request too large")
    raw = bytearray()
    while len(raw) < size:
        chunk = conn.recv(min(size - len(raw), 1 << 20))
        if not chunk:
            raise OSError("a launch request cut short")
        raw += chunk
    conn.settimeout(None)
    return bytes(raw), fds


def _child(command: str, env: dict[str, str], fds: list[int]) -> None:
    """In the forked child: the command, as the container would run it."""
    try:
        os.setsid()
        for target, fd in enumerate(fds):
            os.dup2(fd, target, inheritable=True)
        signal.pthread_sigmask(signal.SIG_SETMASK, [])
        for signo in FORWARDED:
            signal.signal(signo, signal.SIG_DFL)
        home = env.get("HOME", "/")
        os.chdir(home if os.path.isdir(home) else "/")
        kernel.drop_capabilities()
        os.execve("/bin/sh", ["sh", "-c", command], env)
    except OSError as err:
        with contextlib.suppress(OSError):
            os.write(2, f"smmpi: cannot start a command here: {err}\n".encode())
    os._exit(127)


@dataclass
class Session:
    conn: socket.socket
    pid: int
    pidfd: int


def _start(conn: socket.socket, own_env: dict[str, str] | None) -> Session | None:
    try:
        raw, fds = _receive(conn)
    except OSError:
        conn.close()
        return None
    command, env = _decode(raw)
    pid = os.fork()
    if pid == 0:
        _child(command, own_env if own_env is not None else env, fds)
    for fd in fds:
        os.close(fd)
    return Session(conn, pid, os.pidfd_open(pid))


def _reap(sel: selectors.BaseSelector, sessions: dict[int, Session]) -> None:
    """Collect every child that has ended; a session's command gets its status sent back."""
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        session = sessions.pop(pid, None)
        if session is not None:
            with contextlib.suppress(OSError):
                session.conn.sendall(STATUS.pack(status))
            _close(sel, session)


def _close(sel: selectors.BaseSelector, session: Session) -> None:
    for item in (session.conn, session.pidfd):
        with contextlib.suppress(KeyError, ValueError):
            sel.unregister(item)
    session.conn.close()
    os.close(session.pidfd)


def _from_agent(sel: selectors.BaseSelector, session: Session) -> None:
    """Signals the agent forwards; end of file: the agent is gone, so is the command."""
    try:
        data = session.conn.recv(64)
    except OSError:
        data = b""
    if data:
        for signo in data:
            if signo in FORWARDED:
                with contextlib.suppress(OSError):
                    os.kill(session.pid, signo)
        return
    with contextlib.suppress(OSError):
        os.killpg(session.pid, signal.SIGKILL)
    sel.unregister(session.conn)  # its end still comes through the pidfd


def serve(listener: socket.socket, pod: int, env: dict[str, str] | None) -> int:
    """Start what agents ask for until ``pod`` (a pipe from the pod) reaches end of file."""
    sel = selectors.DefaultSelector()
    sel.register(listener, selectors.EVENT_READ, "listener")
    sel.register(pod, selectors.EVENT_READ, "pod")
    sessions: dict[int, Session] = {}
    while True:
        for key, _ in sel.select():
            if key.data == "pod":
                if not os.read(pod, 64):
                    return 0
            elif key.data == "listener":
                conn, _ = listener.accept()
                session = _start(conn, env)
                if session is not None:
                    sessions[session.pid] = session
                    sel.register(session.conn, selectors.EVENT_READ, ("agent", session))
                    sel.register(session.pidfd, selectors.EVENT_READ, ("ended", session))
            elif key.data[0] == "agent":
                _from_agent(sel, key.data[1])
        _reap(sel, sessions)
