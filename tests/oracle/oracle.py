"""Ask the real toolkit: run ``driver.py`` in the toolkit's own venv, once per batch of cases.

A case whose image is a TensorFlow one is answered by sagemaker-training 4.8.3,
which those images run (sagemaker-tensorflow-training 20.5.0 pins
``sagemaker-training<=4.8.3``): the same venv, with 4.8.3 installed in a folder
of its own (:data:`TF_TOOLKIT`) first on ``PYTHONPATH``. Every other case, and
the tag-rewriting requests, are answered by the venv's 5.1.4.
"""

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
TF_TOOLKIT = Path(os.environ.get("SMMPI_TOOLKIT_TF", str(ROOT / ".toolkit-tf")))
TF_MARKER = TF_TOOLKIT / ".installed"
TF_MODULE = "sagemaker_tensorflow_container."


def _make(target: Path) -> None:
    make = shutil.which("make")
    if make is None:
        raise RuntimeError(f"{target.parent} is missing and `make` is not installed")
    subprocess.run(
        [make, "-C", str(ROOT), f"TOOLKIT_VENV={VENV}", f"TOOLKIT_TF={TF_TOOLKIT}", str(target)],
        check=True,
        timeout=1200,
    )


def toolkit_python() -> Path:
    """The toolkit venv's interpreter, built by ``make .venv-toolkit/.installed`` if missing."""
    if not MARKER.exists():
        _make(MARKER)
    return VENV / "bin" / "python"


def tf_toolkit() -> Path:
    """The folder holding sagemaker-training 4.8.3 (``make .toolkit-tf/.installed``)."""
    toolkit_python()
    if not TF_MARKER.exists():
        _make(TF_MARKER)
    return TF_TOOLKIT


def is_tensorflow(case: dict[str, Any]) -> bool:
    return str(case["env"].get("SAGEMAKER_TRAINING_MODULE", "")).startswith(TF_MODULE)


def _drive(
    cases: list[dict[str, Any]],
    watch: list[dict[str, Any]],
    path: Path | None,
    failures: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(VENV)}
    if path is not None:
        env["PYTHONPATH"] = str(path)
    done = subprocess.run(
        [str(toolkit_python()), str(DRIVER)],
        input=json.dumps({"cases": cases, "watch": watch, "failures": failures or []}),
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
    )
    if done.returncode != 0:
        raise RuntimeError(f"the oracle driver failed:\n{done.stderr}")
    answer: dict[str, Any] = json.loads(done.stdout)
    return answer


def ask(
    cases: list[dict[str, Any]],
    watch: list[dict[str, Any]] | None = None,
    failures: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """One driver run per toolkit version (and tag rewriting request); raises on any host's error.

    ``versions`` are the 5.1.4 run's; ``tf_versions`` those of the TensorFlow cases' run.
    """
    tf = [c for c in cases if is_tensorflow(c)]
    answer = _drive([c for c in cases if not is_tensorflow(c)], watch or [], None, failures)
    if tf:
        tf_answer = _drive(tf, [], tf_toolkit())
        answer["cases"].update(tf_answer["cases"])
        answer["tf_versions"] = tf_answer["versions"]
    errors = [
        f"{case}/{host}: {state['error']}"
        for case, hosts in answer["cases"].items()
        for host, state in hosts.items()
        if "error" in state
    ]
    if errors:
        raise RuntimeError("the toolkit failed on:\n" + "\n".join(errors))
    return answer
