"""The entry point a request names, checked as the container would take it, before anything runs.

``smmpi submit`` and ``smmpi run`` check a program's name when they build the request
(:mod:`smmpi.catalog`); a request that comes whole (``run --from-job``, serve) is checked here:
- its name must be one the PyTorch images' toolkit accepts (T ``process.validate_entry_point``:
  the pattern, and no ``.`` or ``..`` segment);
- it must be Python (a ``.py`` file, or any name when the code has a ``setup.py``): the toolkit
  runs any other entry point as ``/bin/sh -c ./NAME ARGS`` under mpirun, which smmpi's model of
  the container does not; exact mode runs the toolkit itself, which decides.
"""

from __future__ import annotations

import io
import posixpath
import tarfile

from smmpi.catalog import check_container_entry
from smmpi.errors import BadInput

FIELD = "HyperParameters.sagemaker_program"


def _has_setup(source: bytes) -> bool:
    try:
        with tarfile.open(fileobj=io.BytesIO(source)) as tar:
            return any(posixpath.normpath(name) == "setup.py" for name in tar.getnames())
    except (tarfile.TarError, OSError, EOFError):
        return False  # the code's own check (extract) says what is wrong with it


def check_request_entry(script: str, source: bytes) -> None:
    """Refuse (BadInput, exit 2) an entry point the fast mode cannot run as the container would."""
    check_container_entry(script, FIELD)
    if not script.endswith(".py") and not _has_setup(source):
        raise BadInput(
            FIELD,
            script,
            "a Python file (.py), or any name with a setup.py in the code: the container runs "
            "other entry points with /bin/sh under mpirun, which only --exact runs here",
        )
