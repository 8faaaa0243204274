"""Seed 000 done right: TensorFlow MultiWorkerMirroredStrategy, TF_CONFIG built from the MPI world.

Seed 000 wrote ``TF_CONFIG`` by hand with hard-coded worker ports (and used
``os`` without importing it). Here ``tf_config(comm)`` gathers every rank's
host and a port that rank reserved, so the cluster spec always matches the MPI
world: under plain ``mpirun``, ``smmpi run`` or SageMaker. A short Keras
training on scikit-learn's digits follows; each worker reads its own shard,
gradients are all-reduced by the strategy, and every rank checks through MPI
that it ended with the same weights and a sane test accuracy.
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

from smmpi_runtime import (
    check,
    prefer_mpi_symbols,
    report,
    require_world_size,
    runtime,
    tf_config,
)
from train import load_digits_split

prefer_mpi_symbols()  # before TensorFlow loads (its hwloc would replace Open MPI 4.1's)


def predict(weights: list[np.ndarray], x: np.ndarray) -> np.ndarray:
    """The Dense-ReLU-Dense forward pass in NumPy: no collective op needed to evaluate."""
    w1, b1, w2, b2 = weights
    hidden = np.maximum(x @ w1 + b1, 0.0)
    out: np.ndarray = (hidden @ w2 + b2).argmax(axis=1)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--batch-size", type=int, default=32, help="per worker")
    parser.add_argument("--lr", type=float, default=0.1)
    parser.add_argument("--hidden", type=int, default=64)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--min-accuracy", type=float, default=0.85)
    args, _ = parser.parse_known_args()
    comm = MPI.COMM_WORLD
    require_world_size(comm, minimum=1)
    rt = runtime(comm)

    # TF_CONFIG must be in place before TensorFlow sets up its collectives.
    config = tf_config(comm)
    os.environ["TF_CONFIG"] = json.dumps(config)
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    import tensorflow as tf

    tf.config.threading.set_intra_op_parallelism_threads(1)
    tf.config.threading.set_inter_op_parallelism_threads(2)
    tf.keras.utils.set_random_seed(args.seed)  # same initial weights on every worker
    comm.Barrier()  # every worker's server comes up at about the same time
    strategy = tf.distribute.MultiWorkerMirroredStrategy()
    check(
        strategy.num_replicas_in_sync == rt.size,
        f"rank {rt.rank}: strategy has {strategy.num_replicas_in_sync} replicas, not {rt.size}",
    )

    x_train, y_train, x_test, y_test = load_digits_split(args.seed)
    # Every worker takes the same number of steps, or the all-reduce would wait forever.
    shard_x, shard_y = x_train[rt.rank :: rt.size], y_train[rt.rank :: rt.size]
    steps = int(comm.allreduce(len(shard_y) // args.batch_size, op=MPI.MIN))
    dataset = (
        tf.data.Dataset.from_tensor_slices((shard_x.astype(np.float32), shard_y))
        .shuffle(len(shard_y), seed=args.seed + rt.rank)
        .repeat()
        .batch(args.batch_size, drop_remainder=True)
    )
    options = tf.data.Options()
    options.experimental_distribute.auto_shard_policy = tf.data.experimental.AutoShardPolicy.OFF
    dataset = dataset.with_options(options)

    global_batch = args.batch_size * rt.size
    with strategy.scope():
        model = tf.keras.Sequential(
            [
                tf.keras.Input(shape=(64,)),
                tf.keras.layers.Dense(args.hidden, activation="relu"),
                tf.keras.layers.Dense(10),
            ]
        )
        optimizer = tf.keras.optimizers.SGD(learning_rate=args.lr, momentum=0.9)
        optimizer.build(model.trainable_variables)
        loss_fn = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True, reduction="none")
    # Keras 3's Model.fit does not run under MultiWorkerMirroredStrategy (keras-team/keras
    # #20585), so the step is the documented custom loop: strategy.run per replica, the loss
    # averaged over the global batch, the optimizer's update all-reducing the gradients.
    batches = iter(strategy.experimental_distribute_dataset(dataset))

    def replica_step(x: Any, y: Any) -> Any:
        with tf.GradientTape() as tape:
            per_example = loss_fn(y, model(x, training=True))
            loss = tf.nn.compute_average_loss(per_example, global_batch_size=global_batch)
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables, strict=True))
        return loss

    @tf.function  # type: ignore[misc, untyped-decorator]
    def train_step(iterator: Any) -> Any:
        per_replica = strategy.run(replica_step, args=next(iterator))
        return strategy.reduce(tf.distribute.ReduceOp.SUM, per_replica, axis=None)

    t0 = time.perf_counter()
    losses: list[float] = []
    for _ in range(args.epochs):
        epoch_loss = 0.0
        for _ in range(steps):
            epoch_loss += float(train_step(batches))
        losses.append(epoch_loss / max(steps, 1))
    seconds = time.perf_counter() - t0
    weights = [np.asarray(w, dtype=np.float64) for w in model.get_weights()]
    test_accuracy = float((predict(weights, x_test) == y_test).mean())
    last_loss = losses[-1] if losses else float("nan")

    flat = np.concatenate([w.ravel() for w in weights])
    high, low = np.empty_like(flat), np.empty_like(flat)
    comm.Allreduce([flat, MPI.DOUBLE], [high, MPI.DOUBLE], op=MPI.MAX)
    comm.Allreduce([flat, MPI.DOUBLE], [low, MPI.DOUBLE], op=MPI.MIN)
    check(bool(np.array_equal(high, low)), f"rank {rt.rank}: workers ended with different weights")
    check(
        args.min_accuracy <= test_accuracy <= 1.0,
        f"rank {rt.rank}: test accuracy {test_accuracy:.4f} outside [{args.min_accuracy}, 1]",
    )
    report(
        comm,
        f"worker {config['cluster']['worker'][rt.rank]}: {len(shard_y)} examples, "
        f"{steps} steps/epoch, loss {last_loss:.4f}, test accuracy {test_accuracy:.4f}, "
        f"{seconds:.2f} s",
        title=f"tf_multiworker: MultiWorkerMirroredStrategy, {rt.size} workers, "
        f"{args.epochs} epochs",
    )
    if rt.rank == 0:
        os.makedirs(rt.model_dir, exist_ok=True)
        os.makedirs(rt.output_data_dir, exist_ok=True)
        np.savez(
            os.path.join(rt.model_dir, "model.npz"),
            **{f"w{i}": w for i, w in enumerate(weights)},  # type: ignore[arg-type]
        )
        metrics: dict[str, Any] = {
            "world_size": rt.size,
            "epochs": args.epochs,
            "loss": last_loss,
            "test_accuracy": test_accuracy,
            "seconds": seconds,
            "cluster": config["cluster"],
        }
        with open(os.path.join(rt.output_data_dir, "metrics.json"), "w") as fh:
            json.dump(metrics, fh, indent=2)
        print(
            f"tf_multiworker: every worker has the same weights; test accuracy {test_accuracy:.4f}",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
