"""`make demo` on the oldest Python the project runs on here: Debian 12's own python3 (3.11.2)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from tests.helpers import ROOT, base_env

DEBIAN_PYTHON = "/usr/bin/python3"


def test_make_demo_with_debians_python(tmp_path: Path) -> None:
    version = subprocess.run(
        [DEBIAN_PYTHON, "-c", "import sys; print(*sys.version_info[:3])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    assert tuple(map(int, version)) < (3, 11, 4), (
        f"{DEBIAN_PYTHON} is {version}: it no longer tests an old one"
    )
    env = base_env(tmp_path)
    env["PATH"] = "/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin"  # not this venv's
    venv = tmp_path / "venv"
    done = subprocess.run(
        [
            shutil.which("make") or "make",
            "-C",
            str(ROOT),
            "demo",
            f"PYTHON={DEBIAN_PYTHON}",
            f"VENV={venv}",
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "demo: all 6 ranks verified their results" in done.stdout
    assert "Completed" in done.stderr + done.stdout
    assert (venv / "bin" / "python3").resolve().is_relative_to("/usr/bin")
