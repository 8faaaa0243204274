"""A code dir's ``requirements.txt``: reported, and installed only into the job's own folder."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from smmpi.errors import SmmpiError
from smmpi.runners.base import Progress


def requirements(code: Path, folder: Path, install: bool, progress: Progress) -> list[str]:
    """Say what the container would pip install; install it in the job's own folder if asked.

    SageMaker's container runs ``pip install -r requirements.txt`` from the
    code dir before the program starts. Here that would change this machine's
    environment, so it happens only on request, into ``<job>/site-packages``,
    which goes first on every rank's PYTHONPATH.
    """
    req = code / "requirements.txt"
    if not req.is_file():
        return []
    wanted = [
        ln.strip()
        for ln in req.read_text(encoding="utf-8").splitlines()
        if ln.strip() and not ln.lstrip().startswith("#")
    ]
    if not install:
        progress(
            f"smmpi: requirements.txt asks for {', '.join(wanted) or 'nothing'}: SageMaker's "
            "container pip-installs it; not installed here (use --install-requirements to "
            "install it into this job's own folder)"
        )
        return []
    target = folder / "site-packages"
    progress(f"smmpi: installing requirements.txt ({', '.join(wanted)}) into {target}")
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--quiet",
            "--target",
            str(target),
            "-r",
            str(req),
        ],
        capture_output=True,
        text=True,
        cwd=code,  # as the toolkit runs it: a relative path in the file is the code's
    )
    if done.returncode != 0:
        tail = (done.stderr.strip().splitlines() or ["pip failed"])[-1]
        raise SmmpiError(f"installing requirements.txt failed: {tail}")
    return [str(target)]


def install_package(
    code: Path, folder: Path, progress: Progress, python: str = sys.executable
) -> list[str]:
    """A code dir with a ``setup.py``: installed into the job's own folder, as the container does.

    The toolkit runs ``pip install .`` in the code dir, then the program as a
    module (``-m NAME``). Here the package alone goes into ``<job>/site-packages``
    (no dependencies, no download: ``--install-requirements`` installs those),
    built by this environment's setuptools (smmpi[aws] requires one that builds
    wheels by itself, as the images' setuptools and wheel do).
    """
    if not (code / "setup.py").is_file():
        return []
    target = folder / "site-packages"
    progress(f"smmpi: setup.py: installing the code into {target}, as the container does")
    pip = [python, "-m", "pip", "install", "--quiet", "--no-deps", "--no-index"]
    done = subprocess.run(
        [*pip, "--no-build-isolation", "--target", str(target), str(code)],
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        raise SmmpiError(f"installing the code's setup.py failed: {pip_reason(done.stderr)}")
    return [str(target)]


#: pip's own summary lines, which say that something failed but not what.
_GENERIC = ("subprocess-exited-with-error", "metadata-generation-failed", "See above")


def pip_reason(stderr: str) -> str:
    """The line of pip's output that says what went wrong (the build's own error first)."""
    lines = [ln.strip() for ln in stderr.splitlines() if ln.strip()]
    errors = [
        ln
        for ln in lines
        if re.match(r"(error|ERROR):|\w*(Error|Exception):", ln)
        and not any(g in ln for g in _GENERIC)
    ]
    if errors:
        return errors[0]
    useful = [ln for ln in lines if not any(g in ln for g in _GENERIC)]
    return (useful or ["pip failed"])[-1]
