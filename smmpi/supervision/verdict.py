"""How a local run ended, in one line: who failed and why, from the run's own records.

The same classification in both modes (:mod:`.exits`): an exception, a call of
``MPI_Abort`` (``MPI_Abort(0)`` too: the others were killed), an exit code, a
signal, or a rank whose launcher was killed under it. Open MPI's text is read
only where no record exists, and for known failures (``FailureScan.found``).
"""

from __future__ import annotations

import contextlib
import json
import signal
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from smmpi.causes import ranked, say, signal_text
from smmpi.mpi_output import FailureScan, Pitfall, printable
from smmpi.supervision.exits import Blame, Ends
from smmpi.supervision.rank_records import read_ends, read_init_ends
from smmpi.supervision.room import full_line
from smmpi.toolkit.hosts import host_dirs, host_of_rank
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

    def host(self, rank: int) -> str:
        return host_of_rank(rank, self.shape.ppn, self.shape.instances)


def _killed_everything(ends: Ends, blame: Blame, run: Run) -> str | None:
    """The phrase for a rank that outlived every other process of the run (kill(-1))."""
    killed = run.code in (128 + signal.SIGKILL, -signal.SIGKILL)
    if not killed or blame.rank not in ends.orphans or ends.ends:
        return None
    where = ends.orphans[blame.rank].where
    return say("killed-everything", at=f" (it was at {where})" if where else "")


def _pitfall_note(pitfall: Pitfall, run: Run, scan: FailureScan) -> str:
    if pitfall.key == "no-room":
        return full_line(run.sessions or run.run_dir, run.shape, run.mode)
    return scan.note(pitfall)


def _replaced_excepthook(ends: Ends, scan: FailureScan, rank: int) -> bool:
    """The rank printed a traceback and ended with an exit code, but recorded no exception:
    the program replaced ``sys.excepthook`` (the traceback is the program's last word)."""
    end = ends.ends.get(rank)
    recorded = rank in ends.exceptions or rank in ends.aborts
    return not recorded and rank in scan.exceptions and end is not None and end.signal is None


_CRASHES = frozenset({signal.SIGSEGV, signal.SIGBUS, signal.SIGILL, signal.SIGFPE})


def _crashed(ends: Ends, rank: int) -> bool:
    """The rank died of a crash signal: a pitfall seen earlier in the output (an MPI error
    the program handled) is not its cause, and is not named as such."""
    end = ends.ends.get(rank)
    return end is not None and end.signal in _CRASHES


def _container_failure(run: Run) -> str | None:
    """The container's ``/opt/ml/output/failure`` (what SageMaker puts in
    FailureReason), when it failed before any rank did (a requirements.txt that does not
    install, an entry point it refuses); one line, the first instance's that has one."""
    for host in run.shape.hosts:
        path = host_dirs(run.run_dir, host).failure
        with contextlib.suppress(OSError, UnicodeDecodeError):
            text = path.read_text(encoding="utf-8").split('\nCommand "', 1)[0]  # its argv
            text = " ".join(text.split())
            if text:
                return printable(say("container", host=host, text=text[:_FAILURE_CHARS]))
    return None


_FAILURE_CHARS = 500


def _init_ended(result: RunResult, run: Run) -> bool:
    """Isolated hosts: a process of an instance ended the instance's first process (PID 1)
    with a signal, and every process of the instance with it (as a container ends)."""
    ended = read_init_ends(run.record_dir)
    if not ended:
        return False
    first = ended[0]
    phrase = say("init-ended", signal=signal_text(first.signal), host=first.host)
    if first.rank is not None:
        result.failed_rank, result.failed_host = first.rank, run.host(first.rank)
        result.phrase = printable(phrase)
        result.reason = result.phrase.removeprefix("failed: ")
    else:
        who = f"pid {first.pid} ({first.command or 'ended since'})"
        result.reason = printable(f"{first.host}: {who} {phrase.removeprefix('failed: ')}")
    return True


