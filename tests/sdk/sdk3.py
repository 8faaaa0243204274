"""SDK v3's interpreter: a venv of its own (v3 and v2 both own the `sagemaker` package)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from tests.helpers import ROOT

VERSION = "3.27.0"  # the Makefile's SDK3_VERSION


def sdk3_python() -> str:
    """``$SMMPI_TEST_SDK3_PYTHON`` (set by `make test`), else ``make .venv-sdk3/...`` builds it."""
    given = os.environ.get("SMMPI_TEST_SDK3_PYTHON")
    if given:
        return given
    venv = ROOT / ".venv-sdk3"
    marker = venv / f".installed-{VERSION}"
    if not marker.exists():
        make = shutil.which("make")
        assert make is not None, f"{venv} is missing and `make` is not installed"
        subprocess.run([make, "-C", str(ROOT), str(marker.relative_to(ROOT))], check=True)
    return str(Path(venv) / "bin" / "python")
