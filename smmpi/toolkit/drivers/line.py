"""The mpirun line ModelTrainer's MPI driver builds on algo-1, computed by the driver itself.

:mod:`.probe` runs the SDK's own ``environment.py`` and ``mpi_driver.main`` from the request's
``sm_drivers`` channel, with the variables algo-1's container would have. The interpreter is
this machine's where the container's is ``command -v python3``; it is put back in the line.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from smmpi.child import json_answer
from smmpi.errors import SmmpiError
from smmpi.toolkit.environment import input_data_config, resource_config
from smmpi.toolkit.images import image_env
from smmpi.toolkit.shape import JobShape

PROBE = Path(__file__).with_name("probe.py")
CONTAINER_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
CONTAINER_PYTHON = "/usr/local/bin/python3"  # `command -v python3` in the DLC images
CREDENTIALS = ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN")


def _shape(request: Mapping[str, Any]) -> JobShape:
    channels = [c["ChannelName"] for c in request.get("InputDataConfig", [])]
    return JobShape(
        job_name=str(request["TrainingJobName"]),
        script="",
        instances=int(request["ResourceConfig"]["InstanceCount"]),
        ppn=1,
        channels={name: "" for name in channels},
        environment={str(k): str(v) for k, v in (request.get("Environment") or {}).items()},
        instance_type=str(request["ResourceConfig"]["InstanceType"]),
        image=str(request["AlgorithmSpecification"]["TrainingImage"]),
    )


def container_environment(shape: JobShape) -> dict[str, str]:
    """algo-1's variables before ``sm_train.sh``: the image's ENV, the request's, the job name."""
    return {
        "PATH": CONTAINER_PATH,
        **image_env(shape.image),
        **shape.environment,
        "TRAINING_JOB_NAME": shape.job_name,
    }


def driver_mpirun(request: Mapping[str, Any], drivers: Path) -> list[str]:
    """The argv ``mpi_driver.py`` would run on algo-1 for ``request``."""
    shape = _shape(request)
    given = {
        "resource_config": resource_config(shape, "algo-1"),
        "input_data_config": input_data_config(shape),
        "hyperparameters": dict(request.get("HyperParameters", {})),
        "environment": container_environment(shape),
    }
    argv = [sys.executable, "-I", "-B", str(PROBE), str(drivers)]
    what = "ModelTrainer's MPI driver did not build its line"
    line = json_answer(argv, given, 120, what).get("mpirun")
    if not line:
        raise SmmpiError("ModelTrainer's MPI driver ran no command on algo-1")
    return [CONTAINER_PYTHON if token == sys.executable else str(token) for token in line]


def forwarded_credentials(line: list[str]) -> list[str]:
    """The AWS credential names the driver's line forwards to every rank with ``-x``."""
    return [
        line[i + 1] for i, t in enumerate(line[:-1]) if t == "-x" and line[i + 1] in CREDENTIALS
    ]
