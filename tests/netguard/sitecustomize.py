"""Test-only: refuse and record any network use except the loopback interface.

On PYTHONPATH (with ``SMMPI_NETGUARD_LOG`` set) it guards a whole process;
``install`` guards this one (tests/conftest.py does so for every AWS test).
"""

from __future__ import annotations

import os
import socket
from collections.abc import Callable
from typing import Any

_LOCAL = {"127.0.0.1", "::1", "localhost"}


def install(log: str) -> Callable[[], None]:
    """Guard this process, recording refusals in ``log``; returns the undo function."""
    connect, connect_ex, getaddrinfo = (
        socket.socket.connect,
        socket.socket.connect_ex,
        socket.getaddrinfo,
    )

    def refuse(what: str) -> None:
        with open(log, "a") as f:
            f.write(what + "\n")
        raise ConnectionRefusedError("netguard: refused " + what)

    def check(sock: socket.socket, address: Any) -> None:
        if sock.family == getattr(socket, "AF_UNIX", None):
            return
        host = address[0] if isinstance(address, tuple) else str(address)
        if str(host) not in _LOCAL:
            refuse(f"connect {host}")

    def guarded_connect(self: socket.socket, address: Any) -> None:
        check(self, address)
        return connect(self, address)

    def guarded_connect_ex(self: socket.socket, address: Any) -> int:
        check(self, address)
        return connect_ex(self, address)

    def guarded_getaddrinfo(host: Any, *args: Any, **kwargs: Any) -> Any:
        if host is not None and str(host) not in _LOCAL:
            refuse(f"lookup {host}")
        return getaddrinfo(host, *args, **kwargs)

    socket.socket.connect = guarded_connect  # type: ignore[method-assign]
    socket.socket.connect_ex = guarded_connect_ex  # type: ignore[method-assign]
    socket.getaddrinfo = guarded_getaddrinfo

    def undo() -> None:
        socket.socket.connect = connect  # type: ignore[method-assign]
        socket.socket.connect_ex = connect_ex  # type: ignore[method-assign]
        socket.getaddrinfo = getaddrinfo

    return undo


if __name__ == "sitecustomize" and os.environ.get("SMMPI_NETGUARD_LOG"):
    install(os.environ["SMMPI_NETGUARD_LOG"])
