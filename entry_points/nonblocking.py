"""Non-blocking (seed 003): an Isend/Irecv ring, and Igather against Gather with late ranks.

When ranks reach a collective at different times (uneven work, a slow host),
a blocking ``Gather`` per step makes everyone wait for the slowest rank at every
step, so the delays add up; posting ``Igather`` and waiting once at the end lets
the delays overlap. Seed 003 measures this with one rank sleeping per step; so
does this program (``--delay`` seconds, ``--size`` float32 elements per rank).
"""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any

import numpy as np
from mpi4py import MPI

from smmpi_runtime import check, refuse, report, require_world_size, runtime


def ring(comm: Any, n: int) -> list[str]:
    """Post the receive and the send, then wait: no ordering can deadlock."""
    rank, size = comm.Get_rank(), comm.Get_size()
    right, left = (rank + 1) % size, (rank - 1) % size
    send = np.full(n, rank, dtype=np.float32)
    recv = np.empty(n, dtype=np.float32)
    requests = [
        comm.Irecv([recv, MPI.FLOAT], source=left, tag=3),
        comm.Isend([send, MPI.FLOAT], dest=right, tag=3),
    ]
    MPI.Request.Waitall(requests)
    check(bool(np.all(recv == left)), f"rank {rank}: Irecv from rank {left} gave {recv[:3]}")
    return [f"Isend/Irecv ring: got {n} floats = {recv[0]:g} from rank {left}"]


def staggered_gather(comm: Any, nonblocking: bool, n: int, delay: float) -> tuple[float, str]:
    """Seed 003's test: at step i rank i is late by ``delay``; gather step i's arrays."""
    rank, size = comm.Get_rank(), comm.Get_size()
    result = np.zeros((size, size, n), dtype=np.float32) if rank == 0 else None
    sends = [np.full(n, rank * i, dtype=np.float32) for i in range(size)]
    comm.Barrier()
    start = MPI.Wtime()
    requests = []
    for i in range(size):
        if rank == i:
            time.sleep(delay)
        recvbuf = [result[i], MPI.FLOAT] if result is not None else None
        if nonblocking:
            requests.append(comm.Igather([sends[i], MPI.FLOAT], recvbuf, root=0))
        else:
            comm.Gather([sends[i], MPI.FLOAT], recvbuf, root=0)
    MPI.Request.Waitall(requests)
    seconds = MPI.Wtime() - start
    if result is not None:
        ranks = np.arange(size, dtype=np.float32)
        expected = np.outer(ranks, ranks)[:, :, None]  # step i, rank r sent r*i
        check(
            bool(np.all(result == expected)),
            f"{'Igather' if nonblocking else 'Gather'} gathered the wrong values",
        )
    name = "Igather" if nonblocking else "Gather"
    return seconds, f"{name}: {size} steps, one late rank each ({delay:g} s), {seconds:.3f} s"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--size", type=int, default=10_000, help="float32 elements per message")
    parser.add_argument(
        "--delay", type=float, default=0.25, help="seconds the late rank of each step sleeps"
    )
    args, _ = parser.parse_known_args()
    comm = MPI.COMM_WORLD
    require_world_size(comm, minimum=2)
    rt = runtime(comm)
    if args.size < 1 or args.delay < 0:
        return refuse(comm, "nonblocking.py: needs --size >= 1 and --delay >= 0")
    if rt.rank == 0:
        print(f"nonblocking: {rt.size} ranks, {args.size} float32 per message", flush=True)
    report(comm, ring(comm, args.size), title="Isend/Irecv")
    t_nb, line_nb = staggered_gather(comm, True, args.size, args.delay)
    t_b, line_b = staggered_gather(comm, False, args.size, args.delay)
    report(comm, [line_nb, line_b], title="Igather against Gather, staggered arrivals")
    if rt.rank == 0:
        print(
            f"nonblocking: Igather {t_nb:.3f} s, Gather {t_b:.3f} s "
            f"(blocking/non-blocking = {t_b / max(t_nb, 1e-9):.2f}x)",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
