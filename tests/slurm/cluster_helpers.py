"""What the SLURM tests share: the cluster they use, its commands, the venv's mpirun."""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from tests.helpers import processes_left

BIN = Path(sys.executable).parent
MPIRUN = str(BIN / "mpirun") if (BIN / "mpirun").exists() else "mpirun"
DAEMONS = ("munged", "slurmctld", "slurmd")


def installed() -> str | None:
    """None when Debian's SLURM and munge are installed; else what is missing."""
    for name in (*DAEMONS, "sbatch"):
        if not (shutil.which(name) or Path("/usr/sbin", name).exists()):
            return f"{name} is not installed"
    return None


def daemons_left(folder: Path) -> list[str]:
    """The processes of the cluster in ``folder`` still running: each daemon's command line
    names its folder (the session's cluster may be up beside it)."""
    return processes_left(str(folder))


@dataclass(frozen=True)
class Cluster:
    folder: Path
    env: dict[str, str]
    home: Path

    @property
    def shared(self) -> Path:
        return self.folder / "shared"

    def command(
        self, *argv: str, cwd: Path | None = None, env: dict[str, str] | None = None
    ) -> subprocess.CompletedProcess[str]:
        """One of SLURM's commands, as a user runs it with the cluster's bin/ on PATH."""
        return subprocess.run(
            [str(self.folder / "bin" / argv[0]), *argv[1:]],
            env=env or self.env,
            cwd=cwd or self.shared,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )

    def state(self, job_id: str) -> str:
        answer = self.command("scontrol", "show", "job", job_id)
        for word in answer.stdout.split():
            if word.startswith("JobState="):
                return word.split("=", 1)[1]
        return ""

    def wait_state(self, job_id: str, wanted: tuple[str, ...], seconds: float = 90) -> str:
        deadline = time.monotonic() + seconds
        state = self.state(job_id)
        while state not in wanted and time.monotonic() < deadline:
            time.sleep(0.1)
            state = self.state(job_id)
        return state
