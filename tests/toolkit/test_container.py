"""Every variable a rank starts with in the container, host by host, from the golden requests."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from smmpi.toolkit.container import (
    MASTER_PORT,
    NOT_EMULATED,
    etc_environment,
    forwarded,
    framework_exports,
    host_env,
    mpirun_assignments,
    rank_env,
    start_env,
)
from smmpi.toolkit.hosts import CONTAINER_ROOT, HostDirs, host_dirs
from smmpi.toolkit.mpirun import container_mpirun
from smmpi.toolkit.shape import shape_from_request
from tests.helpers import GOLDEN


def _golden(framework: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((GOLDEN / f"demo_3x2_{framework}.request.json").read_text())
    return data


def _assignments(line: list[str]) -> list[str]:
    return [line[i + 1] for i, t in enumerate(line[:-1]) if t == "-x" and "=" in line[i + 1]]


def test_a_ranks_variables_are_the_golden_hosts_less_what_local_runs_add(tmp_path: Path) -> None:
    """tests/golden/*.host_env.*.json is what a local rank gets: the container's variables,
    with smmpi's site dir first on PYTHONPATH and its two SMMPI_* markers."""
    shape = shape_from_request(_golden("tensorflow"))
    for host in ("algo-1", "algo-2"):
        env = rank_env(shape, host_dirs(tmp_path, host), host)
        golden = json.loads((GOLDEN / f"demo_3x2_tensorflow.host_env.{host}.json").read_text())
        expected = {k: v for k, v in golden.items() if not k.startswith("SMMPI_")}
        expected["PYTHONPATH"] = f"<run>/{host}/opt/ml/code"
        assert json.loads(json.dumps(env).replace(str(tmp_path), "<run>")) == expected
        # algo-1's SM_* reach every rank (-x); the host's own CURRENT_HOST and tree stay
        assert (env["SM_CURRENT_HOST"], env["CURRENT_HOST"]) == ("algo-1", host)
        assert env["SM_MODEL_DIR"] == str(tmp_path / host / "opt/ml/model")


def test_the_assignments_are_those_of_the_containers_mpirun_line() -> None:
    tf = _golden("tensorflow")
    pt = _golden("pytorch")
    pt["ResourceConfig"]["InstanceType"] = "ml.p4d.24xlarge"  # EFA, both lists
    pt["HyperParameters"]["sagemaker_mpi_custom_mpi_options"] = '"--NCCL_DEBUG WARN -x FOO=1"'
    for request in (tf, pt):
        line = container_mpirun(request)
        expected = [a for a in _assignments(line) if a.split("=")[0] not in NOT_EMULATED]
        assert mpirun_assignments(shape_from_request(request)) == expected
    assert mpirun_assignments(shape_from_request(pt)) == [
        "NCCL_MIN_NRINGS=4",
        "NCCL_SOCKET_IFNAME=eth0",
        "NCCL_DEBUG=WARN",
        "FOO=1",
        "FI_PROVIDER=efa",
        "NCCL_PROTO=simple",
        "FI_EFA_USE_DEVICE_RDMA=1",
    ]


def test_algo_1_forwards_its_sm_values_credentials_and_named_variables(tmp_path: Path) -> None:
    request = _golden("pytorch")
    request["HyperParameters"]["sagemaker_mpi_custom_mpi_options"] = '"-x FOO -x BAR"'
    shape = shape_from_request(request)
    dirs = host_dirs(tmp_path, "algo-2")
    master = host_env(shape, dirs, "algo-1")
    master.update(FOO="from-algo-1", AWS_ACCESS_KEY_ID="AKID", PATH="/x", LD_PRELOAD="/y.so")
    out = forwarded(shape, master, dirs)
    line = container_mpirun(request)
    names = {line[i + 1].split("=")[0] for i, t in enumerate(line[:-1]) if t == "-x"}
    # every name of the line but those left to this machine, and the credentials algo-1 has
    assert set(out) == (names - NOT_EMULATED - {"BAR"}) | {"AWS_ACCESS_KEY_ID"}
    assert (out["FOO"], out["AWS_ACCESS_KEY_ID"]) == ("from-algo-1", "AKID")
    assert out["SM_CURRENT_HOST"] == "algo-1" and out["PYTHONPATH"] == str(dirs.code)
    assert not NOT_EMULATED & set(out)
    # a variable passed to the ranks reaches every instance, and algo-1's copy is forwarded
    env = rank_env(shape, dirs, "algo-2", {"FOO": "passed"})
    assert env["FOO"] == "passed" and "BAR" not in env


def test_each_framework_exports_its_own_variables() -> None:
    pt = shape_from_request(_golden("pytorch"))
    tf = shape_from_request(_golden("tensorflow"))
    common = {
        "SAGEMAKER_JOB_NAME": "smmpi-demo-GOLDEN",
        "CURRENT_HOST": "algo-3",
        "SAGEMAKER_REGION": "us-west-2",
    }
    assert framework_exports(pt, "algo-3") == {
        **common,
        "NCCL_SOCKET_IFNAME": "eth0",
        "NCCL_IB_DISABLE": "1",
        "NCCL_DEBUG": "WARN",
        "MASTER_ADDR": "algo-1",
        "MASTER_PORT": MASTER_PORT,
        "SM_DLC_TORCH_VERSION": "2.8.0+cpu",
    }
    assert framework_exports(tf, "algo-3") == {
        **common,
        "S3_REGION": "us-west-2",
        "TF_CPP_MIN_LOG_LEVEL": "1",
        "S3_USE_HTTPS": "1",
    }
    bare = shape_from_request({**_golden("pytorch"), "AlgorithmSpecification": {}})
    assert framework_exports(bare, "algo-3") == common


def test_the_request_environment_overrides_the_images() -> None:
    request = _golden("tensorflow")
    request["Environment"] = {"KMP_BLOCKTIME": "0", "MINE": "1"}
    env = start_env(shape_from_request(request))
    assert (env["KMP_BLOCKTIME"], env["MINE"], env["LANG"]) == ("0", "1", "C.UTF-8")
    assert env["TRAINING_JOB_NAME"] == "smmpi-demo-GOLDEN"
    assert start_env(shape_from_request({**request, "AlgorithmSpecification": {}})) == {
        "TRAINING_JOB_NAME": "smmpi-demo-GOLDEN",
        "KMP_BLOCKTIME": "0",
        "MINE": "1",
    }


def test_a_workers_etc_environment_holds_its_environment_with_container_paths() -> None:
    shape = shape_from_request(_golden("tensorflow"))
    assert etc_environment(shape, "algo-1") == ""  # algo-1 writes none
    text = etc_environment(shape, "algo-2", {"PASSED": "1"})
    assert text.endswith("\n")
    written = dict(line.split("=", 1) for line in text.splitlines())
    dirs = HostDirs(Path(CONTAINER_ROOT))
    assert written == {**host_env(shape, dirs, "algo-2"), "PASSED": "1"}
    assert (written["SM_CURRENT_HOST"], written["CURRENT_HOST"]) == ("algo-2", "algo-2")
    assert (written["SM_MODEL_DIR"], written["PYTHONPATH"]) == ("/opt/ml/model", "/opt/ml/code")
