"""Exact mode (``--exact``): each emulated instance reaches the others as the container does.

In exact mode every isolated instance runs a real sshd on port 22, configured as the Deep
Learning Containers configure it, with keys made for the run that live only in the
instances (:mod:`smmpi.runners.hosts.sshd`), and the container's mpirun line runs on
algo-1 with no launch agent: Open MPI starts ``orted`` on algo-k with ``ssh algo-k``,
as on SageMaker. The line's only remaining substitutions are this machine's Python for
the image's and the gethostname shim (:mod:`smmpi.runners.hosts.argv`).

Exact mode needs isolated hosts (Linux namespaces, Open MPI 4), root, and Debian's
``openssh-server``; :func:`check` refuses it in one line otherwise.
"""

from __future__ import annotations

import os

from smmpi.errors import BadInput
from smmpi.runners.hosts import sshd

FIELD = "--exact"
FIRST_LINE = (
    "smmpi: exact mode: a real sshd on port 22 of every instance, and the container's "
    "mpirun reaches the workers through ssh, as on SageMaker"
)


def unavailable_reason(instances: int = 1) -> str | None:
    """None when exact mode can run here; else one line saying what is missing."""
    from smmpi.runners.local import isolation

    if os.geteuid() != 0:
        return "exact mode runs sshd as the instances' root: run smmpi as root"
    missing = sshd.missing()
    if missing:
        return missing
    try:
        mode, why = isolation.choose("auto", instances)
    except BadInput as err:
        return str(err)
    if mode != "hosts":
        return f"exact mode needs isolated hosts ({why})"
    return None


def check(isolation_mode: str | None, instances: int) -> None:
    """Refuse ``--exact`` (BadInput, exit 2) where it cannot run, before anything is created."""
    if isolation_mode == "processes" or (
        isolation_mode is None and os.environ.get("SMMPI_ISOLATION") == "processes"
    ):
        raise BadInput(FIELD, True, "isolated hosts only (not --isolation processes)")
    reason = unavailable_reason(instances)
    if reason:
        raise BadInput(FIELD, True, f"a machine where it can run ({reason})")
