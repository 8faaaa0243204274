"""A code's installs, as the container makes them, each into the job's own folder.

SageMaker's container runs ``pip install -r requirements.txt`` from the code dir, then
``pip install .`` when the code has a ``setup.py``, before the program starts. Here the
first changes nothing unless asked (``--install-requirements``); both go into
``<job>/site-packages``, which goes on every rank's PYTHONPATH, and both run in algo-1
(:mod:`.installs`), never in this machine's own environment.
"""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path

from smmpi.platform.layout import host_dirs
from smmpi.runners.base import Progress, RunOptions
from smmpi.runners.local import installs
from smmpi.runners.local.installs import Place
from smmpi.runners.local.req_files import TOP, shown
from smmpi.toolkit.shape import JobShape

__all__ = ["install_code", "install_package", "requirements"]


def requirements(
    wanted: list[str] | None,
    where: Place | None,
    folder: Path,
    progress: Progress,
    python: str = sys.executable,
) -> list[str]:
    """Say what the container would pip install (``wanted``: requirements.txt's lines, None:
    the code has none); install it at ``where`` if given (None: not asked)."""
    if wanted is None:
        return []
    if where is None:
        progress(
            f"smmpi: requirements.txt asks for {shown(wanted)}: SageMaker's container "
            "pip-installs it; not installed here (use --install-requirements to install it "
            "into this job's own folder)"
        )
        return []
    target = folder / "site-packages"
    progress(f"smmpi: installing requirements.txt ({shown(wanted)}) into {target}, on {where.host}")
    args = ["install", "--quiet", "--target", where.seen(target)]
    args += ["-r", where.seen(where.code / TOP)]
    installs.pip(where, python, args, "installing requirements.txt")
    return [str(target)]


def install_package(
    where: Place, folder: Path, progress: Progress, python: str = sys.executable
) -> list[str]:
    """A code dir with a ``setup.py``: installed into the job's own folder, as the container does.

    The toolkit runs ``pip install .`` in the code dir, then the program as a
    module (``-m NAME``). Here the package alone goes into ``<job>/site-packages``
    (no dependencies, no download: ``--install-requirements`` installs those),
    built by this environment's setuptools (smmpi[aws] requires one that builds
    wheels by itself, as the images' setuptools and wheel do).
    """
    if not (where.code / "setup.py").is_file():
        return []
    target = folder / "site-packages"
    target.mkdir(exist_ok=True)
    progress(f"smmpi: setup.py: installing the code into {target}, as the container does")
    args = ["install", "--quiet", "--no-deps", "--no-index", "--no-build-isolation"]
    args += ["--target", where.seen(target), where.seen(where.code)]
    installs.pip(where, python, args, "installing the code's setup.py")
    return [str(target)]


def install_code(
    wanted: list[str] | None,
    shape: JobShape,
    folder: Path,
    mode: str,
    options: RunOptions,
    start: float,
) -> tuple[list[str], JobShape]:
    """requirements.txt, then setup.py, in algo-1 of the run in ``folder``, within the run's
    ``--timeout`` from ``start``; the folders ranks import from, and the shape the code
    runs as (a package: ``-m NAME``, when it has a setup.py)."""
    run_dir = folder / "hosts"
    package = (host_dirs(run_dir, shape.hosts[0]).code / "setup.py").is_file()
    asked = wanted is not None and options.install_requirements
    if not (asked or package):
        requirements(wanted, None, folder, options.progress)
        return [], shape
    target = folder / "site-packages"
    target.mkdir(exist_ok=True)
    where = installs.place(mode, shape, run_dir, (target,), start, options.timeout)
    paths = requirements(wanted, where if asked else None, folder, options.progress)
    if package:  # the toolkit installs it and runs -m NAME
        paths = [*install_package(where, folder, options.progress), *paths]
        shape = replace(shape, package=True)
    return list(dict.fromkeys(paths)), shape
