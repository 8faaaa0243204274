"""``python -m smmpi.cli`` is the same CLI as the ``smmpi`` command."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.helpers import base_env


def test_python_m_runs_the_cli_with_its_exit_codes(tmp_path: Path) -> None:
    env = base_env(tmp_path)
    listed = subprocess.run(
        [sys.executable, "-m", "smmpi.cli", "entry-points"],
        env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert listed.returncode == 0, listed.stderr
    assert any(line.startswith("demo") for line in listed.stdout.splitlines())
    refused = subprocess.run(
        [sys.executable, "-m", "smmpi.cli", "run", "demo", "--ppn", "0"],
        env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert refused.returncode == 2
    assert refused.stderr.strip().startswith("smmpi: invalid ppn: 0; allowed: an integer")
