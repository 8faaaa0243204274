"""smmpi: run mpi4py programs on Amazon SageMaker as N instances x n processes."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

if TYPE_CHECKING:
    from smmpi.spec import MPIJob

__all__ = ["MPIJob", "__version__"]


def __getattr__(name: str) -> Any:
    # Lazy: `import smmpi` (and `smmpi --help`) must not pull in the SageMaker SDK.
    if name == "MPIJob":
        from smmpi.spec import MPIJob

        return MPIJob
    raise AttributeError(name)
