"""The smmpi group: start-up without the SDK, the entry-point listing."""

from __future__ import annotations

import subprocess
import sys

from tests.helpers import smmpi

SEED_ENTRY_POINTS = ["demo", "point_to_point", "broadcast", "gather_reduce_broadcast"]


def test_entry_points_listing(env: dict[str, str]) -> None:
    r = smmpi(["entry-points"], env)
    assert r.returncode == 0
    names = {line.split()[0]: line for line in r.stdout.splitlines()}
    assert set(SEED_ENTRY_POINTS) <= set(names)
    assert "smmpi_runtime" not in names
    assert all(len(line.split(None, 1)) == 2 for line in names.values()), r.stdout


def test_help_does_not_import_the_sagemaker_sdk(env: dict[str, str]) -> None:
    code = (
        "import sys, runpy\nsys.argv = ['smmpi', '--help']\n"
        "try:\n    runpy.run_module('smmpi.cli', run_name='__main__')\n"
        "except SystemExit:\n    pass\n"
        "heavy = sorted(m for m in sys.modules if m.split('.')[0] in "
        "('sagemaker', 'boto3', 'botocore', 'numpy'))\n"
        "print('HEAVY', heavy)\n"
    )
    r = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60
    )
    assert "Usage:" in r.stdout
    assert "HEAVY []" in r.stdout, r.stdout[-500:]
