"""Whether this machine can run isolated hosts, and the one line that says why not."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from smmpi.instances.hosts import availability

ROOT = Path(__file__).resolve().parents[3]
ASK = "from smmpi.instances.hosts import availability; print(availability.unavailable_reason())"


def test_available_here_as_root() -> None:
    assert availability.quick_reason() is None
    assert availability.unavailable_reason() is None


def test_without_capabilities_it_says_why() -> None:
    """Root without CAP_SYS_ADMIN (a locked-down container): refused, and the line says so."""
    done = subprocess.run(
        ["setpriv", "--inh-caps=-all", "--bounding-set=-all", sys.executable, "-c", ASK],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == (
        "the kernel refuses namespaces to root here "
        "([Errno 1] unshare(0x44020000): Operation not permitted)"
    )
