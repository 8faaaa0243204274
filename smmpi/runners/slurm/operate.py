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

from smmpi.bounded import copy_regular, open_regular, read_regular
from smmpi.errors import BadInput
from smmpi.runners.slurm import commands
from smmpi.runners.slurm.profile import Profile
from smmpi.runners.slurm.signs import Signs, interval

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


def _sacct(profile: Profile, *selection: str) -> list[JobState]:
    """The jobs ``sacct`` knows: from accounting, else from the jobcomp file (``-c``)."""
    for extra in ([], ["-c"]):
        answer = commands.run(profile, ["sacct", *extra, "-X", *selection, *_SACCT])
        if answer.code != 0:
            continue
        rows = []
        for line in answer.out.splitlines():
            cells = [*line.split("|"), ""][:6]
            if cells[0].isdigit() and cells[2]:
                nodes = "" if cells[4] in ("(null)", "None assigned") else cells[4]
                state = cells[2].split()[0]  # "CANCELLED by 0"
                rows.append(JobState(cells[0], cells[1], state, cells[3], nodes, cells[5]))
        return rows
    return []


def from_sacct(profile: Profile, job_id: str) -> JobState | None:
    """The job's end as ``sacct`` keeps it, once it has left slurmctld's memory."""
    return next((j for j in _sacct(profile, "-j", job_id) if j.job_id == job_id), None)


def state(profile: Profile, job_id: str) -> JobState:
    """Where the job is now; a job SLURM does not know is bad input."""
    check_job_id(job_id)
    found = _from_scontrol(profile, job_id) or from_sacct(profile, job_id)
    if found is None:
        raise BadInput("JOB", job_id, "a job SLURM knows (squeue, scontrol, sacct)")
    return found


def stop(profile: Profile, job_id: str) -> JobState:
    """``scancel``; the job's state after it."""
    current = state(profile, job_id)
    if not current.ended:
        commands.checked(profile, ["scancel", job_id])
    return current


#: How often a followed job is asked after: every 0.1 s for its first 10 s (a short job's end
#: is seen at once), then 0.05 s less often each second, up to every 2 s from about 50 s on
#: (a long job costs slurmctld one ``scontrol`` every 2 s, as a user's ``watch`` would).
FIRST_POLL, QUICK_SECONDS, SLOWER_BY, LAST_POLL = 0.1, 10.0, 0.05, 2.0


def poll_interval(elapsed: float) -> float:
    """Seconds to the next look at a job followed for ``elapsed`` seconds."""
    later = max(0.0, elapsed - QUICK_SECONDS) * SLOWER_BY
    return min(LAST_POLL, FIRST_POLL + later)


def follow(profile: Profile, job_id: str, on_state: Callable[[JobState], None]) -> JobState:
    """Until the job ends; ``on_state`` hears each state it passes through. SLURM is asked
    when a sign appears (:mod:`~smmpi.runners.slurm.signs`), else on the usual schedule."""
    seen = ""
    start = time.monotonic()
    signs = Signs.of(job_id, profile.jobcomp)
    while True:
        signs.mark()
        current = state(profile, job_id)
        signs.watch_folder(current.work_dir)
        if current.state != seen:
            seen = current.state
            on_state(current)
        if current.ended:
            return current
        quick = poll_interval(time.monotonic() - start)
        signs.wait(interval(signs, current.state, quick))


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
        data = read_regular(path, "rank log", LOG_MAX_BYTES, follow=False)
        text = data.decode(errors="replace")
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
    start = time.monotonic()
    signs = Signs.of(job_id, profile.jobcomp)
    while True:
        signs.mark()
        current = state(profile, job_id)
        signs.watch_folder(current.work_dir)
        for r, node, path in rank_logs(current.work_dir) if current.work_dir else []:
            if rank is not None and r != rank:
                continue
            text, offsets[path] = _new_text(path, offsets.get(path, 0))
            for line in text.splitlines():
                emit(line if rank is not None else f"[rank {r} {node}] {line}")
        if current.ended:
            return current
        # lines come as they are written: the usual schedule, sooner at a sign
        quick = poll_interval(time.monotonic() - start)
        signs.wait(min(quick, interval(signs, current.state, quick)))


def jobs(profile: Profile) -> list[JobState]:
    """The cluster's jobs: those in the queue, then those that ended (newest first)."""
    found: dict[str, JobState] = {}
    queue = commands.checked(profile, ["squeue", "--noheader", "--format=%i|%j|%T|%N|%Z"])
    for line in queue.splitlines():
        cells = line.split("|")
        if len(cells) == 5:
            found[cells[0]] = JobState(cells[0], cells[1], cells[2], "", cells[3], cells[4])
    for ended in _sacct(profile):
        found.setdefault(ended.job_id, ended)
    return sorted(found.values(), key=lambda j: int(j.job_id), reverse=True)


FETCHED = ("logs", "code/model", "code/output")


def fetch(profile: Profile, job_id: str, dest: Path) -> list[Path]:
    """Copy the job's logs, model and output folders (regular files only) to ``dest``."""
    if dest.is_symlink() or (dest.exists() and (not dest.is_dir() or any(dest.iterdir()))):
        raise BadInput("--to", str(dest), "a folder that does not exist yet, or an empty one")
    st = state(profile, job_id)
    copied: list[Path] = []
    for part in FETCHED:
        source = Path(st.work_dir) / part
        for path in sorted(source.rglob("*")) if source.is_dir() else []:
            if path.is_symlink() or not path.is_file():
                continue
            target = dest / part.removeprefix("code/") / path.relative_to(source)
            target.parent.mkdir(parents=True, exist_ok=True)
            copy_regular(path, target, "job file", LOG_MAX_BYTES, follow=False)
            copied.append(target)
    return copied
