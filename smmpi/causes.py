"""One table of failure causes: for each way a job fails, the words every place uses.

Each row is one cause with the phrase smmpi prints after ``rank R (algo-k)`` (or alone, when
no rank is to blame), the FailureReason SageMaker gives for it, and what the CloudWatch
summary of a SageMaker job's log can tell of it. Every place that names a failure reads it:
a local run's last line (:mod:`smmpi.supervision.verdict`), a SLURM job's failure
(:mod:`smmpi.runners.slurm.verdict`), the rank named from a log (:mod:`smmpi.mpi_output`,
:func:`smmpi.ops.cloudwatch.failure_summary`), and the FailureReason of ``describe.json``,
``smmpi serve`` and ``smmpi status`` (:mod:`smmpi.platform.failure_reason`). So one failure
reads the same everywhere.

It sits below every room that names a failure (the output parser and ``ops`` among them),
so each can read it.
"""

from __future__ import annotations

import signal
from dataclasses import dataclass

#: What SageMaker's FailureReason holds when the container's user script failed: the
#: toolkit's ``ExecuteUserScriptError`` (sagemaker_training/errors.py), after ``AlgorithmError``.
USER_SCRIPT = "AlgorithmError: ExecuteUserScriptError (ExitCode: mpirun's)"
#: The toolkit never started the script: what algo-1's ``/opt/ml/output/failure`` says.
TOOLKIT = "AlgorithmError: the toolkit's own error (algo-1's /opt/ml/output/failure)"
#: mpirun exits 137 when a rank died of SIGKILL, and the toolkit then adds its guess.
SIGKILLED = (
    'AlgorithmError: ExecuteUserScriptError, ExitCode 137, ExtraInfo "OutOfMemory: Process '
    'killed by SIGKILL (signal 9)"'
)


@dataclass(frozen=True)
class Cause:
    """One way a job fails.

    ``phrase``: smmpi's words, after ``rank R (algo-k) `` when ``ranked``, with ``{fields}``;
    ``sagemaker``: the FailureReason SageMaker gives (smmpi's line follows it, after
    ``smmpi: ``); ``log``: what a SageMaker job's CloudWatch log shows of it ("" when only the
    FailureReason can tell).
    """

    key: str
    what: str
    phrase: str
    sagemaker: str = USER_SCRIPT
    log: str = ""
    ranked: bool = True

    def say(self, **fields: object) -> str:
        return self.phrase.format(**fields)


