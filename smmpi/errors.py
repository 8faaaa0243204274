"""Errors users see as one line."""

from __future__ import annotations


class SmmpiError(Exception):
    """Base of smmpi's own errors; the CLI prints ``str(err)`` as one line."""

    exit_code = 1


class BadInput(SmmpiError, ValueError):
    """Input rejected before anything ran or was created (exit code 2)."""

    exit_code = 2

    def __init__(self, field: str, value: object, allowed: str) -> None:
        self.field, self.value, self.allowed = field, value, allowed
        super().__init__(f"invalid {field}: {value!r}; allowed: {allowed}")

    def __reduce__(self) -> tuple[type[BadInput], tuple[str, object, str]]:
        """Whole through pickle (from the kept SDK's builds: smmpi/sdk/warm.py)."""
        return type(self), (self.field, self.value, self.allowed)


class MPINotFound(SmmpiError):
    """No usable mpirun or mpi4py (exit code 2: nothing ran)."""

    exit_code = 2


class TimedOut(SmmpiError):
    """The run's ``--timeout`` ended before the work it bounds (exit code 124)."""

    exit_code = 124


class MissingPackage(SmmpiError):
    """An optional package a command needs is not installed (exit code 2: nothing ran)."""

    exit_code = 2
