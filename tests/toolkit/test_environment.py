"""Every variable the container forwards reaches the local ranks, with its toolkit value."""

from __future__ import annotations

import json
from pathlib import Path

from tests.helpers import ROOT

GOLDEN = ROOT / "tests" / "golden"


def _container() -> list[str]:
    argv: list[str] = json.loads((GOLDEN / "demo_3x2_tensorflow.mpirun.json").read_text())
    return argv


def test_local_ranks_see_every_variable_the_container_forwards(tmp_path: Path) -> None:
    """The SM_* names the toolkit exports with -x are all set for a local rank too."""
    from smmpi.platform.layout import host_dirs
    from smmpi.toolkit.environment import sm_env
    from smmpi.toolkit.shape import JobShape

    container = _container()
    forwarded = {
        container[i + 1].split("=", 1)[0]
        for i, t in enumerate(container)
        if t == "-x" and container[i + 1].startswith("SM_")
    }
    shape = JobShape(
        job_name="j",
        script="demo.py",
        instances=3,
        ppn=2,
        hyperparameters={"model_dir": "/opt/ml/model"},
    )
    env = sm_env(shape, host_dirs(tmp_path, "algo-2"), "algo-2")
    assert forwarded and forwarded <= set(env), sorted(forwarded - set(env))
    assert env["SM_HP_MODEL_DIR"] == str(tmp_path / "algo-2" / "opt" / "ml" / "model")
