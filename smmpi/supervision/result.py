"""A local run's end as smmpi reports it (:class:`RunResult`), and what the verdict reads
besides the ranks' records (:class:`Run`): the job, the mode and how mpirun ended."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from smmpi.causes import ranked
from smmpi.supervision.oom import oom_kills
from smmpi.toolkit.hosts import host_of_rank
from smmpi.toolkit.shape import JobShape

EXIT_OK, EXIT_FAILED, EXIT_TIMEOUT, EXIT_INTERRUPTED = 0, 1, 124, 130


@dataclass
class RunResult:
    exit_code: int
    status: str  # Completed | Failed | TimedOut | Interrupted
    seconds: float
    run_dir: Path
    world_size: int
    failed_rank: int | None = None
    failed_host: str | None = None
    reason: str | None = None
    stacks: dict[int, str] = field(default_factory=dict)
    phrase: str | None = None  # after "rank R (algo-k)": "failed: ..." or "called MPI_Abort(0)"
    notes: dict[int, str] = field(default_factory=dict)  # why a rank has no stack
    returncode: int | None = None  # mpirun's
    error_message: str = ""  # what the container's toolkit would keep of mpirun's output

    @property
    def failure_line(self) -> str | None:
        if self.failed_rank is None:
            return self.reason
        phrase = self.phrase or f"failed: {self.reason}"
        return ranked(self.failed_rank, self.failed_host, phrase)


@dataclass(frozen=True)
class Run:
    """What the verdict reads besides the records: the job, the mode and mpirun's end."""

    shape: JobShape
    mode: str
    record_dir: Path
    run_dir: Path
    started: float  # time.time() at the start
    code: int | None  # how the launched process ended (None: killed by smmpi)
    sessions: Path | None = None  # where Open MPI writes its session files (the run dir's)
    # the OOM kills smmpi's memory cgroup had counted as the run started (the ranks start later)
    oom_kills: int | None = field(default_factory=oom_kills)

    def host(self, rank: int) -> str:
        return host_of_rank(rank, self.shape.ppn, self.shape.instances)
