"""Alltoall from point-to-point calls that cannot deadlock at any size; --unsafe: one that does.

Every rank has one block for every other rank. The naive version sends all its
blocks with blocking ``Send`` before it receives anything; that works only while
MPI can buffer a message eagerly (a few KiB), and with large blocks every rank
waits in ``Send`` for a receive nobody posts: a deadlock, which smmpi's
``--timeout`` catches and reports with stacks.

The safe versions pair each send with its receive so that progress never
depends on buffering: ``sendrecv`` runs a pairwise exchange schedule (step k:
send to rank+k, receive from rank-k, in one ``Sendrecv``), and ``isend`` posts
every send non-blocking, receives, then waits (the challenge's part 3).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import Any

import numpy as np
from mpi4py import MPI

from smmpi_runtime import check, refuse, report, require_world_size, runtime

Blocks = list[np.ndarray]
TAG = 7


def alltoall_sendrecv(comm: Any, blocks: Blocks) -> Blocks:
    rank, size = comm.Get_rank(), comm.Get_size()
    out = [np.empty_like(b) for b in blocks]
    out[rank][...] = blocks[rank]
    for step in range(1, size):
        dest, source = (rank + step) % size, (rank - step) % size
        comm.Sendrecv(
            [blocks[dest], MPI.INT64_T],
            dest=dest,
            sendtag=TAG,
            recvbuf=[out[source], MPI.INT64_T],
            source=source,
            recvtag=TAG,
        )
    return out


def alltoall_isend(comm: Any, blocks: Blocks) -> Blocks:
    rank, size = comm.Get_rank(), comm.Get_size()
    out = [np.empty_like(b) for b in blocks]
    out[rank][...] = blocks[rank]
    requests = [
        comm.Isend([blocks[dest], MPI.INT64_T], dest=dest, tag=TAG)
        for dest in range(size)
        if dest != rank
    ]
    for source in range(size):
        if source != rank:
            comm.Recv([out[source], MPI.INT64_T], source=source, tag=TAG)
    MPI.Request.Waitall(requests)
    return out


def alltoall_unsafe(comm: Any, blocks: Blocks) -> Blocks:
    """Deadlocks once blocks are too large to be sent eagerly. Kept to show why."""
    rank, size = comm.Get_rank(), comm.Get_size()
    out = [np.empty_like(b) for b in blocks]
    out[rank][...] = blocks[rank]
    for dest in range(size):
        if dest != rank:
            comm.Send([blocks[dest], MPI.INT64_T], dest=dest, tag=TAG)
    for source in range(size):
        if source != rank:
            comm.Recv([out[source], MPI.INT64_T], source=source, tag=TAG)
    return out


METHODS: dict[str, Callable[[Any, Blocks], Blocks]] = {
    "sendrecv": alltoall_sendrecv,
    "isend": alltoall_isend,
    "unsafe": alltoall_unsafe,
}


def run(comm: Any, method: str, n: int) -> list[str]:
    rank, size = comm.Get_rank(), comm.Get_size()
    # Seed 003's payload: block i of rank r holds r*10 + i, and rank r must
    # receive block r of every rank i, that is i*10 + r.
    blocks = [np.full(n, rank * 10 + i, dtype=np.int64) for i in range(size)]
    comm.Barrier()
    t0 = MPI.Wtime()
    got = METHODS[method](comm, blocks)
    seconds = MPI.Wtime() - t0
    for source, block in enumerate(got):
        check(
            block.shape == (n,) and bool(np.all(block == source * 10 + rank)),
            f"rank {rank}: block from rank {source} is wrong ({block[:3]}...)",
        )
    # The library's own Alltoall must agree.
    reference = np.empty(size * n, dtype=np.int64)
    comm.Alltoall([np.concatenate(blocks), MPI.INT64_T], [reference, MPI.INT64_T])
    check(
        bool(np.array_equal(reference, np.concatenate(got))),
        f"rank {rank}: {method} differs from MPI Alltoall",
    )
    mib = size * n * 8 / 2**20
    return [f"{method}: received {[int(b[0]) for b in got]} ({mib:.2f} MiB) in {seconds:.4f} s"]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument(
        "--size",
        type=int,
        default=10_000,
        help="int64 elements per block (seed 003's scaling_factor)",
    )
    parser.add_argument(
        "--method",
        choices=["sendrecv", "isend"],
        default=None,
        help="safe method to run (default: both)",
    )
    parser.add_argument(
        "--unsafe",
        action="store_true",
        help="run the naive Send-then-Recv version, which deadlocks at large sizes",
    )
    args, _ = parser.parse_known_args()
    comm = MPI.COMM_WORLD
    require_world_size(comm, minimum=2)
    rt = runtime(comm)
    if args.size < 1:
        return refuse(comm, f"alltoall.py: --size must be >= 1, got {args.size}")
    methods = ["unsafe"] if args.unsafe else [args.method] if args.method else ["sendrecv", "isend"]
    if rt.rank == 0:
        print(
            f"alltoall: {rt.size} ranks, blocks of {args.size} int64 "
            f"({args.size * 8} bytes), methods {', '.join(methods)}",
            flush=True,
        )
    for method in methods:
        report(comm, run(comm, method, args.size), title=f"alltoall by {method}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
