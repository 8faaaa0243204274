"""The same job through SDK v3's ModelTrainer (``sagemaker.train``, in its own venv): the same
request as v2's ``sagemaker.modules.train``, and its own MPI driver builds the same line."""

from __future__ import annotations

import json
import re
import subprocess
from typing import Any

import pytest

from smmpi.spec import MPIJob
from tests.helpers import ROLE
from tests.sdk.sdk3 import VERSION, sdk3_python

pytestmark = pytest.mark.usefixtures("no_aws_settings")


def _plan(monkeypatch: pytest.MonkeyPatch, v3: bool, **fields: Any) -> Any:
    if v3:
        monkeypatch.setenv("SMMPI_SDK3_PYTHON", sdk3_python())
    else:
        monkeypatch.delenv("SMMPI_SDK3_PYTHON", raising=False)
    job = MPIJob("demo", api="model-trainer", role=ROLE, region="us-west-2", **fields)
    return job.plan()


def _named(request: dict[str, Any]) -> str:
    return re.sub(r"-\d{14}\b", "-DATE", json.dumps(request, sort_keys=True))


def test_the_venv_has_sdk_v3() -> None:
    probe = "import importlib.metadata as m; print(m.version('sagemaker'))"
    done = subprocess.run([sdk3_python(), "-c", probe], capture_output=True, text=True)
    assert done.stdout.strip() == VERSION


@pytest.mark.parametrize(("instances", "ppn"), [(1, 2), (2, 1), (2, 2), (3, 2)])
def test_v3_builds_what_v2_builds(
    instances: int, ppn: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    fields: dict[str, Any] = dict(
        instances=instances,
        ppn=ppn,
        hyperparameters={"epochs": "2"},
        env={"OMP_NUM_THREADS": "1"},
        mpi_options="-x NCCL_DEBUG=WARN",
        use_spot=True,
        checkpoint_s3_uri="s3://smmpi-ckpt-bucket/run",
    )
    v2 = _plan(monkeypatch, False, **fields)
    v3 = _plan(monkeypatch, True, **fields)
    assert v3.mpirun == v2.mpirun
    assert v3.mpirun[v3.mpirun.index("-np") + 1] == str(ppn)  # the driver's own -np
    assert v3.mpirun[-8:-5] == ["-np", str(instances * ppn), "/usr/local/bin/python3"]
    assert _named(v3.request) == _named(v2.request)
    assert any("SDK v3" in note for note in v3.notes)
    # v3 ships one more driver script (the requirements installer), the rest is the same
    assert set(v3.channels["sm_drivers"]) - set(v2.channels["sm_drivers"]) == {
        "scripts/install_requirements.py"
    }
    assert v3.channels["code"] == v2.channels["code"]


def test_sdk3_python_that_is_not_v3_is_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    from smmpi.errors import BadInput
    from tests.helpers import BIN

    monkeypatch.setenv("SMMPI_SDK3_PYTHON", str(BIN / "python"))  # this venv: SDK v2
    with pytest.raises(BadInput, match=r"SMMPI_SDK3_PYTHON.*sagemaker 3"):
        MPIJob("demo", api="model-trainer", role=ROLE, region="us-west-2").plan()
