"""Seed 004's MPI demo, correct: point-to-point, broadcast, then gather-average-broadcast.

Each rank checks its own results; rank 0 prints one ordered summary per step.
"""

from __future__ import annotations

import sys

from mpi4py import MPI

from broadcast import broadcast
from gather_reduce_broadcast import gather_reduce_broadcast
from point_to_point import point_to_point
from smmpi_runtime import report, require_world_size, runtime


def main() -> int:
    comm = MPI.COMM_WORLD
    require_world_size(comm, minimum=2)
    rt = runtime(comm)
    if rt.rank == 0:
        print(
            f"Number of MPI processes that will talk to each other: {rt.size} "
            f"({len(rt.hosts)} host(s): {', '.join(rt.hosts)})",
            flush=True,
        )
    report(comm, point_to_point(comm), title="point to point")
    report(comm, broadcast(comm), title="broadcast from rank 0")
    report(comm, gather_reduce_broadcast(comm), title="gather, average, broadcast")
    if rt.rank == 0:
        print(f"demo: all {rt.size} ranks verified their results", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