def blame(result: RunResult, ends: Ends, scan: FailureScan, run: Run) -> None:
    """A run that failed: name the rank that failed first, its host and why."""
    result.exit_code, result.status = EXIT_FAILED, "Failed"
    room = next((p for p in scan.found if p.key == "no-room"), None)
    if room is not None:  # the ranks' records say only "exit code 1": say why
        result.reason = _pitfall_note(room, run, scan)
        return
    if _init_ended(result, run):
        return
    found = ends.blame(scan.signalled)
    if found is None:  # no record: a rank that never started, or one mpirun started itself
        first = scan.failed_rank()
        if first is not None:
            found = Blame(first, scan.phrase(first))
    if found is None:
        known = f" ({_pitfall_note(scan.found[0], run, scan)})" if scan.found else ""
        known = known or path_hint(run.shape.environment, run.code)
        result.reason = _container_failure(run) or say("mpirun", code=run.code, known=known)
        return
    phrase = _killed_everything(ends, found, run) or found.phrase
    if _replaced_excepthook(ends, scan, found.rank):
        phrase = f"failed: {scan.exceptions[found.rank]}"
    if scan.found and not _crashed(ends, found.rank):
        phrase = say("pitfall", phrase=phrase, note=_pitfall_note(scan.found[0], run, scan))
    result.failed_rank, result.failed_host = found.rank, run.host(found.rank)
    result.phrase = printable(phrase)
    result.reason = printable(phrase.removeprefix("failed: "))


def _world_rows(record_dir: Path) -> list[dict[str, object]]:
    rows = []
    for path in record_dir.glob("rank-*.world"):
        with contextlib.suppress(OSError, ValueError):
            row = json.loads(path.read_text(encoding="utf-8"))
            if isinstance(row, dict):
                rows.append(row)
    return rows


def world_line(run: Run, completed: bool) -> str | None:
    """The ranks' world against the job's N x n, from the ranks' records: a line when they
    differ (a size other than N x n; or, in a run that completed, an instance without a rank)."""
    rows = _world_rows(run.record_dir)
    sizes = {row.get("size") for row in rows} - {None}
    hosts = {str(row.get("host")) for row in rows}
    shape = run.shape
    missing = [h for h in shape.hosts if h not in hosts]
    if not rows or (sizes <= {shape.world_size} and not (completed and missing)):
        return None
    started = " or ".join(str(s) for s in sorted(sizes, key=str)) or str(len(rows))
    where = [h for h in shape.hosts if h in hosts] + sorted(hosts - set(shape.hosts))
    on = f"{where[0]} only" if len(where) == 1 else "on " + ", ".join(where)
    if missing:
        on += f"; none on {', '.join(missing)}"
    line = (
        f"the job asked for {shape.instances} x {shape.ppn} = {shape.world_size} ranks, "
        f"but the container started {started} ({on})"
    )
    if shape.custom_mpi_options:
        line += f": its mpirun options {shape.custom_mpi_options!r} change the world"
    return printable(line)


def check_world(result: RunResult, run: Run) -> None:
    """End a run whose world is not the job's N x n with one line (exit 1)."""
    if result.exit_code not in (EXIT_OK, EXIT_FAILED):
        return
    line = world_line(run, result.exit_code == EXIT_OK)
    if line is not None:
        result.exit_code, result.status = EXIT_FAILED, "Failed"
        result.failed_rank = result.failed_host = result.phrase = None
        result.reason = line


def check_started(result: RunResult, ends: Ends, run: Run, code: int | None) -> None:
    """End a run whose mpirun exited 0 though not every rank started (exit 1): no rank
    recorded its start or its end, so none of them ran."""
    if result.exit_code != EXIT_OK or code != 0:
        return
    world = run.shape.world_size
    started = len({*ends.pids, *ends.ends} & set(range(world)))
    if started < world:
        which = "no rank" if not started else f"only {started} of the ranks"
        result.exit_code, result.status = EXIT_FAILED, "Failed"
        result.reason = say("no-rank-started", which=which, started=started, world=world)