CAUSES: tuple[Cause, ...] = (
    Cause(
        "exception",
        "an exception reached the top of a rank's program",
        "failed: {text}",
        log="the rank's traceback (its last line)",
    ),
    Cause(
        "exit-code",
        "a rank exited with a code other than 0 (sys.exit(N), os._exit(N))",
        "failed: exit code {code}",
        log="mpirun's 'Exit code:' note on the first process",
    ),
    Cause(
        "mpi-abort",
        "a rank called MPI_Abort(code), code not 0",
        "failed: exit code {code} (MPI_Abort)",
        log="mpirun's 'MPI_ABORT was invoked on rank R' notice",
    ),
    Cause(
        "mpi-abort-zero",
        "a rank called MPI_Abort(0): the others were killed though every code is 0",
        "called MPI_Abort(0)",
        log="mpirun's 'MPI_ABORT was invoked on rank R' notice",
    ),
    Cause(
        "signal",
        "a rank died of a signal (SIGSEGV, SIGABRT, ...)",
        "failed: killed by signal {signal}",
        log="mpirun's 'exited on signal N' note",
    ),
    Cause(
        "sigkill",
        "a rank died of SIGKILL that came first (the OOM killer, kill -9)",
        "failed: killed by signal 9 (SIGKILL) (out of memory? the kernel's OOM killer sends "
        "SIGKILL, as does kill -9)",
        sagemaker=SIGKILLED,
        log="mpirun's 'exited on signal 9' note",
    ),
    Cause(
        "oom-kill",
        "a rank died of SIGKILL and its memory cgroup counted an OOM kill meanwhile",
        "failed: killed by signal 9 (SIGKILL): out of memory (its memory cgroup counted an OOM "
        "kill)",
        sagemaker=SIGKILLED,
        log="mpirun's 'exited on signal 9' note",
    ),
    Cause(
        "unfinalized",
        "a rank exited 0 without MPI_Finalize: mpirun then stops the others",
        "failed: exited without MPI_Finalize (exit code 0)",
    ),
    Cause(
        "launcher-killed",
        "the process that started a rank ended while the rank ran",
        "failed: the process that started it (smmpi's rank watcher) {how} while the rank "
        "ran{where}",
    ),
    Cause(
        "killed-everything",
        "a rank killed every other process of the run (kill(-1))",
        "outlived every other process of the run: all of them, mpirun included, were killed "
        "by signal 9 (SIGKILL) while it ran{at}, as kill(-1) from a rank does",
    ),
    Cause(
        "init-ended",
        "a rank ended its instance's first process (PID 1), and the instance with it",
        "failed: ended its instance's init (PID 1) with signal {signal}; every process of "
        "{host} ended with it",
    ),
    Cause(
        "pitfall",
        "a known pitfall seen in the output (the pitfall table: smmpi.mpi_output.PITFALLS)",
        "{phrase} ({note})",
        log="the pitfall's own text, in any line",
    ),
    Cause(
        "abnormal",
        "mpirun's output names a rank, and not how it ended",
        "failed: exited abnormally",
        log="mpirun's notice naming the rank",
    ),
    Cause(
        "no-rank-started",
        "mpirun exited 0, but not every rank started",
        "mpirun exited 0 but {which} started ({started} of {world} ranks reported)",
        sagemaker="none on SageMaker (mpirun exited 0: the job completes); smmpi's runs fail",
        log="nothing: the job completed",
        ranked=False,
    ),
    Cause(
        "too-many-ranks",
        "the container's -np (sagemaker_mpi_num_processes) is more than its --host list's slots",
        "the job asks for {world} ranks ({field}) on {instances} x {ppn} = {slots} slots: the "
        "container's mpirun refuses to start them (Open MPI: not enough slots); ask for "
        "{slots} or fewer, or more instances or processes per host",
        log='Open MPI\'s "There are not enough slots available in the system"',
        ranked=False,
    ),
    Cause(
        "world",
        "the ranks' world is not the job's N x n (mpirun options that change it)",
        "the job asked for {asked}, but the container started {started} ({on}){why}",
        sagemaker="none on SageMaker: the job runs with the world it got; smmpi's runs fail",
        log="the ranks' own output (their world size)",
        ranked=False,
    ),
    Cause(
        "lost-network",
        "an isolated instance's eth0 lost its route (added to the line that names the failure)",
        "{host} lost its network (eth0 has no route)",
        sagemaker="the failure it caused (an instance's network is SageMaker's)",
        ranked=False,
    ),
    Cause(
        "mpirun",
        "mpirun failed, and no rank recorded why",
        "mpirun exited with code {code}{known}",
        log="mpirun's own lines",
        ranked=False,
    ),
    Cause(
        "container",
        "the container failed before any rank did (requirements.txt, an entry point it refuses)",
        "{host}'s /opt/ml/output/failure: {text}",
        sagemaker=TOOLKIT,
        log="the toolkit's error",
        ranked=False,
    ),
    Cause(
        "timeout",
        "the run did not end within its time (a hang)",
        "timed out after {seconds:g} s",
        sagemaker="none: MaxRuntimeInSeconds stops the job (Stopped, secondary status "
        "MaxRuntimeExceeded)",
        log="the job's status",
        ranked=False,
    ),
    Cause(
        "interrupted",
        "the user stopped the run (Ctrl-C, SIGTERM, smmpi stop)",
        "interrupted; every rank was stopped",
        sagemaker="none: the job is Stopped",
        log="the job's status",
        ranked=False,
    ),
)

_BY_KEY = {cause.key: cause for cause in CAUSES}


def cause(key: str) -> Cause:
    """The row of ``key`` (KeyError: no such cause)."""
    return _BY_KEY[key]


