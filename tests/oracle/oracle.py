"""Ask the real toolkit: run ``driver.py`` in the toolkit's own venv, once per batch of cases."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
DRIVER = Path(__file__).resolve().parent / "driver.py"
VENV = Path(os.environ.get("SMMPI_TOOLKIT_VENV", str(ROOT / ".venv-toolkit")))
MARKER = VENV / ".installed"


def toolkit_python() -> Path:
    """The toolkit venv's interpreter, built by ``make .venv-toolkit/.installed`` if missing."""
    if not MARKER.exists():
        make = shutil.which("make")
        if make is None:
            raise RuntimeError(f"the toolkit venv {VENV} is missing and `make` is not installed")
        subprocess.run(
            [make, "-C", str(ROOT), f"TOOLKIT_VENV={VENV}", str(MARKER)],
            check=True,
            timeout=1200,
        )
    return VENV / "bin" / "python"


def ask(cases: list[dict[str, Any]], watch: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """One driver run for every case (and tag rewriting request); raises on any host's error."""
    done = subprocess.run(
        [str(toolkit_python()), str(DRIVER)],
        input=json.dumps({"cases": cases, "watch": watch or []}),
        capture_output=True,
        text=True,
        timeout=600,
        env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(VENV)},
    )
    if done.returncode != 0:
        raise RuntimeError(f"the oracle driver failed:\n{done.stderr}")
    answer: dict[str, Any] = json.loads(done.stdout)
    errors = [
        f"{case}/{host}: {state['error']}"
        for case, hosts in answer["cases"].items()
        for host, state in hosts.items()
        if "error" in state
    ]
    if errors:
        raise RuntimeError("the toolkit failed on:\n" + "\n".join(errors))
    return answer
