"""Pingpong between ranks 0 and 1 with mpi4py's buffer API: one-way time per size, in µs."""

import numpy as np
from mpi4py import MPI

comm = MPI.COMM_WORLD
rank = comm.Get_rank()
buf = np.zeros(4194304, dtype=np.uint8)
for n in (8, 65536, 4194304):
    reps = 40 if n >= 1048576 else (400 if n >= 65536 else 4000)
    view = buf[:n]
    for warm in range(2):
        comm.Barrier()
        t = MPI.Wtime()
        for _ in range(reps):
            if rank == 0:
                comm.Send(view, dest=1)
                comm.Recv(view, source=1)
            elif rank == 1:
                comm.Recv(view, source=0)
                comm.Send(view, dest=0)
        t = MPI.Wtime() - t
        if rank == 0 and warm == 1:
            print(n, f"{t / reps / 2 * 1e6:.3f}", flush=True)
