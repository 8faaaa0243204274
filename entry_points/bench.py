"""Pingpong latency/bandwidth and Allreduce time over message sizes, buffer API against pickle API.

Ranks 0 and 1 bounce a message back and forth (the others wait); then every
rank takes part in an Allreduce of the same sizes. Each measurement runs with
the buffer API (``Send``/``Recv``/``Allreduce`` on NumPy arrays, no copy into a
pickle) and with the pickle API (``send``/``recv``/``allreduce`` of the same
arrays), so the cost of serialisation shows next to the wire's own.

Rank 0 writes ``bench.json`` to the output dir, and ``bench.png`` when
matplotlib is installed. ``--sizes`` takes byte counts (``8,1024,4M``).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any

import numpy as np
from mpi4py import MPI

from smmpi_runtime import check, refuse, report, require_world_size, runtime

DEFAULT_SIZES = "8,64,512,4K,32K,256K,1M,4M"
TAG = 21


def parse_size(text: str) -> int:
    text = text.strip().upper().removesuffix("B").removesuffix("I")
    scale = {"K": 2**10, "M": 2**20, "G": 2**30}.get(text[-1:], 1)
    number = int(text[:-1] if scale > 1 else text)
    if number < 1:
        raise ValueError(f"message size must be >= 1 byte, got {text!r}")
    return number * scale


def repetitions(nbytes: int, budget_bytes: int, lo: int, hi: int) -> int:
    """Enough round trips to time small messages well, few enough for big ones."""
    return int(max(lo, min(hi, budget_bytes // max(nbytes, 1))))


def pingpong(comm: Any, nbytes: int, reps: int, use_buffer: bool) -> float:
    """Seconds per one-way trip between ranks 0 and 1 (half a round trip)."""
    rank = comm.Get_rank()
    msg = np.full(nbytes, rank + 1, dtype=np.uint8)
    got = np.empty(nbytes, dtype=np.uint8)
    received: Any = None
    comm.Barrier()
    t0 = MPI.Wtime()
    if rank in (0, 1):
        peer = 1 - rank
        for i in range(reps + 1):  # the first round trip warms up, untimed
            if rank == 0:
                if use_buffer:
                    comm.Send([msg, MPI.BYTE], dest=peer, tag=TAG)
                    comm.Recv([got, MPI.BYTE], source=peer, tag=TAG)
                else:
                    comm.send(msg, dest=peer, tag=TAG)
                    received = comm.recv(source=peer, tag=TAG)
            else:
                if use_buffer:
                    comm.Recv([got, MPI.BYTE], source=peer, tag=TAG)
                    comm.Send([msg, MPI.BYTE], dest=peer, tag=TAG)
                else:
                    received = comm.recv(source=peer, tag=TAG)
                    comm.send(msg, dest=peer, tag=TAG)
            if i == 0:
                t0 = MPI.Wtime()
        elapsed = MPI.Wtime() - t0
        data = got if use_buffer else received
        check(
            isinstance(data, np.ndarray) and data.size == nbytes and bool(np.all(data == peer + 1)),
            f"rank {rank}: pingpong of {nbytes} bytes delivered the wrong data",
        )
    else:
        elapsed = 0.0
    # Rank 0's clock is the measurement; every rank reports the same figure.
    one_way: float = comm.bcast(elapsed / (2 * reps), root=0)
    return one_way


def allreduce(comm: Any, nbytes: int, reps: int, use_buffer: bool) -> float:
    """Seconds per Allreduce(SUM) of ``nbytes`` of float64 (at least one element)."""
    size = comm.Get_size()
    n = max(1, nbytes // 8)
    mine = np.full(n, comm.Get_rank(), dtype=np.float64)
    out = np.empty(n, dtype=np.float64)
    result: Any = None
    t0 = MPI.Wtime()
    for i in range(reps + 1):
        if i == 1:
            comm.Barrier()
            t0 = MPI.Wtime()
        if use_buffer:
            comm.Allreduce([mine, MPI.DOUBLE], [out, MPI.DOUBLE], op=MPI.SUM)
        else:
            result = comm.allreduce(mine, op=MPI.SUM)
    elapsed = MPI.Wtime() - t0
    data = out if use_buffer else result
    check(bool(np.all(data == size * (size - 1) / 2)), f"allreduce of {nbytes} bytes is wrong")
    # The slowest rank decides how long a collective takes.
    return float(comm.allreduce(elapsed / reps, op=MPI.MAX))


def plot(results: dict[str, Any], path: str) -> bool:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    sizes = results["sizes"]
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4))
    for api, style in (("buffer", "o-"), ("pickle", "s--")):
        ax1.loglog(
            sizes,
            [b / 1e9 for b in results["pingpong"][api]["bandwidth_Bps"]],
            style,
            label=f"pingpong, {api} API",
        )
        ax2.loglog(
            sizes,
            [t * 1e6 for t in results["allreduce"][api]["seconds"]],
            style,
            label=f"Allreduce, {api} API",
        )
    ax1.set(xlabel="message size (bytes)", ylabel="bandwidth (GB/s)", title="pingpong ranks 0-1")
    ax2.set(
        xlabel="message size (bytes)",
        ylabel="time (µs)",
        title=f"Allreduce(SUM), {results['world_size']} ranks",
    )
    for ax in (ax1, ax2):
        ax.grid(True, which="both", alpha=0.3)
        ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return True


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument(
        "--sizes",
        default=DEFAULT_SIZES,
        help=f"comma-separated message sizes in bytes (default {DEFAULT_SIZES})",
    )
    parser.add_argument(
        "--budget", default="256M", help="bytes to move per size and API; sets the repetitions"
    )
    parser.add_argument("--max-reps", type=int, default=2000, help="repetitions per size at most")
    parser.add_argument("--min-reps", type=int, default=5, help="repetitions per size at least")
    parser.add_argument("--no-plot", action="store_true", help="skip bench.png")
    args, _ = parser.parse_known_args()
    comm = MPI.COMM_WORLD
    require_world_size(comm, minimum=2)
    rt = runtime(comm)
    try:
        sizes = [parse_size(s) for s in args.sizes.split(",") if s.strip()]
        budget = parse_size(args.budget)
    except ValueError as exc:
        return refuse(comm, f"bench.py: bad --sizes/--budget: {exc}")
    results: dict[str, Any] = {
        "world_size": rt.size,
        "hosts": rt.hosts,
        "sizes": sizes,
        "pingpong": {api: {"latency_s": [], "bandwidth_Bps": []} for api in ("buffer", "pickle")},
        "allreduce": {api: {"seconds": []} for api in ("buffer", "pickle")},
    }
    lines = []
    for nbytes in sizes:
        reps = repetitions(nbytes, budget, args.min_reps, args.max_reps)
        row = [f"{nbytes:>9} B x{reps:<5}"]
        for api in ("buffer", "pickle"):
            one_way = pingpong(comm, nbytes, reps, api == "buffer")
            results["pingpong"][api]["latency_s"].append(one_way)
            results["pingpong"][api]["bandwidth_Bps"].append(nbytes / one_way if one_way else 0)
            seconds = allreduce(comm, nbytes, max(1, reps // 4), api == "buffer")
            results["allreduce"][api]["seconds"].append(seconds)
            row.append(
                f"{api}: {one_way * 1e6:9.2f} us {nbytes / one_way / 1e9:8.3f} GB/s, "
                f"allreduce {seconds * 1e6:9.2f} us"
            )
        lines.append("  ".join(row))
    if rt.rank == 0:
        pp = results["pingpong"]
        ratios = [
            b / p if p else 0.0
            for b, p in zip(
                pp["buffer"]["bandwidth_Bps"], pp["pickle"]["bandwidth_Bps"], strict=True
            )
        ]
        results["buffer_over_pickle_bandwidth"] = ratios
        os.makedirs(rt.output_data_dir, exist_ok=True)
        json_path = os.path.join(rt.output_data_dir, "bench.json")
        with open(json_path, "w") as fh:
            json.dump(results, fh, indent=2)
        png_path = os.path.join(rt.output_data_dir, "bench.png")
        plotted = not args.no_plot and plot(results, png_path)
        print(
            "\n".join(
                [f"bench: pingpong ranks 0-1 (one way) and Allreduce over {rt.size} ranks", *lines]
            ),
            flush=True,
        )
        for nbytes, ratio in zip(sizes, ratios, strict=True):
            print(f"bench: {nbytes} B buffer/pickle bandwidth = {ratio:.2f}x", flush=True)
        print(
            f"bench: results -> {json_path}" + (f", plot -> {png_path}" if plotted else ""),
            flush=True,
        )
    report(comm, "verified every message and reduction", title="bench: checks")
    return 0


if __name__ == "__main__":
    sys.exit(main())
