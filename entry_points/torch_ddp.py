"""PyTorch DDP (gloo, CPU) on scikit-learn's digits, torch.distributed set up from the MPI world.

``torch_init(comm)`` takes rank and world size from MPI and broadcasts the
master address and a free port from rank 0, so the same script runs under
plain ``mpirun``, ``smmpi run`` and SageMaker's MPI launcher without
``torchrun`` or hard-coded ports. Each rank trains on its own shard of the
training set; DDP averages the gradients, so every rank ends with the same
weights (checked through MPI) and the same test accuracy.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from typing import Any

import numpy as np
from mpi4py import MPI

from smmpi_runtime import check, report, require_world_size, runtime, torch_init
from train import load_digits_split


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--epochs", type=int, default=8)
    parser.add_argument("--batch-size", type=int, default=32, help="per rank")
    parser.add_argument("--lr", type=float, default=0.1)
    parser.add_argument("--hidden", type=int, default=64)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=1, help="torch intra-op threads per rank")
    parser.add_argument("--min-accuracy", type=float, default=0.85)
    args, _ = parser.parse_known_args()
    comm = MPI.COMM_WORLD
    require_world_size(comm, minimum=1)
    rt = runtime(comm)

    import torch
    import torch.distributed as dist
    from torch import nn
    from torch.nn.parallel import DistributedDataParallel

    torch.set_num_threads(max(1, args.threads))
    torch.manual_seed(args.seed)  # the same initial weights everywhere; DDP also syncs them
    torch_init(comm, backend="gloo")
    try:
        x_train, y_train, x_test, y_test = load_digits_split(args.seed)
        shard = slice(rt.rank, None, rt.size)  # every size-th example, as DistributedSampler
        x = torch.tensor(x_train[shard], dtype=torch.float32)
        y = torch.tensor(y_train[shard], dtype=torch.int64)
        model = nn.Sequential(nn.Linear(64, args.hidden), nn.ReLU(), nn.Linear(args.hidden, 10))
        ddp = DistributedDataParallel(model)
        optimizer = torch.optim.SGD(ddp.parameters(), lr=args.lr, momentum=0.9)
        loss_fn = nn.CrossEntropyLoss()
        # Every rank takes the same number of steps, or DDP's allreduce would hang.
        steps = int(comm.allreduce(-(-len(y) // args.batch_size), op=MPI.MIN))
        generator = torch.Generator().manual_seed(args.seed + rt.rank)
        t0 = time.perf_counter()
        loss = torch.tensor(0.0)
        for _ in range(args.epochs):
            order = torch.randperm(len(y), generator=generator)
            for step in range(steps):
                idx = order[step * args.batch_size : (step + 1) * args.batch_size]
                optimizer.zero_grad()
                loss = loss_fn(ddp(x[idx]), y[idx])
                loss.backward()
                optimizer.step()
        seconds = time.perf_counter() - t0
        with torch.no_grad():
            predicted = model(torch.tensor(x_test, dtype=torch.float32)).argmax(dim=1).numpy()
        test_accuracy = float((predicted == y_test).mean())
        flat = np.concatenate([p.detach().numpy().ravel() for p in model.parameters()])
        flat = flat.astype(np.float64)
    finally:
        dist.destroy_process_group()

    high, low = np.empty_like(flat), np.empty_like(flat)
    comm.Allreduce([flat, MPI.DOUBLE], [high, MPI.DOUBLE], op=MPI.MAX)
    comm.Allreduce([flat, MPI.DOUBLE], [low, MPI.DOUBLE], op=MPI.MIN)
    check(
        bool(np.array_equal(high, low)),
        f"rank {rt.rank}: DDP replicas ended with different weights",
    )
    check(
        args.min_accuracy <= test_accuracy <= 1.0,
        f"rank {rt.rank}: test accuracy {test_accuracy:.4f} outside [{args.min_accuracy}, 1]",
    )
    report(
        comm,
        f"{len(y)} examples, {steps} steps/epoch, last loss {float(loss.detach()):.4f}, "
        f"test accuracy {test_accuracy:.4f}, {seconds:.2f} s",
        title=f"torch_ddp: gloo, {rt.size} ranks, {args.epochs} epochs",
    )
    if rt.rank == 0:
        os.makedirs(rt.model_dir, exist_ok=True)
        os.makedirs(rt.output_data_dir, exist_ok=True)
        torch.save(model.state_dict(), os.path.join(rt.model_dir, "model.pt"))
        metrics: dict[str, Any] = {
            "world_size": rt.size,
            "epochs": args.epochs,
            "test_accuracy": test_accuracy,
            "seconds": seconds,
        }
        with open(os.path.join(rt.output_data_dir, "metrics.json"), "w") as fh:
            json.dump(metrics, fh, indent=2)
        print(
            f"torch_ddp: every rank has the same weights; test accuracy {test_accuracy:.4f}",
            flush=True,
        )
    return 0


def _end(code: int) -> None:
    """Exit without the interpreter's shutdown: PyTorch's own threads can reach for the GIL
    while it finalizes, and Python then ends them with ``pthread_exit``, which C++ turns into
    ``terminate`` (SIGABRT, exit 134) after the program's work is done and written."""
    sys.stdout.flush()
    sys.stderr.flush()
    if not MPI.Is_finalized():
        MPI.Finalize()
    os._exit(code)


if __name__ == "__main__":
    _end(main())
