"""Jobs on the real cluster through smmpi: submitted, followed, logged, cancelled, refused."""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

import pytest

from tests.helpers import BIN, smmpi
from tests.slurm.cluster_helpers import Cluster

pytestmark = pytest.mark.machine
SLURM = ["--backend", "slurm", "--profile", "local"]

SLEEPER = """
import sys, time
from mpi4py import MPI
comm = MPI.COMM_WORLD
print(f"rank {comm.Get_rank()} started", flush=True)
time.sleep(600)
"""


def _job_ids(cluster: Cluster) -> list[str]:
    """Every job slurmctld holds, ended ones too (until MinJobAge): a job submitted and ended
    at once would still be here."""
    done = cluster.command("squeue", "--noheader", "--states=all", "--format=%i")
    assert done.returncode == 0, done.stderr
    return sorted(done.stdout.split())


def test_demo_3x2_completes_with_a_log_per_rank(cluster: Cluster) -> None:
    shape = ["submit", "demo", "--instances", "3", "--ppn", "2", *SLURM]
    done = smmpi([*shape, "--job-name", "smmpi-demo-slurm"], cluster.env, timeout=300)
    assert done.returncode == 0, done.stderr
    job_id = done.stdout.strip()
    assert job_id.isdigit()
    assert f"smmpi: job {job_id} COMPLETED on node[1-3]" in done.stderr.splitlines()
    logs = sorted(p.name for p in (cluster.shared / "smmpi-demo-slurm" / "logs").iterdir())
    assert logs == [f"rank-{r}-node{r // 2 + 1}.log" for r in range(6)]
    status = smmpi(["status", job_id, *SLURM], cluster.env)
    assert status.returncode == 0, status.stderr
    assert status.stdout.splitlines()[0] == f"job {job_id} (smmpi-demo-slurm): COMPLETED"
    shown = smmpi(["logs", job_id, *SLURM], cluster.env)
    assert shown.returncode == 0, shown.stderr
    assert "[rank 0 node1] 0: Number of MPI processes that will talk to each other: 6" in (
        shown.stdout
    )
    assert smmpi(["logs", job_id, *SLURM, "--rank", "6"], cluster.env).returncode == 2
    listed = smmpi(["jobs", *SLURM], cluster.env)
    assert f"{job_id:<8}  smmpi-demo-slurm" in listed.stdout, listed.stdout
    fetched = smmpi(["fetch", job_id, *SLURM, "--to", str(cluster.home / "got")], cluster.env)
    assert fetched.returncode == 0, fetched.stderr
    got = sorted(p.name for p in (cluster.home / "got" / "logs").iterdir())
    assert got == logs
    again = smmpi(["fetch", job_id, *SLURM, "--to", str(cluster.home / "got")], cluster.env)
    assert again.returncode == 2  # never over files already there


def test_a_job_cancelled_mid_run_is_cancelled(cluster: Cluster, tmp_path: Path) -> None:
    program = tmp_path / "sleeper.py"
    program.write_text(SLEEPER)
    args = ["submit", str(program), "-N", "2", "--ppn", "1", *SLURM, "--no-wait"]
    done = smmpi([*args, "--job-name", "smmpi-sleeper"], cluster.env)
    assert done.returncode == 0, done.stderr
    job_id = done.stdout.strip()
    # following rank 1's log while the job runs: its line comes as it is written
    follow = ["logs", job_id, *SLURM, "--follow", "--rank", "1"]
    with subprocess.Popen(
        [str(BIN / "smmpi"), *follow],
        env=cluster.env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    ) as following:
        assert following.stdout is not None and following.stderr is not None
        assert following.stdout.readline() == "1: rank 1 started\n"  # before any stop
        assert cluster.state(job_id) == "RUNNING"
        stopped = smmpi(["stop", job_id, *SLURM], cluster.env)
        assert stopped.returncode == 0
        assert stopped.stdout == f"job {job_id} stopping; it was RUNNING\n"
        assert following.wait(timeout=120) == 1
        assert following.stdout.read() == ""
        assert following.stderr.read().startswith(f"smmpi: job {job_id} CANCELLED: exit code")
    assert cluster.state(job_id) == "CANCELLED"


@pytest.mark.parametrize(
    ("args", "line"),
    [
        (["--partition", "gpu"], "invalid partition: 'gpu'; allowed: debug"),
        (["-N", "4"], "invalid instances: 4; allowed: at most 3 (the nodes of the default"),
        (["--ppn", "3"], "invalid ppn: 3; allowed: at most 2 (the CPUs of a node of the default"),
        (["--time", "00"], "invalid time: '00'; allowed: a SLURM time limit above zero"),
    ],
)
def test_what_the_cluster_cannot_run_is_refused(
    cluster: Cluster, args: list[str], line: str
) -> None:
    before, jobs = sorted(os.listdir(cluster.shared)), _job_ids(cluster)
    shape = ["-N", "1", "--ppn", "1"]
    done = smmpi(
        ["submit", "demo", *shape, *SLURM, *args, "--job-name", "smmpi-refused"], cluster.env
    )
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith(f"smmpi: {line}") and done.stderr.count("\n") == 1
    assert sorted(os.listdir(cluster.shared)) == before
    assert _job_ids(cluster) == jobs


