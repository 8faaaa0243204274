"""What serve keeps per finished job: tracemalloc snapshots diffed between two job counts.

    python benchmarks/trace_serve_memory.py [--from 20] [--to 70] [--top 15]

serve (``smmpi.serve.Server``) runs in this process under tracemalloc; the jobs' client (boto3,
sequential 1x2 demo jobs as ``bench_serve.py`` runs them) is another process, so that nothing
of the client is counted. Prints the traced growth per job between job ``--from`` and job
``--to``, the allocation sites that grew most (by traceback), and ``gc``'s object counts by type.
"""

from __future__ import annotations

import argparse
import collections
import gc
import json
import multiprocessing
import os
import sys
import tempfile
import tracemalloc
import types
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_serve


def _client(url: str, keys: tuple[str, str], env: dict[str, str], conn: Connection) -> None:
    """Run job ``i`` for every ``i`` received; send back its seconds (NaN if it failed)."""

    serve: Any = types.SimpleNamespace(exports={
        "AWS_ENDPOINT_URL": url, "AWS_ACCESS_KEY_ID": keys[0], "AWS_SECRET_ACCESS_KEY": keys[1]
    })  # fmt: skip
    serve.client = lambda service: bench_serve.Serve.client(serve, service)
    bench_serve._bucket(serve)
    template = json.dumps(bench_serve._request(env, "bench-seq-x", "bench", 1, 2))
    while (i := conn.recv()) is not None:
        request = json.loads(template.replace("bench-seq-x", f"bench-seq-{i}"))
        uri = json.loads(request["HyperParameters"]["sagemaker_submit_directory"])
        bucket, _, key = uri[5:].partition("/")
        serve.client("s3").put_object(Bucket=bucket, Key=key, Body=bench_serve._source())
        conn.send(bench_serve._run_job(serve, request))


def _counts() -> collections.Counter[str]:
    return collections.Counter(type(o).__qualname__ for o in gc.get_objects())


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--from", dest="first", type=int, default=20)
    parser.add_argument("--to", dest="last", type=int, default=70)
    parser.add_argument("--top", type=int, default=15)
    parser.add_argument("--frames", type=int, default=8)
    args = parser.parse_args()
    from smmpi.serve import Server

    tmp = Path(tempfile.mkdtemp(prefix="trace-serve-"))
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    env.update(HOME=str(tmp), OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
               SAGEMAKER_SUPPRESS_V2_WARNING="1")  # fmt: skip
    tracemalloc.start(args.frames)
    server = Server(state=tmp / "state").start()
    mine, theirs = multiprocessing.Pipe()
    keys = (server.keys.access_key, server.keys.secret_key)
    child = multiprocessing.get_context("spawn").Process(
        target=_client, args=(server.url, keys, env, theirs)
    )
    child.start()

    def jobs(numbers: range) -> None:
        for i in numbers:
            mine.send(i)
            mine.recv()

    jobs(range(args.first))
    gc.collect()
    before, traced, counted = (
        tracemalloc.take_snapshot(),
        tracemalloc.get_traced_memory()[0],
        _counts(),
    )
    jobs(range(args.first, args.last))
    gc.collect()
    after, grown = tracemalloc.take_snapshot(), tracemalloc.get_traced_memory()[0] - traced
    counts, n = _counts(), args.last - args.first
    print(f"traced growth: {grown / n:.0f} bytes a job, jobs {args.first} to {args.last}")
    for stat in after.compare_to(before, "traceback")[: args.top]:
        if stat.size_diff > 0:
            print(f"--- {stat.size_diff / n:.0f} bytes, {stat.count_diff / n:.2f} blocks a job")
            print("\n".join(f"    {line}" for line in stat.traceback.format()))
    print("objects a job, by type:")
    for kind, more in (counts - counted).most_common(20):
        print(f"  {kind}: {more / n:.2f}")
    mine.send(None)
    child.join()
    server.stop()


if __name__ == "__main__":
    main()
