"""Exact mode (``--exact``): each emulated instance reaches the others as the container does.

In exact mode every isolated instance runs a real sshd on port 22, configured as the Deep
Learning Containers configure it, with keys made for the run that live only in the
instances (:mod:`smmpi.instances.hosts.sshd`), and the container's mpirun line runs on
algo-1 with no launch agent: Open MPI starts ``orted`` on algo-k with ``ssh algo-k``,
as on SageMaker. The line's only remaining substitutions are this machine's Python for
the image's and the gethostname shim (:mod:`smmpi.instances.hosts.argv`).

Exact mode needs isolated hosts (Linux namespaces, Open MPI 4), root, and Debian's
``openssh-server``; :func:`check` refuses it in one line otherwise.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from smmpi.errors import BadInput
from smmpi.instances.hosts import launch, sshd
from smmpi.instances.machine import gpu_env
from smmpi.platform.layout import host_dirs, site_dir, stack_dir
from smmpi.runners.base import Progress
from smmpi.runners.local import instance_probes, modes, toolkit_build, toolkits
from smmpi.runners.local.hostfiles import WATCH, write_host_file
from smmpi.runners.local.venvs import cached_venv, site_packages
from smmpi.toolkit.container import start_env
from smmpi.toolkit.images import framework_of, torch_version
from smmpi.toolkit.shape import JobShape

FIELD = "--exact"
FIRST_LINE = (
    "smmpi: exact mode: a real sshd on port 22 of every instance, and the container's "
    "mpirun reaches the workers through ssh, as on SageMaker"
)


def unavailable(instances: int = 1, probe: bool = False) -> tuple[str, str] | None:
    """None when exact mode can run here; else (what is missing, in one line; its fix).
    ``probe``: isolated hosts are tried with a real pod (``smmpi doctor``)."""
    if os.geteuid() != 0:
        return "exact mode runs sshd as the instances' root", "run smmpi as root"
    missing = sshd.missing()
    if missing:
        return missing
    hosts = modes.hosts_unavailable(probe)
    if hosts is not None:
        return f"exact mode needs isolated hosts ({hosts[0]})", hosts[1]
    if instances > modes.HOSTS_MAX:
        why = f"isolated hosts run at most {modes.HOSTS_MAX} instances"
        return f"exact mode needs isolated hosts ({why})", f"at most {modes.HOSTS_MAX} instances"
    return None


def unavailable_reason(instances: int = 1) -> str | None:
    """What :func:`unavailable` says is missing and its fix, in one line; or None."""
    found = unavailable(instances)
    return f"{found[0]}: {found[1]}" if found else None


def check(isolation_mode: str | None, instances: int, image: str = "") -> None:
    """Refuse ``--exact`` (BadInput, exit 2) where it cannot run, before anything is created
    (a $SMMPI_TOOLKIT_VENV/_TF without the toolkit was refused when the container was
    chosen: :func:`toolkit_sources`)."""
    if isolation_mode == "processes" or (
        isolation_mode is None and os.environ.get("SMMPI_ISOLATION") == "processes"
    ):
        raise BadInput(FIELD, True, "isolated hosts only (not --isolation processes)")
    reason = unavailable_reason(instances)
    if reason:
        raise BadInput(FIELD, True, f"a machine where it can run ({reason})")
    missing = toolkits.missing_framework(toolkits.toolkit_of(image).framework)
    if missing:
        what, fix = missing
        raise BadInput(FIELD, True, f"an image whose toolkit has what it needs: {what}; {fix}")


def prepare(image: str, progress: Progress) -> None:
    """Build (once) the toolkit's environment for ``image``: call after every check of the
    input and before anything of the run is created (a failure is one line, exit 1)."""
    toolkit_build.ensure(image, progress)


def uses_toolkit(image: str) -> bool:
    """Whether exact mode runs the container's start (the toolkit's ``train``) for ``image``."""
    return toolkits.sources(image) is not None


TOOLKIT_VENV = toolkits.VENV
TOOLKIT_LINE = (
    "smmpi: exact mode: every instance runs the container's start, the sagemaker-training "
    "toolkit's `train` ({version}, from {where}), with a real sshd; the toolkit's own waits "
    "add about 30-60 s"
)
PYTORCH_MODULE = "sagemaker_pytorch_container.training:main"


def toolkit_sources(image: str = "") -> tuple[Path, ...] | None:
    """The folders the toolkit for ``image`` imports from (first first), or None: sshd only."""
    return toolkits.sources(image)


def toolkit_python(
    sources: tuple[Path, ...], absent: tuple[str, ...] = (), torch: str = ""
) -> Path:
    """The interpreter ``train`` and the ranks run with: a venv of this Python that sees the
    toolkit's packages, then this environment's (mpi4py, the user's packages), through a
    ``.pth`` file; built once per pair under ~/.smmpi/toolkits (0700) and reused. Each
    instance gets its own copy of it, where the toolkit's pip installs the code's
    requirements (launch.Pod.own_copies). ``train`` itself does not find the packages in
    ``absent`` (the framework the image does not ship); the ranks it starts do. ``torch``:
    the version of the image's torch, which ``train`` reads (``SM_DLC_TORCH_VERSION``)."""
    sitedirs = [*map(str, sources), site_packages()]
    train = _TRAIN.format(absent=repr(tuple(absent)), torch=repr(torch))
    probes = {instance_probes.MODULE: instance_probes.source()}
    startup = instance_probes.rank_startup()  # every rank under the rank watcher
    return cached_venv(
        toolkits.cache_root(), "toolkit", sitedirs, {"train": train}, probes, startup
    )


#: The container's ``train``. A PyTorch image has no TensorFlow: its toolkit's process finds
#: none (``process.get_tensorflow_exception_classes`` then logs so and picks no TensorFlow
#: error class), even where this environment has it; processes it starts are not affected.
_TRAIN = """import sys


class NotInTheImage:
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in {absent}:
            raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)
        return None


sys.meta_path.insert(0, NotInTheImage())
import smmpi_probes  # the instance type's GPUs and vCPUs, as its own probes count them

smmpi_probes.stand_in(sys.argv[0])
smmpi_probes.image_torch({torch})
from sagemaker_training.cli.train import main

sys.exit(main())
"""


def toolkit_env(
    shape: JobShape, base: dict[str, str], run_env: dict[str, str], venv_dir: Path
) -> dict[str, str]:
    """An instance's environment at the container's start: this machine's part (``base``:
    its MPI on PATH, HOME=/root), the image's ENV and the job's Environment, smmpi's
    run variables (``run_env``: the rank hook, its stack folder, Open MPI's session folder);
    no SM_* value: the toolkit computes them, as in the container."""
    env = {**base, **start_env(shape), **run_env}
    env.setdefault("SAGEMAKER_TRAINING_MODULE", PYTORCH_MODULE)
    env["PATH"] = os.pathsep.join([str(venv_dir / "bin"), base.get("PATH", "/usr/bin:/bin")])
    return env


def first_line(image: str = "") -> str:
    """The run's first line in exact mode: what runs on every instance, and from where."""
    found = toolkit_sources(image)
    if found is None:
        return FIRST_LINE
    toolkit = toolkits.toolkit_of(image)
    named = os.environ.get(toolkits.TF if toolkit.framework == "tensorflow" else TOOLKIT_VENV)
    where = named or f"smmpi's build in {found[0].parent}"
    return TOOLKIT_LINE.format(version=f"{toolkits.version_in(found)}", where=where)


_RUN_VARIABLES = ("PYTHONPATH", "SMMPI_LOCAL", "SMMPI_STACK_DIR", "OMPI_MCA_orte_tmpdir_base")


def toolkit_command(
    shape: JobShape,
    run_dir: Path,
    base: dict[str, str],
    first: dict[str, str],
    keep: tuple[Path, ...],
    toolkit: tuple[Path, ...],
) -> launch.Command:
    """The pod for exact mode with the toolkit: every instance runs ``train``, as the
    container starts; ``first`` is algo-1's fast-mode environment (smmpi's run variables)."""
    torch = torch_version(shape.image) if framework_of(shape.image) == "pytorch" else ""
    venv_dir = toolkit_python(toolkit, toolkits.toolkit_of(shape.image).absent, torch)
    run_env = {k: first[k] for k in _RUN_VARIABLES if k in first}
    run_env["PYTHONPATH"] = str(site_dir(run_dir))  # the rank hook, not /opt/ml/code
    # each rank the toolkit's mpirun starts goes under the rank watcher (instance_probes)
    run_env[instance_probes.WATCH] = str(WATCH)
    run_env[instance_probes.HOST_FILE] = str(write_host_file(run_dir, "isolated", {}))
    envs = tuple(
        {**toolkit_env(shape, base, run_env, venv_dir), **gpu_env(shape, h)} for h in shape.hosts
    )
    trees = tuple(host_dirs(run_dir, h).root for h in shape.hosts)
    train = str(venv_dir / "bin" / "train")
    roots = (*keep, venv_dir, *toolkit)
    pod = launch.Pod(
        tuple(shape.hosts),
        trees,
        run_dir,
        envs,
        roots,
        stack_dir(run_dir),
        True,
        (train,),
        own_copies=(venv_dir,),
    )
    # train runs as the container's first process does: what it leaves (its sshd) goes with
    # the instance, and the instance's first process reaps orphans
    return launch.command(pod, [train], envs[0], "/")


def stage_code(run_dir: Path, sourcedir: bytes, hyperparameters: dict[str, str]) -> dict[str, str]:
    """The job's code, staged for the toolkit to fetch and unpack itself into an empty
    ``/opt/ml/code``, as on SageMaker: ``sourcedir.tar.gz`` in the run folder (which every
    instance sees), named by the instances' ``sagemaker_submit_directory`` (the toolkit reads
    an ``s3://`` URI, a folder or a tarball's path; the instances have no route to S3).
    Returns the instances' ``hyperparameters.json`` values."""
    folder = run_dir / ".smmpi" / "code"
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    path = folder / "sourcedir.tar.gz"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(sourcedir)
    return {**hyperparameters, "sagemaker_submit_directory": json.dumps(str(path))}
