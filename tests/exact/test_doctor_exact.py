"""`smmpi doctor` says whether exact mode can run here, and what to install when not."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.helpers import base_env

PATCHED = (
    "import sys; from smmpi.runners.hosts import sshd; sshd.SSHD = {sshd!r}; "
    "from smmpi.cli import main; sys.argv[0] = 'smmpi'; main()"
)


def _exact_line(tmp_path: Path, sshd: str) -> str:
    done = subprocess.run(
        [sys.executable, "-c", PATCHED.format(sshd=sshd), "doctor", "--no-smoke"],
        capture_output=True,
        text=True,
        env=base_env(tmp_path),
        timeout=120,
    )
    assert "Traceback" not in done.stderr, done.stderr
    return next(line for line in done.stdout.splitlines() if line.split()[1:2] == ["exact"])


def test_exact_mode_available_with_sshd(tmp_path: Path) -> None:
    line = _exact_line(tmp_path, "/usr/sbin/sshd")
    assert line == "ok    exact       --exact: a real sshd on port 22 of every isolated instance"


def test_exact_mode_without_sshd_says_what_to_install(tmp_path: Path) -> None:
    line = _exact_line(tmp_path, "/nonexistent/sbin/sshd")
    assert line.startswith(
        "warn  exact       --exact unavailable: /nonexistent/sbin/sshd not found"
    )
    assert "fix: as root, with isolated hosts: `make sshd` (apt-get install openssh-server)" in line
