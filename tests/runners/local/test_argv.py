"""The local mpirun argv and each host's SM_* environment, pinned by golden files.

A fixed run dir, a fake launcher and a fixed interpreter make them stable; the
request is the dry run's golden demo request, as local mode receives it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from smmpi.runners.local.argv import mpirun_argv
from smmpi.runners.local.layout import host_dirs
from smmpi.runners.local.mpi import Launcher
from smmpi.toolkit.environment import sm_env
from smmpi.toolkit.shape import shape_from_request
from tests.helpers import GOLDEN, check_golden

RUN_DIR = Path("/smmpi-golden/run")
LAUNCHER = Launcher("mpirun", "openmpi", 5)


def _request(framework: str) -> dict[str, Any]:
    request: dict[str, Any] = json.loads(
        (GOLDEN / f"demo_3x2_{framework}.request.json").read_text()
    )
    return request


@pytest.mark.parametrize("framework", ["tensorflow", "pytorch"])
def test_golden_local_argv(framework: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PYTHONPATH", raising=False)
    shape = shape_from_request(_request(framework))
    argv = mpirun_argv(shape, RUN_DIR, LAUNCHER, "python3")
    check_golden(f"demo_3x2_{framework}.local_argv.json", argv)
    contexts = " ".join(argv).split(" : ")
    assert len(contexts) == 3
    for host, context in zip(shape.hosts, contexts, strict=True):
        assert f"SM_CURRENT_HOST={host}" in context
        assert f"--wdir {RUN_DIR}/{host}/opt/ml/code python3 -m mpi4py demo.py" in context


@pytest.mark.parametrize("host", ["algo-1", "algo-2"])
def test_golden_sm_env(host: str) -> None:
    shape = shape_from_request(_request("tensorflow"))
    env = sm_env(shape, host_dirs(RUN_DIR, host), host)
    check_golden(f"demo_3x2_tensorflow.sm_env.{host}.json", env)
    assert env["SM_CURRENT_HOST"] == host
    assert env["SM_MODEL_DIR"] == f"{RUN_DIR}/{host}/opt/ml/model"
    assert json.loads(env["SM_HOSTS"]) == ["algo-1", "algo-2", "algo-3"]
