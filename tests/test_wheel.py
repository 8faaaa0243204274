"""Entry points are found from an installed wheel, not only from a checkout."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.helpers import ROOT


def test_wheel_carries_and_finds_the_entry_points(env: dict[str, str], tmp_path: Path) -> None:
    wheels = tmp_path / "wheels"
    build = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--quiet",
            "--no-deps",
            "--no-build-isolation",
            "-w",
            str(wheels),
            str(ROOT),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert build.returncode == 0, build.stderr
    (wheel,) = wheels.glob("smmpi-*.whl")
    site = tmp_path / "site"
    install = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--quiet",
            "--no-deps",
            "--target",
            str(site),
            str(wheel),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert install.returncode == 0, install.stderr
    env["PYTHONPATH"] = str(site)  # ahead of the editable checkout
    away = tmp_path / "elsewhere"
    away.mkdir()
    where = subprocess.run(
        [
            sys.executable,
            "-c",
            "import smmpi.catalog as c; print(c.__file__); print(c.entry_points_dir())",
        ],
        env=env,
        cwd=away,
        capture_output=True,
        text=True,
        timeout=60,
    )
    module, found = where.stdout.split()
    assert module.startswith(str(site)) and found == str(site / "smmpi" / "entry_points")
    listing = subprocess.run(
        [sys.executable, "-m", "smmpi.cli", "entry-points"],
        env=env,
        cwd=away,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert listing.returncode == 0 and "demo" in listing.stdout and "train" in listing.stdout
    run = subprocess.run(
        [sys.executable, "-m", "smmpi.cli", "run", "demo", "-N", "2", "-n", "1"],
        env=env,
        cwd=away,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stderr
    assert "demo: all 2 ranks verified their results" in run.stdout
