"""The instance type's GPUs and vCPUs, and the image's torch, wherever the container's own
start runs: the toolkit's ``train`` (exact mode) and ModelTrainer's ``environment.py`` count
them with their own probes, which answer as on the instance type, as the fast mode's model
does; this machine's counts (no GPU, its cores) and its torch are not the instance's."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.exact.test_toolkit import toolkit_env
from tests.helpers import base_env, smmpi, write

HARDWARE = """import json, os
from mpi4py import MPI
training = json.loads(os.environ["SM_TRAINING_ENV"])
seen = {k: os.environ.get(k) for k in ("SM_NUM_GPUS", "SM_NUM_CPUS", "SM_DLC_TORCH_VERSION")}
seen.update(num_gpus=training["num_gpus"], num_cpus=training["num_cpus"])
with open(f"/opt/ml/model/hw-{MPI.COMM_WORLD.Get_rank()}.json", "w") as f:
    json.dump(seen, f)
print("HW", MPI.COMM_WORLD.Get_rank(), json.dumps(seen), flush=True)
"""
#: ml.p3.2xlarge: 1 GPU, 8 vCPUs; the PyTorch 2.8 GPU image's torch is 2.8.0+cu129.
P3 = {"SM_NUM_GPUS": "1", "SM_NUM_CPUS": "8", "num_gpus": 1, "num_cpus": 8}


def _seen(run_dir: Path) -> dict[int, dict[str, Any]]:
    """What each rank wrote (a file: the toolkit's output tagger may split a line)."""
    found = run_dir.glob("algo-*/opt/ml/model/hw-*.json")
    return {int(p.stem.split("-")[1]): json.loads(p.read_text()) for p in found}


def test_the_toolkit_sees_the_instance_types_gpus_and_cpus_and_the_images_torch(
    tmp_path: Path,
) -> None:
    program = write(tmp_path / "hw.py", HARDWARE)
    argv = ["run", str(program), "-N", "2", "-n", "1", "--framework", "pytorch", "--keep"]
    argv += ["--instance-type", "ml.p3.2xlarge"]
    seen = {}
    for mode in ("fast", "exact"):
        (tmp_path / mode).mkdir()
        env = toolkit_env(tmp_path / mode)
        done = smmpi([*argv, *(["--exact"] if mode == "exact" else [])], env, timeout=300)
        assert done.returncode == 0, done.stderr[-3000:]
        seen[mode] = _seen(next((tmp_path / mode / "tmp").glob("smmpi-run-*")))
    expected = {**P3, "SM_DLC_TORCH_VERSION": "2.8.0+cu129"}
    assert seen["fast"] == {0: expected, 1: expected}
    assert seen["exact"] == seen["fast"]


def test_model_trainers_driver_sees_the_instance_types_gpus_and_cpus(tmp_path: Path) -> None:
    program = write(tmp_path / "hw.py", HARDWARE)
    env = base_env(tmp_path)
    env.pop("SMMPI_ISOLATION", None)  # a ModelTrainer request runs on isolated hosts only
    argv = ["submit", str(program), "-N", "2", "-n", "1", "--api", "model-trainer", "--local"]
    done = smmpi([*argv, "--instance-type", "ml.p3.2xlarge"], env, timeout=400)
    assert done.returncode == 0, done.stderr[-3000:]
    expected = {**P3, "SM_DLC_TORCH_VERSION": None}  # no framework toolkit sets it
    rows = [ln.split(">:", 1)[1] for ln in done.stdout.splitlines() if ">:HW " in ln]
    seen = {int(r.split()[1]): json.loads(r.split(" ", 2)[2]) for r in rows}
    assert seen == {0: expected, 1: expected}
