"""What this machine brings to a run: its shell's Open MPI settings (left out), its launcher
(no ssh needed on one host), its GPUs (shared out among the emulated instances)."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from smmpi.instances.machine import GpuShare, gpu_env, gpu_share, hide_gpus, share_gpus
from smmpi.platform.layout import launch_env, left_out_mpi
from smmpi.toolkit.shape import JobShape
from tests.helpers import path_without, smmpi

SEEN = """\
import json, os
from mpi4py import MPI
names = ("CUDA_VISIBLE_DEVICES", "OMPI_MCA_plm", "PMIX_MCA_gds", "SM_NUM_GPUS", "CURRENT_HOST")
seen = {"rank": MPI.COMM_WORLD.rank, **{n: os.environ.get(n) for n in names}}
print("SEEN " + json.dumps(seen), flush=True)
"""
#: Settings a GPU image's shell may have: plm=isolated made mpirun start every rank on algo-1.
SHELL_MPI = {"OMPI_MCA_plm": "isolated", "PMIX_MCA_gds": "hash"}
LEFT_OUT = (
    "smmpi: left out this shell's Open MPI settings (OMPI_MCA_plm, PMIX_MCA_gds): a SageMaker "
    "container has none; pass one with --mpi-options '-mca NAME VALUE'"
)


def _seen(stdout: str) -> dict[int, dict[str, str | None]]:
    rows = [
        json.loads(line.split("SEEN ", 1)[1]) for line in stdout.splitlines() if "SEEN " in line
    ]
    return {row["rank"]: row for row in rows}


def test_the_shells_open_mpi_settings_are_left_out_and_named() -> None:
    environ = {"PATH": "/bin", **SHELL_MPI, "OMPI_ALLOW_RUN_AS_ROOT": "1", "PRTE_MCA_x": "1"}
    env = launch_env({"OMPI_ALLOW_RUN_AS_ROOT": "1"}, environ)
    assert not {"OMPI_MCA_plm", "PMIX_MCA_gds", "PRTE_MCA_x"} & set(env)
    assert env["OMPI_ALLOW_RUN_AS_ROOT"] == "1"  # smmpi's own: root needs it
    line = left_out_mpi(environ)
    assert line is not None and "(OMPI_MCA_plm, PMIX_MCA_gds, PRTE_MCA_x)" in line
    assert left_out_mpi({"PATH": "/bin", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"}) is None


def test_gpus_are_shared_out_where_the_machine_has_enough() -> None:
    share = share_gpus(["0", "1", "2", "3"], 2, 2, "ml.g5.12xlarge")
    assert share.devices == (("0", "1"), ("2", "3"))
    assert share.line is not None and "algo-1 0,1; algo-2 2,3" in share.line
    assert share_gpus(["a", "b", "c"], 3, 1).devices == (("a",), ("b",), ("c",))


def test_too_few_gpus_are_seen_by_every_instance_and_said() -> None:
    share = share_gpus(["GPU-1"], 2, 8, "ml.p4d.24xlarge")
    assert share.devices is None
    assert share.line == (
        "smmpi: ml.p4d.24xlarge has 8 GPU(s) per instance (SM_NUM_GPUS=8), this machine 1: "
        "the 2 emulated instance(s) all see this machine's 1, not 8 each of their own"
    )
    none = share_gpus([], 1, 1, "ml.g5.xlarge")
    assert none.devices is None and none.line is not None and "this machine none" in none.line
    assert share_gpus(["0"], 4, 0) == GpuShare(None, None)  # a CPU instance type: nothing said


@pytest.mark.own_mode
@pytest.mark.parametrize("mode", ["hosts", "processes"])
def test_shell_settings_no_ssh_and_gpus_in_a_two_instance_run(
    mode: str, run_env: dict[str, str], tmp_path: Path
) -> None:
    program = tmp_path / "seen.py"
    program.write_text(SEEN)
    env = {**run_env, **SHELL_MPI, "SMMPI_GPUS": "g0,g1,g2,g3,g4,g5,g6,g7", "SMMPI_ISOLATION": mode}
    env["PATH"] = path_without(tmp_path / "bin-without-ssh", "ssh", "rsh")
    args = ["run", str(program), "-N", "2", "-n", "1", "--instance-type", "ml.g6e.12xlarge"]
    r = smmpi(args, env)
    assert r.returncode == 0, r.stderr[-3000:]
    first = r.stderr.splitlines()[:6]
    assert LEFT_OUT in first, first
    gpus = "ml.g6e.12xlarge has 4 GPU(s) per instance (SM_NUM_GPUS=4), this machine 8"
    assert any(gpus in line and "algo-1 g0,g1,g2,g3; algo-2 g4,g5,g6,g7" in line for line in first)
    seen = _seen(r.stdout)
    assert seen[0]["CUDA_VISIBLE_DEVICES"] == "g0,g1,g2,g3"
    assert seen[1]["CUDA_VISIBLE_DEVICES"] == "g4,g5,g6,g7"
    assert {row["CURRENT_HOST"] for row in seen.values()} == {"algo-1", "algo-2"}
    assert {row["SM_NUM_GPUS"] for row in seen.values()} == {"4"}  # the instance type's
    assert {row["PMIX_MCA_gds"] for row in seen.values()} == {None}
    if mode == "hosts":  # processes mode gives its mpirun `-mca plm isolated` itself
        assert "isolated" not in {row["OMPI_MCA_plm"] for row in seen.values()}


def test_the_jobs_own_cuda_visible_devices_stands(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SMMPI_GPUS", "0,1,2,3")
    shape = JobShape("job", "demo.py", 2, 1, instance_type="ml.g5.2xlarge")
    assert gpu_env(shape, "algo-2") == {"CUDA_VISIBLE_DEVICES": "1"}
    chosen = dataclasses.replace(shape, environment={"CUDA_VISIBLE_DEVICES": "3"})
    assert gpu_env(chosen, "algo-2") == {}
    assert gpu_share(chosen).line == (
        "smmpi: every emulated instance sees CUDA_VISIBLE_DEVICES=3, the job's own"
    )


def test_a_cpu_instance_type_sees_none_of_the_machines_gpus() -> None:
    hidden = hide_gpus(["g0", "g1"], 2, "ml.c5.xlarge")
    assert hidden.devices == ((), ())
    assert hidden.line == (
        "smmpi: ml.c5.xlarge has no GPU (SM_NUM_GPUS=0): the emulated instances see none of "
        "this machine's 2 (CUDA_VISIBLE_DEVICES empty); choose a GPU instance type "
        "(--instance-type ml.g5.xlarge) to use them"
    )
    assert hide_gpus([], 2, "ml.c5.xlarge") == GpuShare(None, None)  # no GPU here: nothing said


@pytest.mark.own_mode
@pytest.mark.parametrize("mode", ["hosts", "processes"])
def test_a_cpu_instance_type_run_hides_the_gpus_from_its_ranks(
    mode: str, run_env: dict[str, str], tmp_path: Path
) -> None:
    """On SageMaker an ml.c5 instance has no GPU: its ranks find none here either."""
    program = tmp_path / "seen.py"
    program.write_text(SEEN)
    env = {**run_env, "SMMPI_GPUS": "g0,g1", "SMMPI_ISOLATION": mode}
    r = smmpi(["run", str(program), "-N", "2", "-n", "1", "--instance-type", "ml.c5.xlarge"], env)
    assert r.returncode == 0, r.stderr[-3000:]
    assert any("has no GPU (SM_NUM_GPUS=0)" in line for line in r.stderr.splitlines()[:6])
    seen = _seen(r.stdout)
    assert {row["CUDA_VISIBLE_DEVICES"] for row in seen.values()} == {""}
    assert {row["SM_NUM_GPUS"] for row in seen.values()} == {"0"}


def test_exact_mode_leaves_the_shells_settings_out_and_shares_the_gpus(
    run_env: dict[str, str], tmp_path: Path
) -> None:
    """Exact mode: the container's mpirun on algo-1 reaches algo-2 through sshd, with the
    instance's environment: this shell's OMPI_MCA_plm=isolated would keep it on algo-1."""
    program = tmp_path / "seen.py"
    program.write_text(SEEN)
    env = {**run_env, **SHELL_MPI, "SMMPI_GPUS": "g0,g1", "SMMPI_TOOLKIT_VENV": "none"}
    env.pop("SMMPI_ISOLATION", None)
    args = ["run", str(program), "-N", "2", "-n", "1", "--exact", "--instance-type", "ml.g5.xlarge"]
    r = smmpi(args, env, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    assert LEFT_OUT in r.stderr.splitlines()[:6]
    seen = _seen(r.stdout)
    assert [seen[k]["CUDA_VISIBLE_DEVICES"] for k in (0, 1)] == ["g0", "g1"]
    assert {row["PMIX_MCA_gds"] for row in seen.values()} == {None}
