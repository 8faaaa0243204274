"""smmpi's half of the differential suite: the only module here that knows smmpi's internals."""

from __future__ import annotations

import shutil
from dataclasses import replace
from pathlib import Path
from typing import Any

from smmpi.catalog import resolve
from smmpi.platform.layout import prepare_hosts
from smmpi.runners.plan import plan as build_plan
from smmpi.spec import MPIJob
from smmpi.toolkit.container import rank_env as container_rank_env
from smmpi.toolkit.container import start_env
from smmpi.toolkit.hosts import HostDirs
from smmpi.toolkit.images import num_gpus, torch_version
from smmpi.toolkit.offline import request_from_program
from smmpi.toolkit.shape import JobShape, shape_from_request


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


def shape(request: dict[str, Any], source: Path | None = None) -> JobShape:
    package = source is not None and (source / "setup.py").is_file()
    return replace(shape_from_request(request), package=package)


def container_start(request: dict[str, Any]) -> dict[str, Any]:
    return container_start_of(shape_from_request(request))


def container_start_of(sh: JobShape) -> dict[str, Any]:
    """The container's environment and hardware when the toolkit starts, from smmpi's model.

    The same inputs go to both sides: the image's ENV and SageMaker's variables
    (smmpi.toolkit.container.start_env), the instance's GPUs and vCPUs, the
    image's torch version. The toolkit then computes everything else.
    """
    return {
        "env": {"PATH": "/usr/local/bin:/usr/bin:/bin", **start_env(sh)},
        "num_gpus": num_gpus(sh.instance_type),
        "num_cpus": sh.num_cpus,
        "torch_version": torch_version(sh.image) or None,
    }


def rank_env(request: dict[str, Any], root: str, host: str, source: Path | None) -> dict[str, str]:
    """smmpi's model of a rank's environment on ``host`` whose tree is ``root``."""
    return container_rank_env(shape(request, source), HostDirs(Path(root)), host)


def run_shape(script: Path, instances: int, ppn: int, instance_type: str) -> JobShape:
    """The job ``smmpi run SCRIPT`` builds (its offline request: the default estimator's view)."""
    return shape_from_request(
        request_from_program(resolve(str(script)), instances, ppn, instance_type)
    )
