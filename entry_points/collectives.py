"""Seeds 001/003's collectives in the pickle and the buffer API, and user-defined reductions.

bcast, scatter, gather, reduce, allreduce and alltoall, each both ways.

The pickle API (lower-case methods) moves any Python object and is what the
seeds start with; the buffer API (capitalised methods) moves NumPy arrays with
an explicit datatype and no serialisation, which is what real workloads should
use. Seed 003's dict reduce needs an operation MPI does not have, so it is
registered with ``MPI.Op.Create``, as is an element-wise buffer reduction.
"""

from __future__ import annotations

import sys
from typing import Any

import numpy as np
from mpi4py import MPI

from smmpi_runtime import check, report, require_world_size, runtime


def pickle_collectives(comm: Any) -> list[str]:
    rank, size = comm.Get_rank(), comm.Get_size()
    ranks_sum = size * (size - 1) // 2
    config = comm.bcast({"base": 100, "name": "smmpi"} if rank == 0 else None, root=0)
    check(config == {"base": 100, "name": "smmpi"}, f"rank {rank}: bcast gave {config!r}")
    base = int(config["base"])

    gathered = comm.gather({"rank": rank, "square": rank * rank}, root=0)
    if rank == 0:
        check(
            gathered is not None and [d["rank"] for d in gathered] == list(range(size)),
            f"gather gave {gathered!r}",
        )
    else:
        check(gathered is None, f"rank {rank}: gather returned {gathered!r} off the root")

    # Scatter back what was gathered, transformed, as seed 003 does.
    parts = (
        [{"rank": d["rank"], "value": base + d["square"]} for d in gathered] if gathered else None
    )
    mine = comm.scatter(parts, root=0)
    check(
        mine == {"rank": rank, "value": base + rank * rank}, f"rank {rank}: scatter gave {mine!r}"
    )

    total = comm.reduce(rank + base, op=MPI.SUM, root=0)
    if rank == 0:
        check(total == ranks_sum + size * base, f"reduce gave {total}")
    everywhere = comm.allreduce(rank, op=MPI.MAX)
    check(everywhere == size - 1, f"rank {rank}: allreduce(MAX) gave {everywhere}")

    # alltoall: item j of rank i goes to rank j, which receives (i, j) at position i.
    received = comm.alltoall([(rank, dest) for dest in range(size)])
    check(received == [(src, rank) for src in range(size)], f"rank {rank}: alltoall {received!r}")
    return [
        f"pickle: bcast {config['name']!r}, scatter {mine['value']}, "
        f"reduce {total if rank == 0 else '-'}, allreduce(MAX) {everywhere}, "
        f"alltoall from {[src for src, _ in received]}"
    ]


