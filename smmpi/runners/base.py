"""The runner seam: ``run(request, source, options) -> Outcome``, progress through a callback.

A runner receives the CreateTrainingJob request (as boto3 would send it) and
the job's ``sourcedir.tar.gz``, and reports what it does one line at a time
through ``options.progress``: no runner writes to a terminal itself. The
caller (:mod:`smmpi.api`, the CLI) decides where those lines go.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, TYPE_CHECKING, Protocol

from smmpi.spec.limits import check_timeout

if TYPE_CHECKING:
    from smmpi.aws.types import Request

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


class Runner(Protocol):
    """Runs one request with its source; every runner under :mod:`smmpi.runners` is one."""

    def run(self, request: Request, source: bytes, options: RunOptions) -> Outcome: ...