def say(key: str, **fields: object) -> str:
    """The phrase of cause ``key`` with ``fields`` filled in."""
    return _BY_KEY[key].say(**fields)


def signal_text(number: int) -> str:
    """``9 (SIGKILL)``: the number and its name."""
    try:
        return f"{number} ({signal.Signals(number).name})"
    except ValueError:
        return str(number)


def signalled(number: int, oom_kills: int | None = None) -> str:
    """The phrase for a rank that died of signal ``number``; a SIGKILL says whether its
    memory cgroup counted an OOM kill (``oom_kills``, None: unknown) while it ran."""
    if number != signal.SIGKILL:
        return say("signal", signal=signal_text(number))
    return say("oom-kill" if oom_kills else "sigkill")


def ended(code: int | None, sig: int | None, oom_kills: int | None = None) -> str:
    """``failed: ...`` for a rank that ended with exit code ``code`` or signal ``sig``."""
    return signalled(sig, oom_kills) if sig is not None else say("exit-code", code=code)


def ranked(rank: int, host: str | None, phrase: str) -> str:
    """``rank R (algo-k) <phrase>``: the one line that names a failed rank, in every mode and
    backend (``rank R <phrase>`` where no record says its host)."""
    return f"rank {rank} ({host}) {phrase}" if host else f"rank {rank} {phrase}"


# --- FailureReason: SageMaker's text, with smmpi's line after it ---------------------------

FAILURE_CHARS = 1024  # SageMaker's limit on FailureReason
LINE_MARK = "\nsmmpi: "  # smmpi's line, the last of a FailureReason
_LINE_CHARS = 400
_MESSAGE_CHARS = 300


def _shorten(text: str, room: int) -> str:
    return text if len(text) <= room else text[: max(0, room - 3)] + "..."


def failure_reason(
    error: str, exit_code: int | str, message: str, command: str, line: str | None, extra: str = ""
) -> str:
    """What SageMaker's FailureReason says when the container's toolkit failed with
    ``error`` (``ExecuteUserScriptError``: the user's script; sagemaker_training/errors.py),
    then smmpi's line naming rank, host and cause (:func:`summary` reads it back).

    The command is shortened (``...``) so that the whole fits SageMaker's 1024 characters
    with smmpi's line whole. ``extra``: the toolkit's ``ExtraInfo "..."`` line, if any.
    """
    head = (
        f"AlgorithmError: {error}:\nExitCode {exit_code}\n"
        f'ErrorMessage "{_shorten(message, _MESSAGE_CHARS)}"\n{extra}Command "'
    )
    tail = f'", exit code: {exit_code}' + ((LINE_MARK + line)[:_LINE_CHARS] if line else "")
    return head + _shorten(command, FAILURE_CHARS - len(head) - len(tail)) + tail


def with_line(text: str, line: str | None) -> str:
    """A program's own failure text, then smmpi's line (:func:`summary` reads it back), in
    SageMaker's 1024 characters: the program's text is cut, smmpi's line kept."""
    tail = (LINE_MARK + line)[:_LINE_CHARS] if line else ""
    return text[: FAILURE_CHARS - len(tail)] + tail


def summary(reason: str | None) -> str | None:
    """A FailureReason in one line (``smmpi status``, the CloudWatch summary): smmpi's line
    when it carries one, else its first line, with the toolkit's exit code when it has one."""
    if not reason or not reason.strip():
        return None
    if LINE_MARK in reason:
        return reason.rsplit(LINE_MARK, 1)[1].splitlines()[0]
    lines = [ln.strip() for ln in reason.strip().splitlines() if ln.strip()]
    if lines[0].endswith(":") and len(lines) > 1:
        return f"{lines[0]} {lines[1]}"
    return lines[0]


def own_lines(reason: str, line: str | None = None) -> str:
    """What a job's end shows of its FailureReason: smmpi's ``line`` whole (the reason may
    hold it shortened) or the reason's own, and any line after it (a folder refused)."""
    own = reason.rsplit(LINE_MARK, 1)[1] if LINE_MARK in reason else reason
    if not line:
        return own
    after = own.split("\n", 1)[1:] if LINE_MARK in reason else []
    return "\n".join([line, *after])
