"""``smmpi run --framework``: the rank sees what the chosen estimator's request gives it
(bad choices: tests/cli/test_run_choices.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.helpers import base_env, smmpi, write

SHOW = """\
import json, os, sys
from mpi4py import MPI
if MPI.COMM_WORLD.Get_rank() == 0:
    keys = ("SAGEMAKER_TRAINING_MODULE", "TF_VERSION", "PYTHON", "DLC_CONTAINER_TYPE")
    print("SEEN " + json.dumps({"argv": sys.argv[1:], **{k: os.environ.get(k) for k in keys}}))
"""


def _seen(stdout: str) -> dict[str, object]:
    line = next(x for x in stdout.splitlines() if "SEEN " in x)
    seen: dict[str, object] = json.loads(line.split("SEEN ", 1)[1])
    return seen


@pytest.mark.parametrize(
    ("flags", "module", "argv", "tf_version", "python"),
    [
        (
            [],
            "sagemaker_tensorflow_container",
            ["--model_dir", "/opt/ml/model", "x"],
            "2.19",
            "python3.12",
        ),
        (["--framework", "pytorch"], "sagemaker_pytorch_container", ["x"], None, None),
        (
            ["--framework", "tensorflow", "--framework-version", "2.16", "--py-version", "py310"],
            "sagemaker_tensorflow_container",
            ["--model_dir", "/opt/ml/model", "x"],
            "2.16",
            "python3.10",
        ),
    ],
)
def test_framework_chooses_what_a_rank_sees(
    tmp_path: Path,
    flags: list[str],
    module: str,
    argv: list[str],
    tf_version: str | None,
    python: str | None,
) -> None:
    script = write(tmp_path / "show.py", SHOW)
    env = base_env(tmp_path)
    r = smmpi(["run", str(script), "-N", "1", "-n", "2", *flags, "--", "x"], env, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    seen = _seen(r.stdout)
    assert str(seen["SAGEMAKER_TRAINING_MODULE"]).startswith(module)
    assert seen["argv"] == argv
    assert seen["TF_VERSION"] == tf_version
    assert seen["PYTHON"] == python
    assert (seen["DLC_CONTAINER_TYPE"] == "training") == (module.endswith("pytorch_container"))
