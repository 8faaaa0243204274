"""The local ``mpirun`` command: one MPMD app context per emulated instance.

::

    mpirun --oversubscribe --tag-output \\
        -np n --wdir <algo-1>/opt/ml/code python watch.py rank <algo-1.env> -- \\
            python -m mpi4py prog : \\
        -np n --wdir <algo-2>/opt/ml/code python watch.py rank <algo-2.env> -- \\
            python -m mpi4py prog : ...

so ranks are numbered by slot exactly as the container's ``--host algo-1:n,...``
maps them, and each sees its own instance's ``SM_*`` variables and ``/opt/ml``.
Each host's variables travel in its host file (:mod:`.hostfiles`), which the
rank watcher applies before the rank starts, not as ``-x`` flags: the command
line stays small whatever the number of hosts.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from smmpi.instances.machine import gpu_env
from smmpi.platform.layout import host_dirs, rank_variables
from smmpi.runners.local.hostfiles import host_file, rank_command, write_host_file
from smmpi.runners.local.mpi import Launcher
from smmpi.runners.local.translate import exports, local_flags, single_host_launcher
from smmpi.toolkit.mpirun import parse_custom_mpi_options, program_command
from smmpi.toolkit.shape import JobShape


def host_env(
    shape: JobShape,
    run_dir: Path,
    host: str,
    extra_env: dict[str, str] | None = None,
    extra_paths: Sequence[str] = (),
) -> dict[str, str]:
    """Every variable a rank on ``host`` gets on top of mpirun's own environment: the
    container's, with this instance's share of this machine's GPUs
    (:mod:`smmpi.instances.machine`)."""
    passed = {**gpu_env(shape, host), **(extra_env or {})}
    return rank_variables(shape, run_dir, host, passed, extra_paths)


def rank_argv(
    shape: JobShape, run_dir: Path, host: str, python: str, ranks: int | None = None
) -> list[str]:
    """One host's app context: its ranks (``ranks``, else n) start under the rank watcher
    with the host's file."""
    dirs = host_dirs(run_dir, host)
    program = program_command(shape.script, shape.package)
    command = [python, "-m", "mpi4py", *program, *shape.args(dirs)]
    return [
        "-np",
        str(shape.ppn if ranks is None else ranks),
        "--wdir",
        str(dirs.code),
        *rank_command(host_file(run_dir, host), command),
    ]


def mpirun_argv(
    shape: JobShape,
    run_dir: Path,
    launcher: Launcher,
    python: str,
    extra_env: dict[str, str] | None = None,
    extra_paths: Sequence[str] = (),
    stdin_closed: bool = True,
) -> list[str]:
    """The local mpirun command, one app context per emulated host; writes the host files.

    ``stdin_closed``: every rank reads end-of-file (as in a SageMaker job);
    otherwise rank 0 reads mpirun's stdin.
    """
    argv = [launcher.mpirun, *launcher.base_flags()]
    custom_exports: list[str] = []
    if launcher.implementation == "openmpi":
        _, custom = parse_custom_mpi_options(shape.custom_mpi_options)
        argv += single_host_launcher(launcher.major)
        argv += local_flags(custom)
        if stdin_closed:
            argv += ["--stdin", "none"]
        custom_exports = exports(custom)  # Open MPI 4.1: a -x reaches one app context
    for index, host in enumerate(shape.hosts):
        write_host_file(run_dir, host, host_env(shape, run_dir, host, extra_env, extra_paths))
        if not shape.ranks_on(index):  # past the container's -np: no rank there
            continue
        if index:
            argv.append(":")
        context = rank_argv(shape, run_dir, host, python, shape.ranks_on(index))
        argv += [*context[:2], *custom_exports, *context[2:]]  # after "-np n"
    return argv
