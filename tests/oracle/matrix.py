"""The job matrix of the differential suite, and how each job reaches both sides.

Each job is built into a CreateTrainingJob request by smmpi through the real
SDK, laid out by smmpi as one ``/opt/ml`` tree per instance, and then handed to
the real toolkit (one driver run for the whole matrix, see :mod:`oracle`).
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.oracle import smmpi_side

SETUP_PY = """\
from setuptools import setup

setup(name="trainpkg", version="1.0", py_modules=["train"])
"""
#: The package's module: each rank prints the name it was imported as (``train`` once installed)
TRAIN_MODULE = """\
from mpi4py import MPI
print("MOD", __spec__.name if __spec__ else None, MPI.COMM_WORLD.Get_rank())
"""


def package_source(folder: Path) -> Path:
    """A --source-dir with a setup.py that installs its one module, ``train``."""
    src = folder / "src"
    src.mkdir()
    (src / "train.py").write_text(TRAIN_MODULE, encoding="utf-8")
    (src / "setup.py").write_text(SETUP_PY, encoding="utf-8")
    return src


@dataclass(frozen=True)
class Case:
    id: str
    job: dict[str, Any]  # MPIJob keyword arguments
    source: dict[str, str] = field(default_factory=dict)  # files of a --source-dir, if any


def _hps() -> dict[str, Any]:
    return {"epochs": 3, "lr": 0.05, "name": "two words", "flag": True}


CASES: tuple[Case, ...] = (
    Case("tf-1x1-cpu", {"entry": "demo", "instances": 1, "ppn": 1}),
    Case("tf-3x2-cpu-seed004", {"entry": "demo", "instances": 3, "ppn": 2}),
    Case("tf-1x4-cpu", {"entry": "demo", "instances": 1, "ppn": 4}),
    Case(
        "pt-3x1-cpu",
        {"entry": "demo", "instances": 3, "ppn": 1, "framework": "pytorch"},
    ),
    Case(
        "pt-2x4-cpu-hps",
        {
            "entry": "demo",
            "instances": 2,
            "ppn": 4,
            "framework": "pytorch",
            "instance_type": "ml.c5.4xlarge",
            "hyperparameters": _hps(),
        },
    ),
    Case(
        "tf-3x2-cpu-channels-options",
        {
            "entry": "demo",
            "instances": 3,
            "ppn": 2,
            "inputs": {"train": "s3://smmpi-oracle/train", "test": "s3://smmpi-oracle/test"},
            "mpi_options": "--NCCL_DEBUG WARN -x SMMPI_ORACLE=1 --mca btl_tcp_if_exclude lo",
            "env": {"MY_SETTING": "on"},
        },
    ),
    Case(
        "pt-1x4-p3",
        {
            "entry": "demo",
            "instances": 1,
            "ppn": 4,
            "framework": "pytorch",
            "instance_type": "ml.p3.8xlarge",
        },
    ),
    Case(
        "tf-3x2-p3",
        {"entry": "demo", "instances": 3, "ppn": 2, "instance_type": "ml.p3.16xlarge"},
    ),
    Case(
        "pt-3x4-p4d-efa",
        {
            "entry": "demo",
            "instances": 3,
            "ppn": 4,
            "framework": "pytorch",
            "instance_type": "ml.p4d.24xlarge",
            "hyperparameters": {"batch-size": 64},
        },
    ),
    Case(
        "tf-3x1-p4d-efa",
        {"entry": "demo", "instances": 3, "ppn": 1, "instance_type": "ml.p4d.24xlarge"},
    ),
    Case(  # toolkit 4.8.3 (the TensorFlow images') lists p5 for EFA but not for RDMA
        "tf-2x1-p5-efa",
        {"entry": "demo", "instances": 2, "ppn": 1, "instance_type": "ml.p5.48xlarge"},
    ),
    Case(
        "pt-3x2-setup-py",
        {"entry": "train.py", "instances": 3, "ppn": 2, "framework": "pytorch"},
        source={
            "train.py": "from mpi4py import MPI\nprint(MPI.COMM_WORLD.Get_rank())\n",
            "setup.py": SETUP_PY,
            "requirements.txt": "six\n",
        },
    ),
    Case(
        "tf-1x2-requirements",
        {"entry": "train.py", "instances": 1, "ppn": 2},
        source={
            "train.py": "from mpi4py import MPI\nprint(MPI.COMM_WORLD.Get_rank())\n",
            "requirements.txt": "six\n",
        },
    ),
)


@dataclass
class Built:
    """One matrix job on both sides' inputs: the request, the host trees, the oracle case."""

    case: Case
    request: dict[str, Any]
    mpirun: list[str]
    run_dir: Path
    roots: dict[str, str]
    oracle_case: dict[str, Any]
    source: Path | None


def build(case: Case, tmp: Path) -> Built:
    job = dict(case.job)
    if case.source:
        src = tmp / case.id / "src"
        src.mkdir(parents=True)
        for name, text in case.source.items():
            (src / name).write_text(text, encoding="utf-8")
        job["entry"] = str(src / job["entry"])
        job["source_dir"] = str(src)
    run_dir = tmp / case.id / "hosts"
    request, mpirun = smmpi_side.plan(job)
    source = Path(job["source_dir"]) if case.source else None
    roots = smmpi_side.lay_out(request, run_dir, source)
    oracle_case = {
        "id": case.id,
        "hosts": roots,
        **smmpi_side.container_start(request),
    }
    shutil.rmtree(run_dir / ".smmpi", ignore_errors=True)
    return Built(case, request, mpirun, run_dir, roots, oracle_case, source)
