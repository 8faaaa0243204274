"""What the image and the instance add to a rank's environment: Dockerfile ENV, GPU count.

The ENV lines are those of the ``sagemaker`` stage of aws/deep-learning-containers'
Dockerfiles (docs/TOOLKIT.md cites each file): TensorFlow 2.19 and PyTorch 2.8,
CPU and GPU. Other versions of the same framework get the same table, with
their own ``TF_VERSION`` and ``PYTHON``. ``PATH`` and ``LD_LIBRARY_PATH`` are left
to the machine: here they must find this machine's interpreter and MPI.
"""

from __future__ import annotations

import functools
import json
import re
from importlib import resources

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


@functools.lru_cache(maxsize=1)
def _accelerators() -> dict[str, dict[str, int]]:
    """GPUs and NeuronCores per accelerated instance type: ``smmpi/data/accelerators.json``,
    compiled from AWS's published instance specifications (the file names them)."""
    text = resources.files("smmpi").joinpath("data/accelerators.json").read_text(encoding="utf-8")
    table: dict[str, dict[str, int]] = json.loads(text)
    return {"gpus": table["gpus"], "neuron_cores": table["neuron_cores"]}


def num_gpus(instance_type: str) -> int:
    """SM_NUM_GPUS on this instance type (0 for CPU and Trainium types, and unknown ones)."""
    return _accelerators()["gpus"].get(instance_type, 0)


def num_neurons(instance_type: str) -> int:
    """SM_NUM_NEURONS on this instance type: its NeuronCores (0 but on Trainium)."""
    return _accelerators()["neuron_cores"].get(instance_type, 0)


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
