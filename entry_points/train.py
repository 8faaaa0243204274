"""Data-parallel NumPy training on scikit-learn's digits: sharded data, Allreduce-summed gradients.

A softmax regression (``--hidden 0``) or a tanh MLP (``--hidden 32`` or ``512,512``), trained by
full-batch gradient descent. Each rank holds one contiguous shard of the
training set and computes the gradient *summed* over its shard; one Allreduce
per step adds the shards' sums and every rank divides by the global number of
examples. That is exactly the full-data gradient, so the weights after any
number of steps equal single-process training with the same seed (up to
floating-point summation order, far below 1e-10): run it at world size 1 to get
the reference. The digits data ship with scikit-learn, so nothing is downloaded.

Rank 0 writes the weights to ``model_dir/model.npz`` and loss, accuracy and
seconds to ``output_data_dir/metrics.json``.
"""

from __future__ import annotations

import argparse
import importlib.util
import itertools
import json
import os
import sys
import time
from typing import Any

import numpy as np
from mpi4py import MPI

from smmpi_runtime import check, refuse, report, require_world_size, runtime

Params = dict[str, np.ndarray]


def load_digits() -> tuple[np.ndarray, np.ndarray]:
    """scikit-learn's bundled 8x8 digits (1797 images), pixels scaled to [0, 1].

    The CSV that ships inside scikit-learn is read directly: importing
    scikit-learn costs seconds per rank, and every rank needs the data.
    """
    spec = importlib.util.find_spec("sklearn")
    if spec is None:
        raise RuntimeError(
            "the digits data set ships with scikit-learn, which is not installed here: "
            "pip install scikit-learn (on SageMaker: list it in the source dir's requirements.txt)"
        )
    roots = list(spec.submodule_search_locations or [])
    for root in roots:
        path = os.path.join(root, "datasets", "data", "digits.csv.gz")
        if os.path.isfile(path):
            table = np.loadtxt(path, delimiter=",")
            return table[:, :-1] / 16.0, table[:, -1].astype(np.int64)
    from sklearn.datasets import load_digits as sklearn_digits  # layout changed: ask sklearn

    digits = sklearn_digits()
    return np.asarray(digits.data, np.float64) / 16.0, np.asarray(digits.target, np.int64)


def load_digits_split(seed: int, test_fraction: float = 0.2) -> tuple[np.ndarray, ...]:
    """The same shuffled train/test split on every rank (and in the single-process run)."""
    x, y = load_digits()
    order = np.random.default_rng(seed).permutation(len(y))
    n_test = round(len(y) * test_fraction)
    test, train = order[:n_test], order[n_test:]
    return x[train], y[train], x[test], y[test]


def init_params(seed: int, n_in: int, hidden: list[int], n_out: int) -> Params:
    """Layer k's weights are ``W{k}``/``b{k}``; no hidden layer is softmax regression."""
    rng = np.random.default_rng(seed + 1)
    widths = [n_in, *hidden, n_out]
    params: Params = {}
    for k, (fan_in, fan_out) in enumerate(itertools.pairwise(widths), start=1):
        scale = 1.0 / np.sqrt(fan_in) if hidden else 0.0
        params[f"W{k}"] = rng.normal(0.0, 1.0, (fan_in, fan_out)) * scale
        params[f"b{k}"] = np.zeros(fan_out)
    return params


def _softmax(z: np.ndarray) -> np.ndarray:
    z = z - z.max(axis=1, keepdims=True)
    e = np.exp(z)
    out: np.ndarray = e / e.sum(axis=1, keepdims=True)
    return out


def _layers(params: Params) -> int:
    return len(params) // 2


def forward(params: Params, x: np.ndarray) -> tuple[np.ndarray, list[np.ndarray]]:
    """Class probabilities, and every layer's input (for the backward pass)."""
    inputs = [x]
    n = _layers(params)
    for k in range(1, n):
        inputs.append(np.tanh(inputs[-1] @ params[f"W{k}"] + params[f"b{k}"]))
    return _softmax(inputs[-1] @ params[f"W{n}"] + params[f"b{n}"]), inputs


def summed_gradients(params: Params, x: np.ndarray, y: np.ndarray) -> tuple[Params, float, int]:
    """Gradients of the cross-entropy *summed* (not averaged) over these examples."""
    probs, inputs = forward(params, x)
    rows = np.arange(len(y))
    loss = float(-np.log(np.maximum(probs[rows, y], 1e-300)).sum())
    correct = int((probs.argmax(axis=1) == y).sum())
    delta = probs.copy()
    delta[rows, y] -= 1.0
    grads: Params = {}
    for k in range(_layers(params), 0, -1):
        a = inputs[k - 1]
        grads[f"W{k}"] = a.T @ delta
        grads[f"b{k}"] = delta.sum(axis=0)
        if k > 1:  # through tanh: d tanh = 1 - tanh^2
            delta = (delta @ params[f"W{k}"].T) * (1.0 - a * a)
    return grads, loss, correct


def accuracy(params: Params, x: np.ndarray, y: np.ndarray) -> float:
    probs, _ = forward(params, x)
    return float((probs.argmax(axis=1) == y).mean())


