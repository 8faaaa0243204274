"""The world the SDK's MPI drivers start: ``-np`` per node, as SageMaker runs it.

ModelTrainer's ``mpi_driver.py`` and ``@remote(use_mpirun=True)``'s job script both run
``mpirun --host algo-1:n,...,algo-N:n -np n``: ``n`` is the processes per node, so Open MPI
fills algo-1's ``n`` slots and starts nothing on the other instances. On SageMaker such a job
completes with ``n`` ranks. smmpi says so in one line, with the fix for each API.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from smmpi.toolkit.hosts import host_name

#: The fix of each API that runs the driver's line: where a whole world's ``-np`` goes.
FIX = {
    "model-trainer": "for all {world}, add '-np {world}' to MPI(mpi_additional_options=...)",
    "remote": "@remote's job script always runs -np nproc_per_node (none of its settings "
    "starts all {world})",
}


def driver_np(distributed: Mapping[str, Any]) -> int | None:
    """The ``-np`` ModelTrainer's driver line ends with (``distributed.json``): its own
    (``process_count_per_node``, 1 when unset), unless ``mpi_additional_options`` give
    another (Open MPI takes the last). None: a value that is no count."""
    words = ["-np", str(distributed.get("process_count_per_node") or 1)]
    words += [str(w) for w in distributed.get("mpi_additional_options") or []]
    try:
        last = words[len(words) - 1 - words[::-1].index("-np") + 1]
        return int(last)
    except (IndexError, ValueError):
        return None


def started_hosts(np: int, ppn: int, instances: int) -> list[str]:
    """The instances ``-np np`` fills, slot by slot, with ``--host algo-k:ppn``."""
    count = min(instances, max(1, -(-np // max(1, ppn))))
    return [host_name(i) for i in range(count)]


def short_world(instances: int, ppn: int, np: int | None, api: str) -> str | None:
    """One line for a driver line whose ``-np`` starts fewer ranks than ``instances`` x
    ``ppn`` (None: the whole world, or a count not known)."""
    world = instances * ppn
    if np is None or np >= world:
        return None
    hosts = started_hosts(np, ppn, instances)
    on = f"{hosts[0]} only" if len(hosts) == 1 else "on " + ", ".join(hosts)
    fix = FIX.get(api, FIX["model-trainer"]).format(world=world)
    return (
        f"the SDK's MPI driver runs mpirun -np {np} (its -np is per node), so {np} of "
        f"{instances} x {ppn} = {world} ranks started ({on}), as on SageMaker; "
        f"{fix}"
    )
