"""The launch agent: ``agent.py SOCKETS HOST WORDS...`` runs ``WORDS`` on emulated instance HOST.

Open MPI calls its ``plm_rsh_agent`` as it would call ssh: a host, then the remote command
as words that a login shell joins and runs. This agent asks HOST's launch service
(service.py, listening at ``SOCKETS/HOST``) to run them there, hands it this process's
stdin, stdout and stderr, forwards the signals it gets, and ends as the command ends:
with its exit code, 128 + the signal that killed it, or 255 when the instance is unknown
or gone (as ssh does). It needs no privilege.

It starts for every remote orted, so it imports only built-in modules (``python -I -S``).
"""

from __future__ import annotations

import _socket
import posix
import sys

TYPE_CHECKING = False  # not ``typing``'s: importing typing costs more than the rest

if TYPE_CHECKING:
    import signal as _signal
else:  # the C module: ``signal`` imports enum
    import _signal

FORWARDED = (
    _signal.SIGTERM,
    _signal.SIGINT,
    _signal.SIGHUP,
    _signal.SIGQUIT,
    _signal.SIGUSR1,
    _signal.SIGUSR2,
)
UNREACHABLE = 255


def _fail(message: str) -> None:
    posix.write(2, f"smmpi agent: {message}\n".encode())
    sys.exit(UNREACHABLE)


def _connect(folder: str, host: str) -> _socket.socket:
    if not host or "/" in host or host.startswith("."):
        _fail(f"no emulated instance named {host}")
    try:
        posix.chdir(folder)  # a relative name: socket paths have a length limit
        posix.stat(host)
    except OSError:
        _fail(f"no emulated instance named {host}")
    sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    try:
        sock.connect(host)
    except OSError as err:
        _fail(f"{host} does not answer ({err.strerror})")
    return sock


def _request(sock: _socket.socket, words: list[str]) -> None:
    env = posix.environ
    raw = b"\0".join([" ".join(words).encode(), *(k + b"=" + v for k, v in env.items())])
    fds = b"".join(fd.to_bytes(4, sys.byteorder) for fd in (0, 1, 2))
    size = len(raw).to_bytes(4, "big")
    sock.sendmsg([size], [(_socket.SOL_SOCKET, _socket.SCM_RIGHTS, fds)])
    sock.sendall(raw)


def _status(sock: _socket.socket) -> int:
    data = b""
    while len(data) < 4:
        try:
            chunk = sock.recv(4 - len(data))
        except OSError:
            chunk = b""
        if not chunk:
            return UNREACHABLE
        data += chunk
    status = int.from_bytes(data, "big", signed=True)
    if status & 0x7F:
        return 128 + (status & 0x7F)
    return (status >> 8) & 0xFF


def main(argv: list[str]) -> int:
    if len(argv) < 3:
        _fail("usage: agent.py SOCKETS HOST COMMAND...")
    sock = _connect(argv[1], argv[2])

    def forward(signo: int, _frame: object) -> None:
        try:
            sock.send(bytes([signo]))
        except OSError:
            pass

    for signo in FORWARDED:
        _signal.signal(signo, forward)
    _request(sock, argv[3:])
    return _status(sock)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