def test_what_sbatch_test_only_refuses_is_refused(cluster: Cluster, tmp_path: Path) -> None:
    """A profile's own #SBATCH line the cluster cannot meet (a feature no node has): sinfo's
    checks pass, `sbatch --test-only` refuses, and nothing is created or submitted."""
    config = json.loads(Path(cluster.env["SMMPI_CONFIG"]).read_text())
    config["slurm_profiles"]["local"]["sbatch"] = ["--constraint=gpu"]
    (tmp_path / "config.json").write_text(json.dumps(config))
    env = {**cluster.env, "SMMPI_CONFIG": str(tmp_path / "config.json")}
    before, jobs = sorted(os.listdir(cluster.shared)), _job_ids(cluster)
    args = ["submit", "demo", "-N", "1", "--ppn", "1", *SLURM, "--job-name", "smmpi-no-gpu"]
    done = smmpi(args, env)
    assert done.returncode == 2, done.stderr
    assert done.stderr == (
        "smmpi: invalid job (sbatch --test-only): 'smmpi-no-gpu'; allowed: what SLURM accepts: "
        "allocation failure: Invalid feature specification\n"
    )
    assert sorted(os.listdir(cluster.shared)) == before
    assert _job_ids(cluster) == jobs


SHOW_ENV = """
import os
from mpi4py import MPI
names = ("AWS_SECRET_ACCESS_KEY", "AWS_ACCESS_KEY_ID", "GREETING")
print(MPI.COMM_WORLD.Get_rank(), [os.environ.get(n) for n in names], flush=True)
"""


def test_credentials_never_reach_the_job(cluster: Cluster, tmp_path: Path) -> None:
    """sbatch hands its environment to the job, and slurmctld keeps it on disk: smmpi's
    commands run without this shell's AWS credentials; other variables pass."""
    program = tmp_path / "show_env.py"
    program.write_text(SHOW_ENV)
    env = {**cluster.env, "AWS_SECRET_ACCESS_KEY": "testing-secret", "GREETING": "hi"}
    env["AWS_ACCESS_KEY_ID"] = "testing-key-id"
    args = ["submit", str(program), "-N", "1", "--ppn", "1", *SLURM, "--job-name", "smmpi-env"]
    done = smmpi(args, env)
    assert done.returncode == 0, done.stderr
    log = (cluster.shared / "smmpi-env" / "logs" / "rank-0-node1.log").read_text()
    assert log == "0: 0 [None, None, 'hi']\n"
    state = cluster.folder / "state"
    for path in state.rglob("*"):
        if path.is_file():
            assert b"testing-secret" not in path.read_bytes(), path


def test_python_api_submits_and_waits(cluster: Cluster, monkeypatch: pytest.MonkeyPatch) -> None:
    from smmpi import api
    from smmpi.spec import MPIJob

    for name, value in cluster.env.items():
        monkeypatch.setenv(name, value)
    job = MPIJob("demo", instances=3, ppn=2, job_name="smmpi-demo-api")
    final = api.submit_slurm(job, profile="local", wait=True)
    assert (final.state, final.nodes, final.smmpi_exit) == ("COMPLETED", "node[1-3]", 0)
    assert Path(final.work_dir) == cluster.shared / "smmpi-demo-api"
    from smmpi.runners.slurm import operate, profile

    # once the job has left slurmctld's memory (MinJobAge), the jobcomp file answers the same
    assert operate.from_sacct(profile.load("local"), final.job_id) == final


NAPPER = """
import time
from mpi4py import MPI
MPI.COMM_WORLD.Barrier()
time.sleep(6)
"""


def test_a_followed_job_is_asked_after_when_its_files_change(
    cluster: Cluster, tmp_path: Path
) -> None:
    """`submit --wait` asks `scontrol` when the job's output file appears and when slurmctld
    writes its end to the jobcomp file (profile `local` names it), and otherwise once in 2 s:
    not ten times a second while the job runs, beside its ranks."""
    asked = tmp_path / "asked.txt"
    counted = tmp_path / "bin"
    counted.mkdir()
    for name in ("sbatch", "sinfo", "scontrol", "sacct", "squeue"):
        real = cluster.folder / "bin" / name
        note = f'echo "$*" >>{asked}\n' if name == "scontrol" else ""
        (counted / name).write_text(f'#!/bin/sh\n{note}exec {real} "$@"\n')
        (counted / name).chmod(0o755)
    config = json.loads(Path(cluster.env["SMMPI_CONFIG"]).read_text())
    local = config["slurm_profiles"]["local"]
    assert Path(local["jobcomp"]).is_file()  # `slurm up` named it, slurmctld writes it
    config["slurm_profiles"]["counted"] = {**local, "bin": str(counted)}
    (tmp_path / "config.json").write_text(json.dumps(config))
    env = {**cluster.env, "SMMPI_CONFIG": str(tmp_path / "config.json")}
    program = tmp_path / "napper.py"
    program.write_text(NAPPER)
    args = ["submit", str(program), "-N", "3", "--ppn", "2", "--backend", "slurm"]
    started = time.monotonic()
    done = smmpi([*args, "--profile", "counted", "--job-name", "smmpi-napper"], env)
    took = time.monotonic() - started
    assert done.returncode == 0, done.stderr
    job_id = done.stdout.strip()
    said = [f"smmpi: job {job_id} {state} on node[1-3]" for state in ("RUNNING", "COMPLETED")]
    assert [line for line in done.stderr.splitlines() if line in said] == said
    questions = asked.read_text().splitlines()
    # PENDING, RUNNING, the end (and COMPLETING), the 2 s safety net: asked every 0.1 s, a
    # job of 6 s and more took 30 questions
    assert len(questions) <= 6 + took / 2, (took, questions)
