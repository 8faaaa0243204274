"""The batch script: a pure function of the job and the profile, pinned by golden files; the
same MPIJob dry-runs for SageMaker and for SLURM at one world size."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.helpers import base_env, check_golden, smmpi

PROFILE = {
    "partition": "debug",
    "account": "hpc-users",
    "time": "30",
    "modules": ["module purge", "module load mpi/OpenMPI"],
    "activate": "/opt/venvs/mpi",
    "sbatch": ["--exclusive"],
    "workdir": "/shared/smmpi",
}


def _env(tmp_path: Path, **changes: object) -> dict[str, str]:
    env = base_env(tmp_path)
    profile = {**PROFILE, **changes}
    Path(env["SMMPI_CONFIG"]).write_text(json.dumps({"slurm_profiles": {"hpc": profile}}))
    return env


@pytest.mark.parametrize("launch", ["srun", "mpirun"])
def test_dry_run_prints_the_batch_script(tmp_path: Path, launch: str) -> None:
    env = _env(tmp_path, launch=launch)
    args = ["submit", "demo", "--instances", "3", "--ppn", "2", "--backend", "slurm"]
    args += ["--profile", "hpc", "--job-name", "smmpi-demo-golden", "--dry-run"]
    args += ["--hyperparameter", "epochs=2", "--env", "GREETING=hello world"]
    done = smmpi(args, env)
    assert done.returncode == 0, done.stderr
    check_golden(f"slurm_demo_3x2.{launch}.sbatch.json", done.stdout.splitlines())
    assert not Path("/shared/smmpi").exists()  # a dry run creates nothing


def test_flags_override_the_profile_and_sagemaker_sees_the_same_world(tmp_path: Path) -> None:
    env = _env(tmp_path, launch="srun")
    shape = ["submit", "demo", "--instances", "3", "--ppn", "2", "--dry-run", "--json"]
    slurm = smmpi([*shape, "--backend", "slurm", "--profile", "hpc", "--time", "1-00:00"], env)
    assert slurm.returncode == 0, slurm.stderr
    shown = json.loads(slurm.stdout)
    assert shown["world_size"] == 6
    assert "#SBATCH --time=1-00:00" in shown["script"].splitlines()
    sagemaker = smmpi(shape, env)
    assert sagemaker.returncode == 0, sagemaker.stderr
    assert json.loads(sagemaker.stdout)["world_size"] == 6


@pytest.mark.parametrize(
    ("flags", "line"),
    [
        (["--backend", "pbs"], "invalid --backend: 'pbs'; allowed: sagemaker | slurm"),
        (
            ["--partition", "debug"],
            "invalid --partition: 'debug'; allowed: only with --backend slurm",
        ),
        (["--backend", "slurm", "--time", "0"], "invalid time: '0'; allowed: a SLURM time limit"),
        (["--backend", "slurm", "--time", "1:xx"], "invalid time: '1:xx'; allowed: a SLURM time"),
        (["--backend", "slurm", "--profile", "nope"], "invalid --profile: 'nope'; allowed: hpc"),
        (["--backend", "slurm", "--local"], "invalid --local: True; allowed: not with --backend"),
    ],
)
def test_bad_flags_are_one_line(tmp_path: Path, flags: list[str], line: str) -> None:
    env = _env(tmp_path, workdir=str(tmp_path / "jobs"))
    done = smmpi(["submit", "demo", "--instances", "3", "--ppn", "2", *flags], env)
    assert done.returncode == 2
    assert done.stderr.startswith(f"smmpi: {line}") and done.stderr.count("\n") == 1
    assert not (tmp_path / "jobs").exists()


def test_bad_profile_setting_is_one_line(tmp_path: Path) -> None:
    env = _env(tmp_path, modules="module load x")
    args = ["submit", "demo", "-N", "1", "--ppn", "1", "--backend", "slurm", "--profile", "hpc"]
    done = smmpi([*args, "--dry-run"], env)
    assert done.returncode == 2
    assert done.stderr == (
        "smmpi: invalid slurm_profiles.hpc.modules: 'module load x'; allowed: a list of strings\n"
    )


def test_a_followed_job_is_asked_after_often_at_first_then_every_two_seconds() -> None:
    """A short job's end is seen within 0.1 s; a long job costs slurmctld one scontrol in 2 s."""
    from smmpi.runners.slurm.operate import poll_interval

    assert [poll_interval(t) for t in (0.0, 5.0, 9.99)] == [0.1, 0.1, 0.1]
    later = [poll_interval(t) for t in range(10, 120)]
    assert later == sorted(later) and later[0] < later[20] < later[-1]
    assert max(later) == 2.0 and poll_interval(3600.0) == 2.0
