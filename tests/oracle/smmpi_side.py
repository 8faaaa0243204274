"""smmpi's half of the differential suite: the only module here that knows smmpi's internals."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from smmpi.runners.local.layout import prepare_hosts
from smmpi.runners.plan import plan as build_plan
from smmpi.spec import MPIJob
from smmpi.toolkit.hosts import HostDirs
from smmpi.toolkit.shape import shape_from_request


def plan(job: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """The request smmpi builds through the SDK, and the container mpirun it predicts."""
    built = build_plan(MPIJob(**job))
    return built.request, list(built.mpirun)


def lay_out(request: dict[str, Any], run_dir: Path, source: Path | None) -> dict[str, str]:
    """smmpi's host trees for ``request``; returns each host's stand-in for /opt/ml."""
    shape = shape_from_request(request)
    hps_json = {k: str(v) for k, v in (request.get("HyperParameters") or {}).items()}

    def lay_code(dirs: HostDirs) -> None:
        if source is not None:
            shutil.copytree(source, dirs.code, dirs_exist_ok=True)

    all_dirs = prepare_hosts(shape, run_dir, lay_code, hps_json)
    return {host: str(d.root) for host, d in zip(shape.hosts, all_dirs, strict=True)}


# The image's ENV (Dockerfile ``ENV`` lines of aws/deep-learning-containers) for the
# default images, and SageMaker's own TRAINING_JOB_NAME. PATH/LD_LIBRARY_PATH are the
# machine's on both sides (a documented substitution).
_IMAGE_ENV = {
    # tensorflow/training/docker/2.19/py3/Dockerfile.cpu
    "tensorflow": {
        "SAGEMAKER_TRAINING_MODULE": "sagemaker_tensorflow_container.training:main",
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONUNBUFFERED": "1",
        "PYTHONIOENCODING": "UTF-8",
        "LANG": "C.UTF-8",
        "LC_ALL": "C.UTF-8",
    },
    # pytorch/training/docker/2.8/py3/Dockerfile.cpu
    "pytorch": {
        "SAGEMAKER_TRAINING_MODULE": "sagemaker_pytorch_container.training:main",
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONUNBUFFERED": "1",
        "PYTHONIOENCODING": "UTF-8",
        "LANG": "C.UTF-8",
        "LC_ALL": "C.UTF-8",
        "DLC_CONTAINER_TYPE": "training",
    },
}

_GPUS = {"ml.p3.8xlarge": 4, "ml.p3.16xlarge": 8, "ml.p4d.24xlarge": 8}


def container_start(request: dict[str, Any]) -> dict[str, Any]:
    """The container's environment and hardware when the toolkit starts."""
    image = request["AlgorithmSpecification"]["TrainingImage"]
    framework = "pytorch" if "/pytorch-training:" in image else "tensorflow"
    version = image.rsplit(":", 1)[1].split("-", 1)[0]
    instance_type = request["ResourceConfig"]["InstanceType"]
    shape = shape_from_request(request)
    env = {
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        **_IMAGE_ENV[framework],
        "TRAINING_JOB_NAME": request["TrainingJobName"]
        if "TrainingJobName" in request
        else json.loads(request["HyperParameters"]["sagemaker_job_name"]),
        **(request.get("Environment") or {}),
    }
    gpus = _GPUS.get(instance_type, 0)
    return {
        "env": env,
        "num_gpus": gpus,
        "num_cpus": shape.num_cpus,
        "torch_version": f"{version}+{'cu129' if gpus else 'cpu'}"
        if framework == "pytorch"
        else None,
    }
