"""Seed 001's master/worker sum, correct: Scatterv an uneven split, sum locally, Reduce to rank 0.

Seed 001 splits the data with ``len(data) // size`` and loses the remainder
when the length is not a multiple of the world size. ``Scatterv`` takes explicit
counts and displacements, so every element is summed exactly once at any size.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

import numpy as np
from mpi4py import MPI

from smmpi_runtime import check, refuse, report, require_world_size, runtime


def split(n: int, size: int) -> tuple[np.ndarray, np.ndarray]:
    """Counts and displacements: the first ``n % size`` ranks get one element more."""
    counts = np.full(size, n // size, dtype=np.int64)
    counts[: n % size] += 1
    displs = np.zeros(size, dtype=np.int64)
    displs[1:] = np.cumsum(counts)[:-1]
    return counts, displs


def data_parallel_sum(comm: Any, n: int) -> list[str]:
    rank, size = comm.Get_rank(), comm.Get_size()
    counts, displs = split(n, size)
    data = np.arange(n, dtype=np.int64) if rank == 0 else None
    local = np.empty(int(counts[rank]), dtype=np.int64)
    t0 = MPI.Wtime()
    sendbuf = [data, (counts, displs), MPI.INT64_T] if data is not None else None
    comm.Scatterv(sendbuf, [local, MPI.INT64_T], root=0)
    start = int(displs[rank])
    check(
        bool(np.array_equal(local, np.arange(start, start + counts[rank]))),
        f"rank {rank} received the wrong slice (expected {start}..{start + counts[rank]})",
    )
    partial = np.array([local.sum()], dtype=np.int64)
    total = np.zeros(1, dtype=np.int64) if rank == 0 else None
    comm.Reduce(
        [partial, MPI.INT64_T],
        [total, MPI.INT64_T] if total is not None else None,
        op=MPI.SUM,
        root=0,
    )
    seconds = MPI.Wtime() - t0
    lines = [f"summed {counts[rank]} elements [{start}, {start + counts[rank]}): {partial[0]}"]
    if total is not None:
        expected = n * (n - 1) // 2
        check(int(total[0]) == expected, f"total {total[0]} != {expected}")
        lines.append(f"total of 0..{n - 1} = {total[0]} (expected {expected}) in {seconds:.4f} s")
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument(
        "--size",
        type=int,
        default=1_000_003,
        help="number of elements to sum (any size, need not divide evenly)",
    )
    args, _ = parser.parse_known_args()
    comm = MPI.COMM_WORLD
    require_world_size(comm, minimum=1)
    rt = runtime(comm)
    if args.size < 0:
        return refuse(comm, f"data_parallel_sum.py: --size must be >= 0, got {args.size}")
    if rt.rank == 0:
        counts, _ = split(args.size, rt.size)
        print(
            f"data parallel sum: {args.size} elements over {rt.size} ranks "
            f"(chunks of {counts.min()}..{counts.max()})",
            flush=True,
        )
    report(comm, data_parallel_sum(comm, args.size), title="Scatterv + Reduce")
    return 0


if __name__ == "__main__":
    sys.exit(main())
