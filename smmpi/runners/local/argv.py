"""The local ``mpirun`` command: one MPMD app context per emulated instance.

::

    mpirun --oversubscribe --tag-output \\
        -np n -x SM_CURRENT_HOST=algo-1 ... --wdir <algo-1>/opt/ml/code python -m mpi4py prog : \\
        -np n -x SM_CURRENT_HOST=algo-2 ... --wdir <algo-2>/opt/ml/code python -m mpi4py prog : ...

so ranks are numbered by slot exactly as the container's ``--host algo-1:n,...``
maps them, and each sees its own instance's ``SM_*`` variables and ``/opt/ml``.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from smmpi.runners.local.layout import host_dirs, site_dir, stack_dir
from smmpi.runners.local.mpi import Launcher
from smmpi.runners.local.translate import local_flags
from smmpi.toolkit.environment import sm_env
from smmpi.toolkit.mpirun import parse_custom_mpi_options
from smmpi.toolkit.shape import JobShape


def mpirun_argv(
    shape: JobShape,
    run_dir: Path,
    launcher: Launcher,
    python: str,
    extra_env: dict[str, str] | None = None,
    extra_paths: Sequence[str] = (),
) -> list[str]:
    """The local mpirun command: one app context per emulated host."""
    argv = [launcher.mpirun, *launcher.base_flags()]
    if launcher.implementation == "openmpi":
        _, custom = parse_custom_mpi_options(shape.custom_mpi_options)
        argv += local_flags(custom)
    for index, host in enumerate(shape.hosts):
        dirs = host_dirs(run_dir, host)
        env = sm_env(shape, dirs, host)
        env.update(shape.environment)
        env.update(
            PYTHONPATH=os.pathsep.join(
                p
                for p in (
                    str(site_dir(run_dir)),
                    str(dirs.code),
                    *extra_paths,
                    os.environ.get("PYTHONPATH"),
                )
                if p
            ),
            PYTHONUNBUFFERED="1",  # as in SageMaker's framework images
            SMMPI_LOCAL="1",
            SMMPI_STACK_DIR=str(stack_dir(run_dir)),
        )
        if extra_env:
            env.update(extra_env)
        if index:
            argv.append(":")
        argv += ["-np", str(shape.ppn)]
        for key in sorted(env):
            argv += ["-x", f"{key}={env[key]}"]
        argv += ["--wdir", str(dirs.code), python, "-m", "mpi4py", shape.script, *shape.args(dirs)]
    return argv
