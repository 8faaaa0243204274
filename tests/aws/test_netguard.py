"""The network guard every AWS test runs under catches what it must."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

pytestmark = pytest.mark.aws


def test_guard_catches_outside_connections(guard: dict[str, str], env: dict[str, str]) -> None:
    """The guard itself works: a lookup of an AWS host is refused and recorded."""
    import sys

    code = (
        "import socket\n"
        "try:\n    socket.getaddrinfo('sts.amazonaws.com', 443)\nexcept OSError:\n    pass"
    )

    subprocess.run([sys.executable, "-c", code], env=env, check=True)
    log = Path(guard["SMMPI_NETGUARD_LOG"])
    assert "lookup sts.amazonaws.com" in log.read_text()
    log.write_text("")
