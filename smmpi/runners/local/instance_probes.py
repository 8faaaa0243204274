"""The instance type's hardware (and the image's torch), as the container's start sees them.

The container's start counts the instance's GPUs with ``nvidia-smi --list-gpus`` and its
vCPUs with ``multiprocessing.cpu_count()`` (sagemaker-training's ``environment.num_gpus``
and ``num_cpus``; ModelTrainer's ``sm_drivers/scripts/environment.py`` alike) and gives
them to every rank as ``SM_NUM_GPUS``/``SM_NUM_CPUS`` and in ``SM_TRAINING_ENV``. Here the
instances run on this machine, whose counts are not the instance type's: in the process
that probes (the toolkit's ``train``, the driver's ``environment.py``), and in it only,
both probes answer with the counts of the instance's type
(``/opt/ml/input/config/resourceconfig.json``), from the same tables as the fast mode. The
ranks it starts see this machine, as in the fast mode.

Exact mode copies this file into the venvs that stand for the image's interpreter as
``smmpi_probes.py`` (:func:`smmpi.runners.local.venvs.cached_venv`); it imports nothing of
smmpi until it answers.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

MODULE = "smmpi_probes"
#: ModelTrainer's probing script, as ``sm_train.sh`` runs it.
DRIVER_SCRIPT = "/opt/ml/input/data/sm_drivers/scripts/environment.py"
RESOURCE_CONFIG = "/opt/ml/input/config/resourceconfig.json"
_LIST_GPUS = ["nvidia-smi", "--list-gpus"]


def instance_counts(path: str = RESOURCE_CONFIG) -> tuple[int, int | None] | None:
    """(GPUs, vCPUs) of this instance's type; vCPUs None where its name does not tell them;
    None without a readable resource config."""
    try:
        with open(path, encoding="utf-8") as f:
            kind = json.load(f)["current_instance_type"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    from smmpi.aws.facts import vcpus
    from smmpi.toolkit.images import num_gpus

    return num_gpus(str(kind)), vcpus(str(kind))


def _gpu_list(gpus: int) -> bytes:
    """What ``nvidia-smi --list-gpus`` prints on an instance with ``gpus`` GPUs."""
    return "".join(f"GPU {i}: smmpi (UUID: GPU-smmpi-{i})\n" for i in range(gpus)).encode()


def answer(gpus: int, cpus: int | None) -> None:
    """Make this process's probes answer ``gpus`` and ``cpus`` (None: this machine's)."""
    real = subprocess.check_output

    def check_output(cmd: Any, *args: Any, **kwargs: Any) -> Any:
        argv = list(cmd) if isinstance(cmd, (list, tuple)) else cmd
        if argv == _LIST_GPUS:
            if gpus == 0:  # a CPU instance's image has no nvidia-smi
                raise FileNotFoundError(2, "No such file or directory", "nvidia-smi")
            return _gpu_list(gpus)
        return real(cmd, *args, **kwargs)

    subprocess.check_output = check_output  # type: ignore[assignment]  # the probe itself
    if cpus is not None:
        os.cpu_count = lambda: cpus


def stand_in(prober: str) -> None:
    """In a process started as ``prober`` (its script's path), answer with the instance
    type's counts; elsewhere (a rank, pip) do nothing."""
    if sys.argv[:1] != [prober]:
        return
    counts = instance_counts()
    if counts is not None:
        answer(*counts)


def image_torch(version: str) -> None:
    """A PyTorch image's toolkit reads ``torch.__version__`` into ``SM_DLC_TORCH_VERSION``
    (``sagemaker_pytorch_container.training._set_torch_version_environment``), and uses no
    more of torch: this process gets the image's version (``2.8.0+cpu``), whatever torch
    this machine has, or none. The ranks import this machine's torch."""
    if version:
        import types

        torch = types.ModuleType("torch")
        torch.__version__ = version  # type: ignore[attr-defined]
        sys.modules["torch"] = torch


def source() -> str:
    """This module's text, which the venvs hold as ``smmpi_probes.py``."""
    with open(__file__, encoding="utf-8") as f:
        return f.read()


#: The rank watcher (``watch.py``) and the host file it reads, for the ranks of a container's
#: own mpirun line (the rank it starts has neither: it, and the Pythons it starts, are left alone).
WATCH, HOST_FILE = "SMMPI_WATCH", "SMMPI_RANK_HOST_FILE"


def watch_rank() -> None:
    """In a rank that the container's own mpirun line started (the real toolkit's
    ``python -m mpi4py``), start again under smmpi's rank watcher, which records how the rank
    ends, as smmpi's own line does; in any other process do nothing."""
    watch, host_file = os.environ.pop(WATCH, None), os.environ.pop(HOST_FILE, None)
    if not (watch and host_file and sys.orig_argv):
        return
    python = sys.executable
    argv = [python, "-I", "-S", watch, "rank", host_file, "--", python, *sys.orig_argv[1:]]
    os.execv(python, argv)


def rank_startup() -> str:
    """The ``.pth`` statement of the toolkit's venv: in an MPI rank only, :func:`watch_rank`
    (every other process of that venv pays one lookup)."""
    ranks = "'OMPI_COMM_WORLD_RANK' in __import__('os').environ"
    return f"{ranks} and __import__({MODULE!r}).watch_rank()"


def driver_startup() -> str:
    """The ``.pth`` statement of the driver's venv: in ``environment.py`` only, the stand-in
    (every other process of that venv, the ranks among them, pays one comparison)."""
    return (
        f"sys.argv[:1] == [{DRIVER_SCRIPT!r}] and "
        f"__import__({MODULE!r}).stand_in({DRIVER_SCRIPT!r})"
    )
