"""How a local run ended, in one line: who failed and why, from the run's own records.

The same classification in both modes (:mod:`.exits`): an exception, a call of
``MPI_Abort`` (``MPI_Abort(0)`` too: the others were killed), an exit code, a
signal, or a rank whose launcher was killed under it. Open MPI's text is read
only where no record exists, and for known failures (``FailureScan.found``).
"""

from __future__ import annotations

import contextlib
import signal
from collections.abc import Mapping

from smmpi.causes import say, signal_text
from smmpi.mpi_output import FailureScan, Pitfall, printable
from smmpi.supervision.exits import Blame, Ends
from smmpi.supervision.oom import with_oom_kills
from smmpi.supervision.rank_records import read_init_ends
from smmpi.supervision.result import EXIT_FAILED, Run, RunResult
from smmpi.supervision.room import full_line
from smmpi.toolkit.hosts import host_dirs


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


def crashed(ends: Ends, rank: int) -> bool:
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
    ends = with_oom_kills(ends, run.oom_kills)  # a SIGKILL: the OOM killer's?
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
    if scan.found and not crashed(ends, found.rank):
        phrase = say("pitfall", phrase=phrase, note=_pitfall_note(scan.found[0], run, scan))
    result.failed_rank, result.failed_host = found.rank, run.host(found.rank)
    result.phrase = printable(phrase)
    result.reason = printable(phrase.removeprefix("failed: "))


def failed(ends: Ends, code: int | None) -> bool:
    """mpirun ended non-zero, or a rank called MPI_Abort(0) (mpirun then ends with 0)."""
    return code != 0 or ends.aborted_zero is not None


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
