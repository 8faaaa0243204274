"""SLURM's own commands (sbatch, squeue, scontrol, sacct, scancel, sinfo, srun), as users run them.

Each runs from the profile's ``bin`` folder (else PATH) with the profile's ``SLURM_CONF``,
and its answer comes back as text; a command that is missing, or that the cluster refuses,
is one line naming it.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass

from smmpi.errors import SmmpiError
from smmpi.runners.slurm.profile import Profile
from smmpi.spec.secrets import is_credential

ANSWER_SECONDS = 60.0


class SlurmError(SmmpiError):
    """A SLURM command failed or is missing (exit code 1: the cluster's answer, not input)."""

    exit_code = 1


@dataclass(frozen=True)
class Answer:
    code: int
    out: str
    err: str

    @property
    def line(self) -> str:
        text = (self.err or self.out).strip().splitlines()
        return text[-1] if text else f"exit code {self.code}"


def which(profile: Profile, name: str) -> str | None:
    """Where command ``name`` is: in the profile's ``bin``, else on PATH."""
    if profile.bin:
        path = os.path.join(profile.bin, name)
        return path if os.access(path, os.X_OK) else None
    return shutil.which(name)


def environment(profile: Profile) -> dict[str, str]:
    """This environment for SLURM's commands, less AWS credentials: sbatch hands its
    environment to the job, and slurmctld keeps a job's environment on disk."""
    env = {k: v for k, v in os.environ.items() if not is_credential(k)}
    if profile.conf:
        env["SLURM_CONF"] = profile.conf
    return env


def run(
    profile: Profile, argv: Sequence[str], *, cwd: str | None = None, stdin: str | None = None
) -> Answer:
    """Run ``argv`` (its first word a SLURM command) and return what it said."""
    path = which(profile, argv[0])
    if path is None:
        where = f"in {profile.bin}" if profile.bin else "on PATH"
        raise SlurmError(f"SLURM's `{argv[0]}` is not {where} (profile {profile.name})")
    try:
        done = subprocess.run(
            [path, *argv[1:]],
            input=stdin,
            capture_output=True,
            text=True,
            cwd=cwd,
            env=environment(profile),
            timeout=ANSWER_SECONDS,
            check=False,
        )
    except subprocess.TimeoutExpired:
        raise SlurmError(f"`{argv[0]}` gave no answer in {ANSWER_SECONDS:.0f} s") from None
    return Answer(done.returncode, done.stdout, done.stderr)


def checked(profile: Profile, argv: Sequence[str], **kwargs: str | None) -> str:
    """:func:`run`, and its output; a failure is :class:`SlurmError` with SLURM's own line."""
    answer = run(profile, argv, **kwargs)
    if answer.code != 0:
        raise SlurmError(f"`{argv[0]}` failed: {answer.line}")
    return answer.out


def offers_pmix(profile: Profile) -> bool:
    """Whether the cluster's srun offers PMIx (``srun --mpi=list``)."""
    if which(profile, "srun") is None:
        return False
    answer = run(profile, ["srun", "--mpi=list"])
    return answer.code == 0 and "pmix" in (answer.out + answer.err)
