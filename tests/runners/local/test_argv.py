"""The local mpirun argv, each host's variables and its SM_* environment, pinned by golden files.

The run dir, the interpreter and smmpi's own install path are replaced by
markers, so the files hold only what a run derives from the request: the
dry run's golden demo request, as local mode receives it.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from smmpi.platform.layout import host_dirs
from smmpi.runners.local.argv import mpirun_argv
from smmpi.runners.local.hostfiles import WATCH, host_file
from smmpi.runners.local.mpi import Launcher
from smmpi.toolkit.environment import sm_env
from smmpi.toolkit.shape import shape_from_request
from tests.helpers import GOLDEN, check_golden

LAUNCHER = Launcher("mpirun", "openmpi", 5)


def _request(framework: str) -> dict[str, Any]:
    text = (GOLDEN / f"demo_3x2_{framework}.request.json").read_text()
    request: dict[str, Any] = json.loads(text)
    return request


def _markers(data: Any, run_dir: Path) -> Any:
    """``data`` with this run's paths as ``<run>``, ``<watch.py>`` and ``<python>``."""
    text = json.dumps(data)
    for path, marker in ((WATCH, "<watch.py>"), (run_dir, "<run>"), (sys.executable, "<python>")):
        text = text.replace(str(path), marker)
    return json.loads(text)


@pytest.mark.parametrize("framework", ["tensorflow", "pytorch"])
def test_golden_local_argv(framework: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PYTHONPATH", raising=False)
    shape = shape_from_request(_request(framework))
    argv = mpirun_argv(shape, tmp_path, LAUNCHER, "python3")
    check_golden(f"demo_3x2_{framework}.local_argv.json", _markers(argv, tmp_path))
    contexts = " ".join(argv).split(" : ")
    assert len(contexts) == len(shape.hosts) == 3
    for host, context in zip(shape.hosts, contexts, strict=True):
        assert f"--wdir {tmp_path}/{host}/opt/ml/code" in context
        assert "python3 -m mpi4py demo.py" in context
        if framework == "tensorflow":  # the container path is this host's own tree
            assert context.endswith(f"demo.py --model_dir {tmp_path}/{host}/opt/ml/model")


@pytest.mark.parametrize(("processes", "contexts"), [("4", ["-np 2", "-np 2"]), ("1", ["-np 1"])])
def test_the_containers_np_gives_each_host_its_slots_in_order(
    processes: str, contexts: list[str], tmp_path: Path
) -> None:
    """An explicit sagemaker_mpi_num_processes: each host's app context has the ranks the
    container's mpirun places there by slot; a host past them has none."""
    request = _request("pytorch")
    request["HyperParameters"]["sagemaker_mpi_num_processes"] = processes
    shape = shape_from_request(request)
    argv = mpirun_argv(shape, tmp_path, LAUNCHER, "python3")
    found = [c[c.index("-np ") :][:5] for c in " ".join(argv).split(" : ")]
    assert found == contexts
    assert all(host_file(tmp_path, h).is_file() for h in shape.hosts)  # each host is laid out


@pytest.mark.parametrize("host", ["algo-1", "algo-2"])
def test_golden_host_variables(host: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """What a rank on ``host`` gets on top of mpirun's environment (its host file)."""
    monkeypatch.delenv("PYTHONPATH", raising=False)
    shape = shape_from_request(_request("tensorflow"))
    mpirun_argv(shape, tmp_path, LAUNCHER, "python3")
    pairs = host_file(tmp_path, host).read_bytes().decode().split("\0")
    written = dict(pair.split("=", 1) for pair in pairs)
    check_golden(f"demo_3x2_tensorflow.host_env.{host}.json", _markers(written, tmp_path))
    # as in the container: algo-1's SM_* on every host (mpirun -x), the host's own CURRENT_HOST
    assert (written["SM_CURRENT_HOST"], written["CURRENT_HOST"]) == ("algo-1", host)


@pytest.mark.parametrize("host", ["algo-1", "algo-2"])
def test_golden_sm_env(host: str) -> None:
    shape = shape_from_request(_request("tensorflow"))
    root = Path("/run")
    env = sm_env(shape, host_dirs(root, host), host)
    check_golden(f"demo_3x2_tensorflow.sm_env.{host}.json", env)
    assert env["SM_CURRENT_HOST"] == host
    assert env["SM_MODEL_DIR"] == f"/run/{host}/opt/ml/model"
    assert json.loads(env["SM_HOSTS"]) == ["algo-1", "algo-2", "algo-3"]
