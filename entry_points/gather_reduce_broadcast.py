"""Gather, average on rank 0, broadcast the average (seed 004), and the same with one Allreduce.

The prototype of averaging weights across workers. The average is float64, so
it travels as ``MPI.DOUBLE`` (seed 004 sent it as ``MPI.FLOAT`` and computed it
with ``np.float``, which NumPy 1.24 removed).
"""

from __future__ import annotations

import sys
from typing import Any

import numpy as np
from mpi4py import MPI

from smmpi_runtime import check, report, require_world_size, runtime


def gather_reduce_broadcast(comm: Any) -> list[str]:
    rank, size = comm.Get_rank(), comm.Get_size()
    sendbuf = np.full(10, rank, dtype=np.intc)
    recvbuf = np.empty((size, 10), dtype=np.intc) if rank == 0 else None
    comm.Gather(sendbuf, recvbuf, root=0)
    lines: list[str] = []
    if rank == 0:
        assert recvbuf is not None
        check(
            bool(np.array_equal(recvbuf[:, 0], np.arange(size))), f"gathered rows {recvbuf[:, 0]}"
        )
        avg = recvbuf.mean(axis=0, dtype=np.float64)
        lines.append(f"gathered {size} rows, first column {recvbuf[:, 0].tolist()}")
    else:
        avg = np.empty(10, dtype=np.float64)
    comm.Bcast([avg, MPI.DOUBLE], root=0)
    expected = (size - 1) / 2.0
    check(bool(np.all(avg == expected)), f"rank {rank} has avg {avg}, expected {expected}")
    # The same average in one collective, as data-parallel training does it.
    total = np.empty(10, dtype=np.float64)
    comm.Allreduce(sendbuf.astype(np.float64), total, op=MPI.SUM)
    check(bool(np.all(total / size == expected)), f"rank {rank} Allreduce mean {total / size}")
    lines.append(f"avg {avg[0]:g} (Gather+Bcast) = {total[0] / size:g} (Allreduce)")
    return lines


def main() -> int:
    comm = MPI.COMM_WORLD
    require_world_size(comm, minimum=2)
    rt = runtime(comm)
    if rt.rank == 0:
        print(
            f"gather-reduce-broadcast: {rt.size} processes on {len(rt.hosts)} host(s)", flush=True
        )
    report(comm, gather_reduce_broadcast(comm), title="gather, average, broadcast")
    return 0


if __name__ == "__main__":
    sys.exit(main())
