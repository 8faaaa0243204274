"""SLURM's runner: the job checked against a cluster's profile, then ``sbatch``."""

from __future__ import annotations

from smmpi.runners.slurm import operate
from smmpi.runners.slurm import profile as profiles
from smmpi.runners.slurm.submit import submit
from smmpi.spec import MPIJob


class SlurmJobs:
    """:class:`~smmpi.runners.base.Runner` that submits to the SLURM cluster of a profile."""

    name = "slurm"

    def start(
        self,
        job: MPIJob,
        *,
        profile: str | None = None,
        wait: bool = False,
        **overrides: str | None,
    ) -> operate.JobState:
        """The job on the cluster of config profile ``profile`` (``overrides``: partition,
        account, time); its state when submitted, or at its end with ``wait``."""
        chosen = profiles.load(profile, **overrides)
        done = submit(job, chosen)
        if wait:
            return operate.follow(chosen, done.job_id, lambda _state: None)
        return operate.state(chosen, done.job_id)