def train(comm: Any, args: argparse.Namespace) -> tuple[Params, dict[str, Any]]:
    rank, size = comm.Get_rank(), comm.Get_size()
    x_train, y_train, x_test, y_test = load_digits_split(args.seed)
    if args.repeat > 1:  # a bigger, compute-bound problem with the same model
        x_train, y_train = np.tile(x_train, (args.repeat, 1)), np.tile(y_train, args.repeat)
    n_global = len(y_train)
    lo, hi = (n_global * rank) // size, (n_global * (rank + 1)) // size
    x_local, y_local = x_train[lo:hi], y_train[lo:hi]

    params = init_params(args.seed, x_train.shape[1], args.hidden, 10)
    for value in params.values():  # rank 0's initial weights are everyone's
        comm.Bcast([value, MPI.DOUBLE], root=0)
    names = list(params)
    # One flat buffer per step: every gradient, then the loss and correct-count sums.
    sizes = [params[k].size for k in names]
    flat = np.empty(sum(sizes) + 2, dtype=np.float64)
    total = np.empty_like(flat)
    losses: list[float] = []
    comm.Barrier()
    t0 = time.perf_counter()
    for _ in range(args.epochs):
        grads, loss, correct = summed_gradients(params, x_local, y_local)
        offset = 0
        for k, n in zip(names, sizes, strict=True):
            flat[offset : offset + n] = grads[k].ravel()
            offset += n
        flat[-2], flat[-1] = loss, correct
        comm.Allreduce([flat, MPI.DOUBLE], [total, MPI.DOUBLE], op=MPI.SUM)
        offset = 0
        for k, n in zip(names, sizes, strict=True):
            g = total[offset : offset + n].reshape(params[k].shape) / n_global
            params[k] -= args.lr * (g + args.l2 * params[k])
            offset += n
        losses.append(total[-2] / n_global)
    seconds = time.perf_counter() - t0
    metrics = {
        "world_size": size,
        "model": "mlp-" + "-".join(map(str, args.hidden)) if args.hidden else "softmax",
        "epochs": args.epochs,
        "examples": n_global,
        "initial_loss": losses[0] if losses else None,
        "loss": losses[-1] if losses else None,
        "train_accuracy": accuracy(params, x_train, y_train),
        "test_accuracy": accuracy(params, x_test, y_test),
        "seconds": seconds,
        "local_examples": int(hi - lo),
    }
    return params, metrics


def verify(comm: Any, params: Params, metrics: dict[str, Any], min_accuracy: float) -> None:
    rank = comm.Get_rank()
    flat = np.concatenate([v.ravel() for v in params.values()])
    high, low = np.empty_like(flat), np.empty_like(flat)
    comm.Allreduce([flat, MPI.DOUBLE], [high, MPI.DOUBLE], op=MPI.MAX)
    comm.Allreduce([flat, MPI.DOUBLE], [low, MPI.DOUBLE], op=MPI.MIN)
    check(bool(np.array_equal(high, low)), f"rank {rank}: ranks ended with different weights")
    check(bool(np.all(np.isfinite(flat))), f"rank {rank}: weights are not finite")
    if metrics["epochs"] > 0:
        check(
            metrics["loss"] < metrics["initial_loss"],
            f"rank {rank}: loss did not decrease ({metrics['initial_loss']} -> {metrics['loss']})",
        )
        check(
            metrics["test_accuracy"] >= min_accuracy,
            f"rank {rank}: test accuracy {metrics['test_accuracy']:.3f} < {min_accuracy}",
        )


def _widths(text: str) -> list[int]:
    widths = [int(w) for w in text.split(",") if w.strip()]
    if any(w < 0 for w in widths) or (len(widths) > 1 and 0 in widths):
        raise argparse.ArgumentTypeError(f"widths must be positive, or just 0: {text!r}")
    return [w for w in widths if w > 0]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--epochs", type=int, default=100, help="full-batch gradient steps")
    parser.add_argument(
        "--hidden",
        type=_widths,
        default=[32],
        help="hidden layer widths, comma-separated (0: softmax regression)",
    )
    parser.add_argument("--lr", type=float, default=0.5, help="learning rate")
    parser.add_argument("--l2", type=float, default=1e-4, help="L2 weight decay")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--repeat",
        type=int,
        default=1,
        help="tile the training set this many times (benchmarks: compute-bound)",
    )
    parser.add_argument(
        "--min-accuracy",
        type=float,
        default=0.85,
        help="fail if test accuracy ends below this (0 disables)",
    )
    args, _ = parser.parse_known_args()
    comm = MPI.COMM_WORLD
    require_world_size(comm, minimum=1)
    rt = runtime(comm)
    if args.epochs < 0 or args.repeat < 1:
        return refuse(comm, "train.py: needs --epochs >= 0 and --repeat >= 1")
    params, metrics = train(comm, args)
    verify(comm, params, metrics, args.min_accuracy if args.epochs > 0 else 0.0)
    report(
        comm,
        [
            f"{metrics['local_examples']} examples, loss {metrics['loss']:.6f}, "
            f"test accuracy {metrics['test_accuracy']:.4f}, {metrics['seconds']:.3f} s"
        ],
        title=f"train: {metrics['model']}, {args.epochs} epochs, world size {rt.size}",
    )
    if rt.rank == 0:
        os.makedirs(rt.model_dir, exist_ok=True)
        os.makedirs(rt.output_data_dir, exist_ok=True)
        model_path = os.path.join(rt.model_dir, "model.npz")
        np.savez(model_path, **params)  # type: ignore[arg-type]
        metrics.pop("local_examples")
        with open(os.path.join(rt.output_data_dir, "metrics.json"), "w") as fh:
            json.dump(metrics, fh, indent=2)
        print(
            f"train: model -> {model_path}; metrics -> "
            f"{os.path.join(rt.output_data_dir, 'metrics.json')}",
            flush=True,
        )
        print(
            f"train: loss {metrics['loss']:.6f} train accuracy "
            f"{metrics['train_accuracy']:.4f} test accuracy {metrics['test_accuracy']:.4f} "
            f"in {metrics['seconds']:.3f} s on {rt.size} rank(s)",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
