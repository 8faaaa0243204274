"""Broadcast: rank 0 sends arange(10) as C ints to every rank with Bcast (seed 004)."""

from __future__ import annotations

import sys
from typing import Any

import numpy as np
from mpi4py import MPI

from smmpi_runtime import check, report, require_world_size, runtime


def broadcast(comm: Any) -> list[str]:
    rank = comm.Get_rank()
    expected = np.arange(10, dtype=np.intc)
    data = expected.copy() if rank == 0 else np.empty(10, dtype=np.intc)
    comm.Bcast([data, MPI.INT], root=0)
    check(bool(np.array_equal(data, expected)), f"rank {rank} got {data} from Bcast")
    return [f"data {data}"]


def main() -> int:
    comm = MPI.COMM_WORLD
    require_world_size(comm, minimum=2)
    rt = runtime(comm)
    if rt.rank == 0:
        print(f"broadcast: {rt.size} processes on {len(rt.hosts)} host(s)", flush=True)
    report(comm, broadcast(comm), title="broadcast from rank 0")
    return 0


if __name__ == "__main__":
    sys.exit(main())
