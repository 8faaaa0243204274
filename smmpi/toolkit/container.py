"""Every variable a rank starts with in the container, host by host (docs/TOOLKIT.md).

On each instance the toolkit's own process holds: the image's ENV, what
SageMaker sets (``TRAINING_JOB_NAME``, the request's ``Environment``), what
``Environment()`` and the framework toolkit export (:func:`framework_exports`),
and ``to_env_vars()`` with PYTHONPATH. Ranks on algo-1 inherit that from
mpirun; ranks on algo-2..N get their instance's copy (``/etc/environment``).
On every instance, mpirun's ``-x`` options then set what algo-1 forwards:
its ``SM_*`` values and PYTHONPATH (aws/sagemaker-training-toolkit issue #158),
and the NCCL/EFA settings of its line (:func:`forwarded`).

Two of the line's ``-x`` are not reproduced here: ``LD_PRELOAD`` (the
toolkit's gethostname shim is not installed on this machine) and the
machine's own ``PATH``/``LD_LIBRARY_PATH``, which stay this machine's.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from smmpi.toolkit.environment import NETWORK_INTERFACE, sm_env
from smmpi.toolkit.hosts import CONTAINER_ROOT, HostDirs
from smmpi.toolkit.images import framework_of, image_env, torch_version
from smmpi.toolkit.mpirun import efa_lists, parse_custom_mpi_options
from smmpi.toolkit.shape import JobShape

#: sagemaker_pytorch_container.training.MASTER_PORT
MASTER_PORT = "7777"
#: Not forwarded locally (see the module docstring).
NOT_EMULATED = frozenset({"LD_PRELOAD", "PATH", "LD_LIBRARY_PATH"})


def start_env(shape: JobShape) -> dict[str, str]:
    """What every process of the container starts with: image ENV, then SageMaker's."""
    env = image_env(shape.image) if shape.image else {}
    env["TRAINING_JOB_NAME"] = shape.job_name
    env.update(shape.environment)
    return env


def framework_exports(shape: JobShape, host: str) -> dict[str, str]:
    """What ``Environment()`` and the framework toolkit's ``main()`` add to ``os.environ``."""
    env = {
        "SAGEMAKER_JOB_NAME": shape.sagemaker_job_name or shape.job_name,
        "CURRENT_HOST": host,
        "SAGEMAKER_REGION": shape.region,
    }
    if not shape.image:
        return env
    if framework_of(shape.image) == "tensorflow":
        # s3_utils.configure: S3_REGION is the model_dir bucket's region for an s3:// model_dir.
        env.update(S3_REGION=shape.region, TF_CPP_MIN_LOG_LEVEL="1", S3_USE_HTTPS="1")
    else:
        env.update(
            NCCL_SOCKET_IFNAME=NETWORK_INTERFACE,
            NCCL_IB_DISABLE="1",
            NCCL_DEBUG="WARN",
            MASTER_ADDR=shape.hosts[0],
            MASTER_PORT=MASTER_PORT,
        )
        version = torch_version(shape.image)
        if version:
            env["SM_DLC_TORCH_VERSION"] = version
    return env


def host_env(shape: JobShape, dirs: HostDirs, host: str) -> dict[str, str]:
    """The toolkit process's environment on ``host`` when it starts mpirun or sshd."""
    env = start_env(shape)
    env.update(framework_exports(shape, host))
    env.update(sm_env(shape, dirs, host))
    env["PYTHONPATH"] = str(dirs.code)  # the toolkit's: the code dir, then its sys.path
    return env


def etc_environment(shape: JobShape, host: str, extra: dict[str, str] | None = None) -> str:
    """What a worker's toolkit appends to its ``/etc/environment``: its whole environment,
    ``NAME=value`` per line, with the container's paths (T ``mpi._write_env_vars_to_file``).
    algo-1 writes none.

    The container's own ``PATH``, ``HOME`` and ``HOSTNAME`` are not modelled (see NOT_EMULATED).
    """
    if host == shape.hosts[0]:
        return ""
    env = {**host_env(shape, HostDirs(Path(CONTAINER_ROOT)), host), **(extra or {})}
    return "".join(f"{name}={value}\n" for name, value in env.items())


def mpirun_assignments(shape: JobShape) -> list[str]:
    """The ``-x`` operands of the container's mpirun line, SM_* names aside (``mpirun.py``)."""
    nccl_debug, extra = parse_custom_mpi_options(shape.custom_mpi_options)
    xs = [
        "NCCL_MIN_NRINGS=4",
        f"NCCL_SOCKET_IFNAME={NETWORK_INTERFACE}",
        f"NCCL_DEBUG={nccl_debug}",
    ]
    xs += [extra[i + 1] for i, t in enumerate(extra[:-1]) if t == "-x"]
    nccl, rdma = efa_lists(shape.image)
    if shape.instance_type in nccl:
        xs += ["FI_PROVIDER=efa", "NCCL_PROTO=simple"]
    if shape.instance_type in rdma:
        xs += ["FI_EFA_USE_DEVICE_RDMA=1"]
    return xs


def forwarded(shape: JobShape, master: dict[str, str], dirs: HostDirs) -> dict[str, str]:
    """What algo-1's ``-x`` options set on every rank, given algo-1's environment."""
    out: dict[str, str] = {}
    for operand in mpirun_assignments(shape):
        name, eq, value = operand.partition("=")
        if eq:
            out[name] = value
        elif name in master:
            out[name] = master[name]
    names = [*sm_env(shape, dirs, shape.hosts[0]), "PYTHONPATH", *_credentials(master)]
    for name in names:
        out[name] = master[name]
    return {k: v for k, v in out.items() if k not in NOT_EMULATED}


def _credentials(env: dict[str, Any]) -> list[str]:
    """MasterRunner forwards these when its own environment has them."""
    names = ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN")
    return [n for n in names if n in env]


def rank_env(
    shape: JobShape, dirs: HostDirs, host: str, extra: dict[str, str] | None = None
) -> dict[str, str]:
    """Every variable a rank on ``host`` starts with (Open MPI's own aside).

    ``dirs`` is the rank's own instance tree: algo-1's forwarded values that name
    ``/opt/ml`` paths name the same paths on the rank's own instance, as they do
    in the container. ``extra`` is what the user passed to the ranks (it reaches
    every instance's environment, as a variable of the container would).
    """
    own = {**host_env(shape, dirs, host), **(extra or {})}
    master = {**host_env(shape, dirs, shape.hosts[0]), **(extra or {})}
    return {**own, **forwarded(shape, master, dirs)}