def buffer_collectives(comm: Any, n: int = 1000) -> list[str]:
    rank, size = comm.Get_rank(), comm.Get_size()
    arr = np.arange(n, dtype=np.float64) if rank == 0 else np.empty(n, dtype=np.float64)
    comm.Bcast([arr, MPI.DOUBLE], root=0)
    check(bool(np.array_equal(arr, np.arange(n, dtype=np.float64))), f"rank {rank}: Bcast")

    # Scatter one row per rank, transform it, Gather the rows back.
    table = np.arange(size * n, dtype=np.int64).reshape(size, n) if rank == 0 else None
    row = np.empty(n, dtype=np.int64)
    comm.Scatter([table, MPI.INT64_T] if table is not None else None, [row, MPI.INT64_T], root=0)
    check(bool(np.array_equal(row, np.arange(rank * n, (rank + 1) * n))), f"rank {rank}: Scatter")
    row *= 2
    back = np.empty((size, n), dtype=np.int64) if rank == 0 else None
    comm.Gather([row, MPI.INT64_T], [back, MPI.INT64_T] if back is not None else None, root=0)
    if back is not None:
        check(bool(np.array_equal(back, 2 * np.arange(size * n).reshape(size, n))), "Gather")

    # Reduce with MAX (seed 003): rank + arr, the maximum is arr + size - 1.
    top = np.zeros(n, dtype=np.float64) if rank == 0 else None
    comm.Reduce(
        [rank + arr, MPI.DOUBLE], [top, MPI.DOUBLE] if top is not None else None, op=MPI.MAX, root=0
    )
    if top is not None:
        check(bool(np.array_equal(top, arr + size - 1)), "Reduce(MAX)")
    summed = np.empty(n, dtype=np.float64)
    comm.Allreduce(
        [np.full(n, rank, dtype=np.float64), MPI.DOUBLE], [summed, MPI.DOUBLE], op=MPI.SUM
    )
    check(bool(np.all(summed == size * (size - 1) / 2)), f"rank {rank}: Allreduce(SUM)")

    # Alltoall: block j of rank i holds 10*i + j and lands as block i on rank j.
    send = np.repeat(10 * rank + np.arange(size, dtype=np.int32), 4)
    recv = np.empty_like(send)
    comm.Alltoall([send, MPI.INT32_T], [recv, MPI.INT32_T])
    check(
        bool(np.array_equal(recv, np.repeat(10 * np.arange(size) + rank, 4))),
        f"rank {rank}: Alltoall gave {recv[::4]}",
    )
    return [
        f"buffer: Bcast {n} doubles, Scatter/Gather rows of {n} int64, Reduce(MAX) "
        f"{top[-1] if top is not None else '-'}, Allreduce(SUM) {summed[0]:g}, "
        f"Alltoall {recv[::4].tolist()}"
    ]


def _dict_or_absmax(inbuf: Any, inoutbuf: Any, datatype: Any = None) -> Any:
    """One user function for both APIs, as mpi4py calls it.

    With the pickle API it gets two objects and returns their combination
    (seed 003's ``{'v': a + b}``); with the buffer API it gets raw buffers and
    must combine into ``inoutbuf`` in place (here: keep the larger magnitude).
    """
    if isinstance(inbuf, dict):
        return {"v": inbuf["v"] + inoutbuf["v"]}
    x = np.frombuffer(inbuf, dtype=np.float64)
    y = np.frombuffer(inoutbuf, dtype=np.float64)
    np.copyto(y, np.where(np.abs(x) > np.abs(y), x, y))
    return None


def user_defined(comm: Any) -> list[str]:
    rank, size = comm.Get_rank(), comm.Get_size()
    op = MPI.Op.Create(_dict_or_absmax, commute=True)
    try:
        reduced = comm.reduce({"v": rank}, op=op, root=0)
        if rank == 0:
            check(reduced == {"v": size * (size - 1) // 2}, f"dict reduce gave {reduced!r}")
        everywhere = comm.allreduce({"v": rank}, op=op)
        check(everywhere == {"v": size * (size - 1) // 2}, f"rank {rank}: dict allreduce")
        # Alternating signs: the largest magnitude is rank size-1 with its sign.
        mine = np.array([rank * (-1.0) ** rank, -float(rank)], dtype=np.float64)
        out = np.empty(2, dtype=np.float64)
        comm.Allreduce([mine, MPI.DOUBLE], [out, MPI.DOUBLE], op=op)
        last = size - 1
        check(
            out.tolist() == [last * (-1.0) ** last, -float(last)],
            f"rank {rank}: abs-max Allreduce gave {out}",
        )
    finally:
        op.Free()
    return [f"Op.Create: dict allreduce {everywhere}, abs-max Allreduce {out.tolist()}"]


def main() -> int:
    comm = MPI.COMM_WORLD
    require_world_size(comm, minimum=2)
    rt = runtime(comm)
    if rt.rank == 0:
        print(f"collectives: {rt.size} processes on {len(rt.hosts)} host(s)", flush=True)
    report(comm, pickle_collectives(comm), title="pickle API (any Python object)")
    report(comm, buffer_collectives(comm), title="buffer API (NumPy arrays, typed)")
    report(comm, user_defined(comm), title="user-defined reductions (MPI.Op.Create)")
    if rt.rank == 0:
        print(f"collectives: all {rt.size} ranks verified their results", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
