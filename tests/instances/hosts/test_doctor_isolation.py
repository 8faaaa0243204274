"""`smmpi doctor` says whether local runs get isolated hosts here, and why not."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from tests.helpers import BIN, base_env


def _isolation_line(prefix: list[str], tmp_path: Path) -> str:
    env = base_env(tmp_path)
    done = subprocess.run(
        [*prefix, str(BIN / "smmpi"), "doctor", "--no-smoke"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert "Traceback" not in done.stderr, done.stderr
    return next(line for line in done.stdout.splitlines() if line.split()[1:2] == ["isolation"])


def test_available_as_root(tmp_path: Path) -> None:
    assert os.geteuid() == 0
    assert _isolation_line([], tmp_path) == (
        "ok    isolation   isolated hosts (root): each emulated instance has its own hostname, "
        "eth0, /opt/ml"
    )


def test_refused_without_capabilities_says_why(tmp_path: Path) -> None:
    """Root without CAP_SYS_ADMIN, as in a locked-down container: a warning with the reason."""
    line = _isolation_line(["setpriv", "--inh-caps=-all", "--bounding-set=-all"], tmp_path)
    assert line == (
        "warn  isolation   isolated hosts unavailable: the kernel refuses namespaces to root "
        "here ([Errno 1] unshare(0x44020000): Operation not permitted); local runs use processes "
        "mode; fix: run as root, or allow unprivileged user namespaces "
        "(sysctl kernel.unprivileged_userns_clone=1 / user.max_user_namespaces > 0)"
    )
