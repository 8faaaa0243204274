"""The pod of a ModelTrainer request: every instance starts as its container does
(runners/local/trainer_pod.py)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from smmpi.errors import BadInput
from smmpi.instances.hosts import launch
from smmpi.platform.layout import site_dir, stack_dir
from smmpi.runners.local import trainer_pod
from smmpi.toolkit.drivers.line import CONTAINER_PATH
from smmpi.toolkit.plan import ContainerPlan
from smmpi.toolkit.shape import JobShape

ENTRYPOINT = ("/bin/bash", "-c", "chmod +x sm_train.sh && ./sm_train.sh")


def _plan(api: str = "model-trainer", instances: int = 2) -> ContainerPlan:
    shape = JobShape("smmpi-mt", "", instances, 2)
    environment = {"TRAINING_JOB_NAME": "smmpi-mt", "FROM_REQUEST": "request"}
    return ContainerPlan(
        {},
        shape,
        ENTRYPOINT,
        environment=environment,
        entrypoint=True,
        driver_np=instances,
        api=api,
    )


def _path_with_orted(tmp_path: Path) -> str:
    """A PATH whose MPI has ``orted``, as this machine's Open MPI has."""
    mpi_bin = tmp_path / "mpi" / "bin"
    mpi_bin.mkdir(parents=True)
    (mpi_bin / "orted").write_text("#!/bin/sh\n")
    (mpi_bin / "orted").chmod(0o755)
    return f"{mpi_bin}:/usr/bin:/bin"


def test_without_paramiko_a_model_trainer_run_is_refused_in_one_line(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "paramiko", None)  # as in an environment without it
    with pytest.raises(BadInput, match="paramiko") as refused:
        trainer_pod.check_paramiko()
    assert "\n" not in str(refused.value)


def test_an_instance_starts_with_the_venvs_python_first_and_the_images_path_last(
    tmp_path: Path,
) -> None:
    run_dir, venv_dir = tmp_path / "hosts", tmp_path / "venv"
    base = {"PATH": "/usr/bin:/bin", "HOME": "/root", "FROM_REQUEST": "machine"}
    passed = {"USER_VAR": "mine"}
    env = trainer_pod.instance_env(_plan(), base, run_dir, venv_dir, passed)
    assert env["PATH"] == f"{venv_dir / 'bin'}:/usr/bin:/bin:{CONTAINER_PATH}"
    assert env["FROM_REQUEST"] == "request"  # the request's Environment over this machine's
    assert env["USER_VAR"] == "mine" and env["HOME"] == "/root"
    assert env["PYTHONPATH"] == str(site_dir(run_dir))
    assert env["SMMPI_STACK_DIR"] == str(stack_dir(run_dir))
    assert env["OMPI_MCA_orte_tmpdir_base"] == str(run_dir / ".smmpi" / "ompi")
    assert env["SMMPI_LOCAL"] == "1"


def test_remotes_mpirun_reaches_orted_by_its_full_path_and_model_trainers_does_not(
    tmp_path: Path,
) -> None:
    base = {"PATH": _path_with_orted(tmp_path)}
    run_dir, venv_dir = tmp_path / "hosts", tmp_path / "venv"
    orted = str(tmp_path / "mpi" / "bin" / "orted")
    remote = trainer_pod.instance_env(_plan("remote"), base, run_dir, venv_dir, {})
    assert remote[trainer_pod.LAUNCH_AGENT] == orted
    trainer = trainer_pod.instance_env(_plan(), base, run_dir, venv_dir, {})
    assert trainer_pod.LAUNCH_AGENT not in trainer
    own = {trainer_pod.LAUNCH_AGENT: "/opt/mine/orted"}  # the user's own choice is kept
    chosen = trainer_pod.instance_env(_plan("remote"), base, run_dir, venv_dir, own)
    assert chosen[trainer_pod.LAUNCH_AGENT] == "/opt/mine/orted"


def _spec(fd: int) -> dict[str, Any]:
    os.lseek(fd, 0, os.SEEK_SET)
    chunks = []
    while chunk := os.read(fd, 1 << 16):
        chunks.append(chunk)
    spec: dict[str, Any] = json.loads(b"".join(chunks))
    return spec


def test_every_instance_runs_the_requests_entrypoint_with_its_sshd(tmp_path: Path) -> None:
    """algo-1's entrypoint is the pod's command, every worker runs the same one (the driver
    starts its sshd), and each instance sees its own tree as /opt/ml."""
    run_dir, venv_dir = tmp_path / "hosts", tmp_path / "venv"
    run_dir.mkdir()
    base = {"PATH": "/usr/bin:/bin", "HOME": "/root"}
    command = trainer_pod.pod_command(_plan(), venv_dir, {"USER_VAR": "mine"}, run_dir, base, ())
    try:
        spec = _spec(command.spec_fd)
    finally:
        command.close()
    assert spec["hosts"] == ["algo-1", "algo-2"]
    assert spec["opt_ml"] == [str(run_dir / h / "opt" / "ml") for h in ("algo-1", "algo-2")]
    assert spec["argv"] == list(ENTRYPOINT) and spec["worker_argv"] == list(ENTRYPOINT)
    assert spec["cwd"] == "/"
    for env in spec["host_env"]:
        assert env["USER_VAR"] == "mine"
        assert env["PATH"].startswith(f"{venv_dir / 'bin'}:")
    assert spec["env"] == spec["host_env"][0]
    assert spec["ssh_keys"] == str(run_dir / launch.SSH_KEYS)
    # what runs on algo-1 is recorded, not its environment (which may hold secrets)
    record = json.loads((run_dir / launch.RECORD).read_text())
    assert record == {"argv": list(ENTRYPOINT), "cwd": "/"}
