"""Exact mode's toolkit environment, built once by smmpi with pip (:mod:`.toolkits` says what).

Built in a temporary folder under ``~/.smmpi/toolkits`` (0700), renamed into place once
complete, and reused after; a build that fails leaves nothing, and one a killed run left is
removed by the next.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from smmpi.errors import SmmpiError
from smmpi.runners.base import Progress
from smmpi.runners.local.pip_lines import pip_reason
from smmpi.runners.local.toolkits import Toolkit, built_folder, sources, toolkit_of, variable_of

#: How long the one pip install may take, at most.
BUILD_SECONDS = 600.0


def clean_stale(root: Path) -> None:
    """Folders a build left when it was killed (its process is gone)."""
    for partial in root.glob(".building-*"):
        pid = partial.name.split("-")[1]
        if pid.isdigit() and not Path(f"/proc/{pid}").exists():
            shutil.rmtree(partial, ignore_errors=True)


def _pip(target: Path, wanted: tuple[str, ...], no_deps: bool, deadline: float) -> None:
    argv = [sys.executable, "-m", "pip", "install", "--quiet", "--no-input"]
    argv += ["--disable-pip-version-check", "--timeout", "30", "--retries", "1"]
    argv += ["--target", str(target), *(["--no-deps"] * no_deps), *wanted]
    left = max(1.0, deadline - _now())
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=left, check=False)
    except subprocess.TimeoutExpired:
        raise SmmpiError(f"pip took more than {BUILD_SECONDS:.0f} s") from None
    if done.returncode != 0:
        raise SmmpiError(pip_reason(done.stderr))


def _now() -> float:
    return time.monotonic()


def _build(toolkit: Toolkit, final: Path) -> None:
    root = final.parent
    partial = Path(tempfile.mkdtemp(prefix=f".building-{os.getpid()}-", dir=root))
    try:
        deadline = _now() + BUILD_SECONDS
        _pip(partial / "site", toolkit.requirements, False, deadline)
        if toolkit.as_is:
            _pip(partial / "site", toolkit.as_is, True, deadline)
        marker = {"requirements": toolkit.requirements, "as_is": toolkit.as_is}
        (partial / "toolkit.json").write_text(json.dumps(marker, indent=1) + "\n")
        os.chmod(partial, 0o700)
        try:
            partial.rename(final)
        except OSError:  # another run built it meanwhile: theirs is as good
            if not (final / "toolkit.json").is_file():
                raise
    finally:
        shutil.rmtree(partial, ignore_errors=True)


def ensure(image: str, progress: Progress) -> None:
    """Build smmpi's environment of the toolkit ``image`` runs, unless it is there or named.

    One progress line, one pip install bounded by :data:`BUILD_SECONDS`; a failure (no
    network, say) is one line (SmmpiError, exit 1) and leaves no folder behind.
    """
    if sources(image) is None:
        return
    toolkit = toolkit_of(image)
    variable = variable_of(toolkit)
    final = built_folder(toolkit)
    if os.environ.get(variable) or (final / "toolkit.json").is_file():
        return
    root = final.parent
    root.mkdir(mode=0o700, parents=True, exist_ok=True)
    for folder in (root.parent, root):
        os.chmod(folder, 0o700)
    clean_stale(root)
    progress(
        f"smmpi: exact mode: building the {toolkit.framework} images' toolkit ({toolkit.label}) "
        f"in {final}, once: pip install, at most {BUILD_SECONDS:.0f} s"
    )
    try:
        _build(toolkit, final)
    except (SmmpiError, OSError) as err:
        raise SmmpiError(
            f"exact mode: building the toolkit's environment failed: {err} (nothing was kept; "
            f"{variable} may name one already built, or SMMPI_TOOLKIT_VENV=none runs sshd only)"
        ) from None
