"""Run on every rank of an isolated job: prints one line of what this rank sees, as JSON."""

import json
import os
import socket
import sys

import numpy as np
from mpi4py import MPI


def eth0_bytes() -> int:
    stats = "/sys/class/net/eth0/statistics/"
    with open(stats + "tx_bytes") as tx, open(stats + "rx_bytes") as rx:
        return int(tx.read()) + int(rx.read())


world = MPI.COMM_WORLD
before = eth0_bytes()
data = np.full(1 << 20, world.rank, dtype=np.float64)
total = np.empty_like(data)
world.Allreduce(data, total)
world.Barrier()
moved = eth0_bytes() - before
name = f"/opt/ml/model/written-by-rank-{world.rank}.txt"
with open(name, "w") as f:
    f.write(socket.gethostname())
seen = {
    "rank": world.rank,
    "size": world.size,
    "hostname": socket.gethostname(),
    "processor": MPI.Get_processor_name(),
    "local_rank": int(os.environ["OMPI_COMM_WORLD_LOCAL_RANK"]),
    "local_size": int(os.environ["OMPI_COMM_WORLD_LOCAL_SIZE"]),
    "shared_size": world.Split_type(MPI.COMM_TYPE_SHARED).size,
    "algo-2": socket.gethostbyname("algo-2"),
    "sum": float(total[0]),
    "eth0_bytes": moved,
    "library": MPI.Get_library_version().split(",")[0],
    "argv": sys.argv[1:],
    "yield_when_idle": os.environ.get("OMPI_MCA_mpi_yield_when_idle"),
}
print(json.dumps(seen), flush=True)
