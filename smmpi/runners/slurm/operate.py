"""A submitted SLURM job: its state, its ranks' logs, stop, and following it to its end.

``scontrol show job`` answers while the job is in the queue (and until ``MinJobAge``), then
``sacct`` (accounting), else ``sacct -c`` (the jobcomp file). States are SLURM's words;
exit codes are smmpi's: 0 COMPLETED, 124 TIMEOUT, 1 any other end.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from smmpi.bounded import open_regular, read_regular
from smmpi.errors import BadInput
from smmpi.runners.slurm import commands
from smmpi.runners.slurm.profile import Profile

ENDED = (
    *("COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "OUT_OF_MEMORY", "NODE_FAIL"),
    *("PREEMPTED", "BOOT_FAIL", "DEADLINE"),
)
EXIT_OF = {"COMPLETED": 0, "TIMEOUT": 124}
LOG_MAX_BYTES = 256 << 20  # one rank's log, read whole
_JOB_ID = re.compile(r"^[0-9]{1,12}$")
_RANK_LOG = re.compile(r"^rank-([0-9]+)-(.+)\.log$")
_SACCT = ["--noheader", "--parsable2", "--format=JobID,JobName,State,ExitCode,NodeList,WorkDir"]


@dataclass(frozen=True)
class JobState:
    job_id: str
    name: str
    state: str  # SLURM's word
    exit_code: str  # SLURM's CODE:SIGNAL
    nodes: str
    work_dir: str

    @property
    def ended(self) -> bool:
        return self.state in ENDED

    @property
    def smmpi_exit(self) -> int:
        return EXIT_OF.get(self.state, 1) if self.ended else 0


def check_job_id(job: str) -> str:
    if not _JOB_ID.match(job):
        raise BadInput("JOB", job, "a SLURM job id (digits, as sbatch --parsable prints it)")
    return job


def _field(text: str, key: str) -> str:
    match = re.search(rf"(?:^|\s){key}=(\S*)", text)
    return match.group(1) if match else ""


def _from_scontrol(profile: Profile, job_id: str) -> JobState | None:
    answer = commands.run(profile, ["scontrol", "show", "job", "--oneliner", job_id])
    if answer.code != 0 or "JobState=" not in answer.out:
        return None
    text = answer.out
    nodes = _field(text, "NodeList")
    return JobState(
        job_id,
        _field(text, "JobName"),
        _field(text, "JobState"),
        _field(text, "ExitCode"),
        "" if nodes == "(null)" else nodes,
        _field(text, "WorkDir"),
    )


def _from_sacct(profile: Profile, job_id: str) -> JobState | None:
    for extra in ([], ["-c"]):  # accounting, else the jobcomp file
        answer = commands.run(profile, ["sacct", *extra, "-X", "-j", job_id, *_SACCT])
        for line in answer.out.splitlines() if answer.code == 0 else []:
            cells = line.split("|")
            if len(cells) >= 5 and cells[0] == job_id:
                work_dir = cells[5] if len(cells) > 5 else ""
                nodes = "" if cells[4] in ("(null)", "None assigned") else cells[4]
                return JobState(job_id, cells[1], cells[2].split()[0], cells[3], nodes, work_dir)
    return None


def state(profile: Profile, job_id: str) -> JobState:
    """Where the job is now; a job SLURM does not know is bad input."""
    check_job_id(job_id)
    found = _from_scontrol(profile, job_id) or _from_sacct(profile, job_id)
    if found is None:
        raise BadInput("JOB", job_id, "a job SLURM knows (squeue, scontrol, sacct)")
    return found


def stop(profile: Profile, job_id: str) -> JobState:
    """``scancel``; the job's state after it."""
    current = state(profile, job_id)
    if not current.ended:
        commands.checked(profile, ["scancel", job_id])
    return current


def follow(
    profile: Profile, job_id: str, on_state: Callable[[JobState], None], poll: float = 0.2
) -> JobState:
    """Until the job ends; ``on_state`` hears each state it passes through."""
    seen = ""
    while True:
        current = state(profile, job_id)
        if current.state != seen:
            seen = current.state
            on_state(current)
        if current.ended:
            return current
        time.sleep(poll)


def rank_logs(job_dir: str) -> list[tuple[int, str, Path]]:
    """(rank, node, file) of each rank's log in the job folder, in rank order."""
    folder = Path(job_dir) / "logs"
    found = []
    if folder.is_dir():
        for path in folder.iterdir():
            match = _RANK_LOG.match(path.name)
            if match:
                found.append((int(match.group(1)), match.group(2), path))
    return sorted(found)


def log_lines(job_dir: str, rank: int | None = None) -> Iterator[str]:
    """Each rank's lines, ``[rank R node] line``, or rank ``rank``'s as they are."""
    logs = rank_logs(job_dir)
    if rank is not None and rank not in {r for r, _, _ in logs}:
        ranks = ", ".join(str(r) for r, _, _ in logs) or "none yet"
        raise BadInput("--rank", rank, f"a rank of this job with a log ({ranks})")
    for r, node, path in logs:
        if rank is not None and r != rank:
            continue
        text = read_regular(path, "rank log", LOG_MAX_BYTES).decode(errors="replace")
        for line in text.splitlines():
            yield line if rank is not None else f"[rank {r} {node}] {line}"


def _new_text(path: Path, offset: int) -> tuple[str, int]:
    """The complete lines written to ``path`` since ``offset``, and the new offset."""
    with open_regular(path, "rank log", LOG_MAX_BYTES, follow=False) as (f, _):
        f.seek(offset)
        data = f.read(LOG_MAX_BYTES)
    end = data.rfind(b"\n") + 1
    return data[:end].decode(errors="replace"), offset + end


def follow_logs(
    profile: Profile, job_id: str, emit: Callable[[str], None], rank: int | None = None
) -> JobState:
    """Each rank's new lines as they come, until the job ends; its last state."""
    offsets: dict[Path, int] = {}
    while True:
        current = state(profile, job_id)
        for r, node, path in rank_logs(current.work_dir) if current.work_dir else []:
            if rank is not None and r != rank:
                continue
            text, offsets[path] = _new_text(path, offsets.get(path, 0))
            for line in text.splitlines():
                emit(line if rank is not None else f"[rank {r} {node}] {line}")
        if current.ended:
            return current
        time.sleep(0.2)
