"""Facts of the real toolkit that smmpi's model depends on, pinned so an upgrade shows up here."""

from __future__ import annotations

import json
from typing import Any

from tests.oracle.ranks import rank_envs


def _hosts(differential: dict[str, Any], case: str) -> dict[str, Any]:
    hosts: dict[str, Any] = differential["answer"]["cases"][case]
    return hosts


def test_ranks_on_every_host_see_the_masters_sm_values(differential: dict[str, Any]) -> None:
    """aws/sagemaker-training-toolkit issue #158: SM_* are forwarded from algo-1 with -x."""
    envs = rank_envs(_hosts(differential, "tf-3x2-cpu-seed004"))
    for host in ("algo-2", "algo-3"):
        env = envs[host]
        assert env["SM_CURRENT_HOST"] == "algo-1"
        training_env = json.loads(env["SM_TRAINING_ENV"])
        assert training_env["current_host"] == "algo-1"
        assert training_env["is_master"] is True
        assert json.loads(env["SM_RESOURCE_CONFIG"])["current_host"] == "algo-1"
        assert env["CURRENT_HOST"] == host  # not an SM_* name: the worker's own value


def test_framework_variables(differential: dict[str, Any]) -> None:
    tf = rank_envs(_hosts(differential, "tf-3x2-cpu-seed004"))["algo-2"]
    assert (tf["TF_CPP_MIN_LOG_LEVEL"], tf["S3_USE_HTTPS"]) == ("1", "1")
    assert tf["SAGEMAKER_REGION"] == tf["S3_REGION"] != ""
    assert "MASTER_ADDR" not in tf
    pt = rank_envs(_hosts(differential, "pt-3x1-cpu"))["algo-3"]
    assert (pt["MASTER_ADDR"], pt["MASTER_PORT"]) == ("algo-1", "7777")
    assert (pt["NCCL_IB_DISABLE"], pt["NCCL_SOCKET_IFNAME"]) == ("1", "eth0")
    assert pt["NCCL_DEBUG"] == "INFO"  # the toolkit's WARN, overridden by mpirun's -x
    assert pt["SM_DLC_TORCH_VERSION"].startswith("2.8.0")
    assert "TF_CPP_MIN_LOG_LEVEL" not in pt


def test_gpu_count_and_efa_flags(differential: dict[str, Any]) -> None:
    env = rank_envs(_hosts(differential, "pt-3x4-p4d-efa"))["algo-2"]
    assert env["SM_NUM_GPUS"] == "8"
    assert (env["FI_PROVIDER"], env["NCCL_PROTO"], env["FI_EFA_USE_DEVICE_RDMA"]) == (
        "efa",
        "simple",
        "1",
    )


def test_the_tensorflow_images_toolkit_has_its_own_efa_lists(differential: dict[str, Any]) -> None:
    env = rank_envs(_hosts(differential, "tf-2x1-p5-efa"))["algo-2"]
    assert (env["FI_PROVIDER"], env["NCCL_PROTO"]) == ("efa", "simple")
    assert "FI_EFA_USE_DEVICE_RDMA" not in env  # toolkit 5.1.4 adds it on p5


def test_tags_are_rewritten_with_rank_and_host(differential: dict[str, Any]) -> None:
    assert differential["answer"]["watch"][0] == [
        "[1,mpirank:0,algo-1]<stdout>:hello",
        "[1,mpirank:3,algo-2]<stderr>:oops",
        "[1,mpirank:5,algo-3]<stdout>:x [1,mpirank:2,algo-2]<stdout>:y",
    ]


def test_teardown_sleeps_are_what_the_cost_estimate_counts(differential: dict[str, Any]) -> None:
    """MasterRunner.run sleeps 30 s after mpirun; a worker 30 s after orted, then polls every
    30 s: smmpi.pricing adds TEARDOWN_S per instance to every estimate."""
    from smmpi.pricing import TEARDOWN_S

    sleeps = differential["answer"]["sleeps"]
    assert sorted(sleeps["master_run"]) == [1, TEARDOWN_S]  # 1: between status-file retries
    assert sleeps["worker_run"] == [TEARDOWN_S]
    assert sleeps["worker_poll"] == [TEARDOWN_S]


def test_only_toolkit_5_has_a_topology_key(differential: dict[str, Any]) -> None:
    """The TensorFlow images run toolkit 4.8.3, whose Environment has no ``topology``."""
    tf = json.loads(
        rank_envs(_hosts(differential, "tf-3x2-cpu-seed004"))["algo-2"]["SM_TRAINING_ENV"]
    )
    pt = json.loads(rank_envs(_hosts(differential, "pt-3x1-cpu"))["algo-2"]["SM_TRAINING_ENV"])
    assert "topology" not in tf
    assert pt["topology"] == []
