"""The pod of a ModelTrainer request: every instance starts as its container does.

A ModelTrainer request names its own start: ``ContainerEntrypoint`` + ``ContainerArguments``
(``/bin/bash -c "chmod +x .../sm_train.sh && .../sm_train.sh"``). Every isolated instance
runs exactly that, with a real sshd configured as exact mode configures it but not started:
the SDK's MPI driver (``mpi_driver.py``) starts ``/usr/sbin/sshd -D`` itself, reaches the
other instances with paramiko and ``ssh``, writes ``/etc/environment`` and builds its own
mpirun line on algo-1. Nothing of the driver is replaced.

The image's ``python3`` and ``pip3`` (``sm_train.sh`` looks both up on PATH) are this
machine's Python: a venv built once under ``~/.smmpi/drivers/<key>`` (0700) whose
``smmpi_driver.pth`` adds this environment's site-packages (mpi4py, paramiko, the user's
packages), so the driver, which starts ranks with its own ``sys.executable``, gives them
the same interpreter. The image's ENV and the request's Environment are every instance's.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
from collections.abc import Mapping
from pathlib import Path

from smmpi.errors import BadInput
from smmpi.instances.hosts import launch
from smmpi.instances.machine import gpu_env
from smmpi.platform.layout import host_dirs, site_dir, stack_dir
from smmpi.runners.local import instance_probes
from smmpi.runners.local.venvs import cached_venv, site_packages
from smmpi.toolkit.drivers.line import CONTAINER_PATH
from smmpi.toolkit.plan import ContainerPlan

FIELD = "--api model-trainer (a local run)"
LAUNCH_AGENT = "OMPI_MCA_orte_launch_agent"
_PIP = "import sys\nfrom pip._internal.cli.main import main\nsys.exit(main())\n"


def check_paramiko() -> None:
    """The driver imports paramiko (the images have it): refused in one line without it."""
    if importlib.util.find_spec("paramiko") is None:
        raise BadInput(
            FIELD,
            "paramiko not installed",
            "an environment with paramiko, which the SDK's MPI driver imports "
            "(pip install 'smmpi[aws]', or pip install paramiko)",
        )


def driver_python() -> Path:
    """The venv whose ``bin/python3`` and ``bin/pip3`` stand for the image's; built once."""
    root = Path.home() / ".smmpi" / "drivers"
    probes = {instance_probes.MODULE: instance_probes.source()}
    startup = instance_probes.driver_startup()
    return cached_venv(root, "driver", [site_packages()], {"pip3": _PIP}, probes, startup)


def instance_env(
    planned: ContainerPlan,
    base: Mapping[str, str],
    run_dir: Path,
    venv_dir: Path,
    passed: Mapping[str, str],
) -> dict[str, str]:
    """An instance's environment at the container's start: this machine's part (its MPI on
    PATH, HOME=/root), the image's ENV, the request's Environment, the job name (the plan's
    variables), the variables the user passed, and smmpi's rank hook (which arms in ranks only)."""
    env = {**base, **planned.environment, **passed}
    path = [str(venv_dir / "bin"), base.get("PATH", ""), CONTAINER_PATH]
    env["PATH"] = os.pathsep.join(p for p in path if p)
    env.update(
        PYTHONPATH=str(site_dir(run_dir)),
        SMMPI_LOCAL="1",
        SMMPI_STACK_DIR=str(stack_dir(run_dir)),
        OMPI_MCA_orte_tmpdir_base=str(run_dir / ".smmpi" / "ompi"),
    )
    orted = shutil.which("orted", path=base.get("PATH", ""))
    if planned.api == "remote" and orted and LAUNCH_AGENT not in env:
        # the DLCs' Open MPI is built --enable-orterun-prefix-by-default: mpirun starts orted
        # on the other instances by its full path (their ssh session's PATH lacks it), which
        # @remote's job script relies on; ModelTrainer's driver writes /etc/environment instead
        env[LAUNCH_AGENT] = orted
    return env


def pod_command(
    planned: ContainerPlan,
    venv_dir: Path,
    passed: Mapping[str, str],
    run_dir: Path,
    base: dict[str, str],
    keep: tuple[Path, ...],
) -> launch.Command:
    """Every instance runs the plan's entrypoint, algo-1's as the pod's command; the run
    ends when algo-1's ends, and the workers with it."""
    shape = planned.shape
    env = instance_env(planned, base, run_dir, venv_dir, passed)
    envs = tuple({**env, **gpu_env(shape, h), **passed} for h in shape.hosts)
    trees = tuple(host_dirs(run_dir, h).root for h in shape.hosts)
    argv = planned.line
    pod = launch.Pod(
        tuple(shape.hosts),
        trees,
        run_dir,
        envs,
        (*keep, venv_dir),
        stack_dir(run_dir),
        True,
        tuple(argv),
    )
    return launch.command(pod, argv, envs[0], "/")
