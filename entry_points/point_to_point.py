"""Point-to-point: rank 0 sends C ints to rank 1 (seed 004), then a Sendrecv ring over all ranks.

Buffer API (``Send``/``Recv``/``Sendrecv``) with datatypes that match the arrays.
"""

from __future__ import annotations

import sys
from typing import Any

import numpy as np
from mpi4py import MPI

from smmpi_runtime import check, report, require_world_size, runtime


def point_to_point(comm: Any) -> list[str]:
    rank, size = comm.Get_rank(), comm.Get_size()
    lines: list[str] = []
    # Seed 004's exchange: three C ints from rank 0 to rank 1.
    if rank == 0:
        comm.Send([np.array([0, 1, 2], dtype=np.intc), MPI.INT], dest=1, tag=11)
        lines.append("sent [0 1 2] to rank 1")
    elif rank == 1:
        got = np.empty(3, dtype=np.intc)
        comm.Recv([got, MPI.INT], source=0, tag=11)
        check(got.tolist() == [0, 1, 2], f"rank 1 received {got} from rank 0, expected [0 1 2]")
        lines.append(f"received {got} from rank 0")
    # A ring: each rank sends its rank (as float64) right and receives from the left.
    right, left = (rank + 1) % size, (rank - 1) % size
    send = np.full(4, rank, dtype=np.float64)
    recv = np.empty(4, dtype=np.float64)
    comm.Sendrecv(
        [send, MPI.DOUBLE],
        dest=right,
        sendtag=12,
        recvbuf=[recv, MPI.DOUBLE],
        source=left,
        recvtag=12,
    )
    check(bool(np.all(recv == left)), f"rank {rank} got {recv} from rank {left} in the ring")
    lines.append(f"ring: received {recv[0]:g} from rank {left}, sent {rank} to rank {right}")
    return lines


def main() -> int:
    comm = MPI.COMM_WORLD
    require_world_size(comm, minimum=2)
    rt = runtime(comm)
    if rt.rank == 0:
        print(f"point to point: {rt.size} processes on {len(rt.hosts)} host(s)", flush=True)
    report(comm, point_to_point(comm), title="point to point")
    return 0


if __name__ == "__main__":
    sys.exit(main())
