"""Signs that a followed job has moved on, read from files at the cost of a ``stat``, so that
SLURM is asked only when one appears (or, failing one, now and then).

SLURM has no call that blocks until a job ends: ``sbatch --wait`` asks every 2 s and then
less often, and a ``strigger`` fires from slurmctld's 15 s pass. Asking ``scontrol`` often
costs the controller a request and this machine a process each time, beside the job's ranks.
Two files tell sooner:
- the job's output file (``slurm-JOBID.out`` in the job folder), which slurmstepd creates as
  the batch step starts: the job is RUNNING;
- the cluster's jobcomp file (``JobCompType=jobcomp/filetxt``; the profile's ``jobcomp``, which
  ``smmpi slurm up`` sets), to which slurmctld appends a line the moment a job ends.
Neither is read: its size, time and inode changing is the sign, and SLURM's own answer
(``scontrol``) stays the job's state.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

from smmpi.runners.slurm.script import JOB_LOG

#: How often the files are looked at (a ``stat`` each: nothing next to a job's ranks).
LOOK_SECONDS = 0.02
#: How often a job is asked after when the jobcomp file tells its end: a safety net only.
SAFETY_POLL = 2.0
#: How often a job is asked after while slurmctld releases its nodes (COMPLETING).
COMPLETING_POLL = 0.05

Stamp = tuple[int, int, int] | None


def _stamp(path: Path) -> Stamp:
    try:
        st = path.stat()
    except OSError:
        return None
    return (st.st_size, st.st_mtime_ns, st.st_ino)


@dataclass
class Signs:
    """The files of one followed job; :meth:`wait` returns when one of them changes."""

    job_id: str
    jobcomp: Path | None = None
    output: Path | None = None
    _seen: tuple[Stamp, ...] = field(default=(), init=False)

    @classmethod
    def of(cls, job_id: str, jobcomp: str | None) -> Signs:
        """The signs of job ``job_id``; the jobcomp file only where it is there to be seen."""
        comp = Path(jobcomp) if jobcomp else None
        return cls(job_id, comp if comp and _stamp(comp) else None)

    @property
    def tells_the_end(self) -> bool:
        return self.jobcomp is not None

    def watch_folder(self, work_dir: str) -> None:
        """Look for the job's output file in ``work_dir`` (once SLURM has named the folder)."""
        if work_dir and self.output is None:
            self.output = Path(work_dir) / JOB_LOG.replace("%j", self.job_id)

    def mark(self) -> None:
        """What the files are now: :meth:`wait` waits for a change from this."""
        self._seen = self._stamps()

    def _stamps(self) -> tuple[Stamp, ...]:
        return tuple(_stamp(p) if p else None for p in (self.jobcomp, self.output))

    def wait(self, seconds: float) -> bool:
        """Until a file differs from the last :meth:`mark`, or ``seconds`` pass; whether one
        did."""
        deadline = time.monotonic() + seconds
        while True:
            if self._stamps() != self._seen:
                return True
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            time.sleep(min(LOOK_SECONDS, left))


def interval(signs: Signs, state: str, quick: float) -> float:
    """Seconds until SLURM is asked again, when no sign comes first: ``quick`` (the usual
    schedule) unless the jobcomp file will tell the end; soon while the job is COMPLETING."""
    if state == "COMPLETING":
        return min(COMPLETING_POLL, quick)
    return SAFETY_POLL if signs.tells_the_end else quick
