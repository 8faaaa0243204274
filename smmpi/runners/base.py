"""The runner seam: where a job goes (:class:`Runner`); a request run (:class:`RequestRunner`).

A :class:`Runner` takes the validated ``MPIJob`` (``start(job, **settings)``) and is found by
name in :mod:`smmpi.runners.registry`: ``plan``, ``local``, ``sagemaker``, ``slurm``.
A :class:`RequestRunner` receives the CreateTrainingJob request (as boto3 would send it) and
the job's ``sourcedir.tar.gz``. Both report what they do one line at a time through a
progress callback: no runner writes to a terminal itself. The caller (:mod:`smmpi.api`,
the CLI) decides where those lines go.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, Protocol, TypeVar

from smmpi.spec.limits import check_timeout

if TYPE_CHECKING:
    from smmpi.aws.types import Request
    from smmpi.spec import MPIJob

#: One line of progress ("smmpi: ..."), without its newline.
Progress = Callable[[str], None]


def silent(line: str) -> None:
    """The progress callback that drops every line."""


def writer(stream: IO[str]) -> Progress:
    """A progress callback writing each line to ``stream`` as it comes."""

    def write(line: str) -> None:
        stream.write(line + "\n")
        stream.flush()

    return write


@dataclass(frozen=True)
class RunOptions:
    """How to run: bounds, where output goes, and who hears about progress."""

    timeout: float | None = None
    log_dir: str | Path | None = None
    keep: bool = True
    region: str | None = None
    out: IO[str] | None = None  # the ranks' stdout (this process's by default)
    err: IO[str] | None = None  # the ranks' stderr (this process's by default)
    install_requirements: bool = False
    progress: Progress = silent
    env: Mapping[str, str] = field(default_factory=dict)  # this shell's variables for the ranks
    isolation: str | None = None  # auto | hosts | processes; None: $SMMPI_ISOLATION, else auto
    exact: bool = False  # sshd on every isolated instance, mpirun through ssh (local/exact.py)
    as_sagemaker: bool = False  # an SDK driver's per-node -np starts the ranks SageMaker would
    # MetricDefinitions applied to the ranks' output; None: the request's own (serve's worker
    # passes none: serve applies them to the job's log itself)
    metrics: tuple[dict[str, str], ...] | None = None
    # smmpi run: a throwaway run folder (kept only with ``keep``), not a kept local job
    throwaway: bool = False
    args: tuple[str, ...] = ()  # the program's arguments after the hyperparameters' (smmpi run)

    def __post_init__(self) -> None:
        check_timeout(self.timeout)  # the one check of a run's timeout, whoever runs it


class Outcome(Protocol):
    """How a run ended: a job name, SageMaker's status word, and the process exit code."""

    @property
    def name(self) -> str: ...

    @property
    def status(self) -> str: ...

    @property
    def exit_code(self) -> int: ...


class RequestRunner(Protocol):
    """Runs one request with its source (the local runner, SageMaker's)."""

    def run(self, request: Request, source: bytes, options: RunOptions) -> Outcome: ...


#: What a runner's ``start`` gives back (a plan, a local job, a submission, SLURM's state).
Result_co = TypeVar("Result_co", covariant=True)


class Runner(Protocol[Result_co]):
    """Where a job goes; every runner in :mod:`smmpi.runners.registry` is one.

    ``settings`` are the runner's own keywords (each runner's ``start`` names them); a
    keyword it does not take is a :class:`TypeError`, as a misspelt argument would be.
    """

    name: str

    def start(self, job: MPIJob, *args: Any, **settings: Any) -> Result_co: ...
