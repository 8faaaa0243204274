"""What the image and the instance add to a rank's environment: Dockerfile ENV, GPU count.

The ENV lines are those of the ``sagemaker`` stage of aws/deep-learning-containers'
Dockerfiles (docs/TOOLKIT.md cites each file): TensorFlow 2.19 and PyTorch 2.8,
CPU and GPU. Other versions of the same framework get the same table, with
their own ``TF_VERSION`` and ``PYTHON``. ``PATH`` and ``LD_LIBRARY_PATH`` are left
to the machine: here they must find this machine's interpreter and MPI.
"""

from __future__ import annotations

import re

_COMMON = {
    "PYTHONDONTWRITEBYTECODE": "1",
    "PYTHONUNBUFFERED": "1",
    "PYTHONIOENCODING": "UTF-8",
    "LANG": "C.UTF-8",
    "LC_ALL": "C.UTF-8",
    "DEBIAN_FRONTEND": "noninteractive",
}
_TF = {
    **_COMMON,
    "DEBCONF_NONINTERACTIVE_SEEN": "true",
    "KMP_AFFINITY": "granularity=fine,compact,1,0",
    "KMP_BLOCKTIME": "1",
    "KMP_SETTINGS": "0",
    "PIP": "pip3",
    "SAGEMAKER_TRAINING_MODULE": "sagemaker_tensorflow_container.training:main",
}
_PT = {
    **_COMMON,
    "DLC_CONTAINER_TYPE": "training",
    "SAGEMAKER_TRAINING_MODULE": "sagemaker_pytorch_container.training:main",
}
_GPU = {"OPEN_MPI_PATH": "/opt/amazon/openmpi", "EFA_PATH": "/opt/amazon/efa"}
IMAGE_ENV: dict[tuple[str, str], dict[str, str]] = {
    ("tensorflow", "cpu"): _TF,
    ("tensorflow", "gpu"): {**_TF, **_GPU, "RDMAV_FORK_SAFE": "1", "TF_AUTOTUNE_THRESHOLD": "2"},
    ("pytorch", "cpu"): _PT,
    ("pytorch", "gpu"): {
        **_PT,
        **_GPU,
        "CUDA_HOME": "/usr/local/cuda",
        "TORCH_NVCC_FLAGS": "-Xfatbin -compress-all",
        "NVTE_FRAMEWORK": "pytorch",
    },
}
# The Python each default image builds from source (ARG PYTHON_VERSION), by image tag.
_PYTHON_BUILDS = {
    "tensorflow-training:2.19.0-cpu-py312": "3.12.11",
    "tensorflow-training:2.19.0-gpu-py312": "3.12.11",
}

# GPUs per accelerated instance type (EC2's published figures); the toolkit counts them
# with ``nvidia-smi --list-gpus`` into SM_NUM_GPUS.
_ONE_GPU_SIZES = ("xlarge", "2xlarge", "4xlarge", "8xlarge", "16xlarge")
_GPUS: dict[str, int] = {
    "ml.p2.xlarge": 1,
    "ml.p2.8xlarge": 8,
    "ml.p2.16xlarge": 16,
    "ml.p3.2xlarge": 1,
    "ml.p3.8xlarge": 4,
    "ml.p3.16xlarge": 8,
    "ml.p3dn.24xlarge": 8,
    "ml.p4d.24xlarge": 8,
    "ml.p4de.24xlarge": 8,
    "ml.p5.48xlarge": 8,
    "ml.p5e.48xlarge": 8,
    "ml.p5en.48xlarge": 8,
    "ml.p6-b200.48xlarge": 8,
    **{f"ml.{g}.{s}": 1 for g in ("g4dn", "g5", "g6", "g6e") for s in _ONE_GPU_SIZES},
    **{f"ml.{g}.12xlarge": 4 for g in ("g4dn", "g5", "g6", "g6e")},
    **{f"ml.{g}.24xlarge": 4 for g in ("g5", "g6", "g6e")},
    **{f"ml.{g}.48xlarge": 8 for g in ("g5", "g6", "g6e")},
}


def num_gpus(instance_type: str) -> int:
    """SM_NUM_GPUS on this instance type (0 for CPU types and unknown ones)."""
    return _GPUS.get(instance_type, 0)


def framework_of(image: str) -> str:
    """``tensorflow`` or ``pytorch``, from a DLC image URI (or its bare ``name:tag``)."""
    return "pytorch" if image.rsplit("/", 1)[-1].startswith("pytorch-training:") else "tensorflow"


#: sagemaker-training in each framework's images: the TensorFlow toolkit (20.5.0) pins
#: ``sagemaker-training<=4.8.3``, the PyTorch one (3.0.0) needs ``>=5`` (docs/TOOLKIT.md).
TOOLKIT_VERSIONS = {"tensorflow": "4.8.3", "pytorch": "5.1.4"}


def toolkit_version(image: str) -> str:
    """The sagemaker-training version that runs in ``image`` (5.1.4 without an image)."""
    return TOOLKIT_VERSIONS[framework_of(image)] if image else TOOLKIT_VERSIONS["pytorch"]


def image_env(image: str) -> dict[str, str]:
    """The image's own ENV, as a rank in the container inherits it."""
    tag = image.rsplit("/", 1)[-1]
    m = re.match(r"[a-z-]+:(?P<version>[\d.]+)-(?P<device>cpu|gpu)-py(?P<py>\d)(?P<minor>\d+)", tag)
    framework = framework_of(image)
    device = m["device"] if m else "cpu"
    env = dict(IMAGE_ENV[(framework, device)])
    if framework == "tensorflow" and m:  # both Dockerfiles set TF_VERSION and PYTHON
        env["PYTHON"] = f"python{m['py']}.{m['minor']}"
        env["TF_VERSION"] = ".".join(m["version"].split(".")[:2])
    build = _PYTHON_BUILDS.get(tag)
    if build:
        env["PYTHON_VERSION"] = build
    return env


def torch_version(image: str) -> str:
    """``torch.__version__`` in a PyTorch image (wheels from download.pytorch.org/whl/cpu|cu129)."""
    m = re.search(r":(?P<version>[\d.]+)-(?P<device>cpu|gpu)", image)
    if not m:
        return ""
    return f"{m['version']}+{'cpu' if m['device'] == 'cpu' else 'cu129'}"