def failed(ends: Ends, code: int | None) -> bool:
    """mpirun ended non-zero, or a rank called MPI_Abort(0) (mpirun then ends with 0)."""
    return code != 0 or ends.aborted_zero is not None


def timed_out(result: RunResult, ends: Ends, run: Run, lost: list[str]) -> None:
    """Add to a timeout what the records tell: a rank that failed, hosts that lost eth0."""
    first = ends.blame()
    parts = [result.reason or ""]
    event = ends.event(first.rank) if first is not None else None
    if first is not None and event is not None:
        verb, colon, why = first.phrase.partition(":")
        when = f"{verb} {event.time - run.started:.1f} s in{colon}{why}"
        parts.append(
            f"rank {first.rank} ({run.host(first.rank)}) had {when}, and the run did not end"
        )
    parts += [f"{host} lost its network (eth0 has no route)" for host in lost]
    result.reason = "; ".join(p for p in parts if p)


def name_lost_network(result: RunResult, run: Run) -> None:
    """A run that ended by itself: add the hosts whose eth0 had no route when a rank there
    ended (the ranks' records say so), as a timeout's line does."""
    lost = [f"{host} lost its network (eth0 has no route)" for host in lost_network({}, run)]
    if lost and result.phrase is not None:
        result.phrase = "; ".join([result.phrase, *lost])
    if lost:
        result.reason = "; ".join([result.reason or "", *lost]).removeprefix("; ")


def stack_notes(ends: Ends, run: Run) -> dict[int, str]:
    """Why a rank shows no stack at a timeout, from its records."""
    notes: dict[int, str] = {}
    for rank in range(run.shape.world_size):
        event = ends.event(rank)
        when = f"{event.time - run.started:.1f} s in" if event is not None else ""
        if event is not None and rank in ends.orphans and rank not in ends.ends:
            notes[rank] = f"the process that started it was killed {when}, and the rank did "
            notes[rank] += "not answer SIGUSR1 in time"
        elif event is not None:
            notes[rank] = f"the rank had ended {when}: {event.phrase.removeprefix('failed: ')}"
        elif rank in ends.ends:
            notes[rank] = "the rank had ended normally (exit code 0)"
        elif rank not in ends.pids:
            notes[rank] = "the rank had not started Python"
        else:
            notes[rank] = "the rank did not answer SIGUSR1 in time (it may block signals)"
    return notes


def lost_network(pids: Mapping[int, int], run: Run) -> list[str]:
    """Emulated hosts (isolated mode) whose eth0 has no route: seen from a live rank there,
    or recorded by a rank's watcher there when the rank ended."""
    if run.mode != "hosts":
        return []
    unrouted = {run.host(e.rank) for e in read_ends(run.record_dir).values() if not e.eth0_route}
    lost: list[str] = []
    for host in run.shape.hosts:
        if host in unrouted:
            lost.append(host)
            continue
        ranks = [r for r in pids if run.host(r) == host]
        for rank in ranks:
            with contextlib.suppress(OSError):
                table = Path(f"/proc/{pids[rank]}/net/route").read_text()
                if not any(line.split()[:1] == ["eth0"] for line in table.splitlines()):
                    lost.append(host)
                break
    return lost


def path_hint(environment: Mapping[str, str], code: int | None) -> str:
    """Why mpirun exited 127 when the job's Environment sets PATH: the container's
    processes start with it, so mpirun, orted or python may not be found (as on SageMaker)."""
    if code != 127 or "PATH" not in environment:
        return ""
    return (
        f": PATH={printable(environment['PATH'])!r} from the job's environment (--env) replaces "
        "the container's PATH, and mpirun, orted or python is not on it "
        "(leave PATH out of --env, or keep the image's folders in it)"
    )
