"""Exact mode: what sshd and the run's keys cost per run, and the demo against the fast mode.

    python benchmarks/bench_exact.py [--runs 5]

- set-up and teardown: a 3-instance pod that runs ``true`` on algo-1, with and without
  exact mode's sshd (keys made, copied into each instance, sshd listening, all torn down);
  the difference is what exact mode adds;
- the demo, 3 x 2, ``smmpi run demo`` against ``smmpi run demo --exact``.

Every figure is a median of ``--runs`` alternating runs taken in this one invocation.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from smmpi.runners.hosts import launch  # noqa: E402

BIN = Path(sys.executable).parent
ENV = {
    **os.environ,
    "PATH": f"{BIN}:{os.environ.get('PATH', '/usr/bin:/bin')}",
    "OMPI_ALLOW_RUN_AS_ROOT": "1",
    "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
    "SAGEMAKER_SUPPRESS_V2_WARNING": "1",
}


REACH = "import socket, sys; [socket.create_connection((h, 22), 5).close() for h in sys.argv[1:]]"


def pod_seconds(exact: bool, count: int = 3) -> float:
    """A pod whose algo-1 runs Python; in exact mode, it connects to port 22 of every instance
    (which proves each sshd listens)."""
    root = Path(tempfile.mkdtemp(prefix="smmpi-bench-exact-"))
    try:
        hosts = tuple(f"algo-{k}" for k in range(1, count + 1))
        trees = tuple(root / h / "opt" / "ml" for h in hosts)
        for tree in trees:
            (tree / "code").mkdir(parents=True)
        (root / ".smmpi").mkdir()
        pod = launch.Pod(hosts, trees, root, exact=exact)
        start = time.perf_counter()
        argv = [sys.executable, "-I", "-S", "-c", REACH, *(hosts if exact else ())]
        proc = launch.start(pod, argv, {"PATH": "/usr/bin:/bin"}, "/")
        if proc.wait(timeout=60) != 0:
            raise SystemExit(f"the pod ended with {proc.returncode}")
        return time.perf_counter() - start
    finally:
        shutil.rmtree(root, ignore_errors=True)


def demo_seconds(exact: bool) -> float:
    argv = [str(BIN / "smmpi"), "run", "demo", "-N", "3", "-n", "2"]
    start = time.perf_counter()
    done = subprocess.run(
        [*argv, *(["--exact"] if exact else [])], env=ENV, capture_output=True, timeout=300
    )
    if done.returncode != 0:
        raise SystemExit(done.stderr.decode(errors="replace"))
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    runs = parser.parse_args().runs
    pods: dict[bool, list[float]] = {False: [], True: []}
    demos: dict[bool, list[float]] = {False: [], True: []}
    for _ in range(runs):
        for exact in (False, True):
            pods[exact].append(pod_seconds(exact))
            demos[exact].append(demo_seconds(exact))
    fast_pod, exact_pod = statistics.median(pods[False]), statistics.median(pods[True])
    fast_demo, exact_demo = statistics.median(demos[False]), statistics.median(demos[True])
    print(f"pod of 3, set-up + teardown: fast {fast_pod:.3f} s, exact {exact_pod:.3f} s")
    print(f"sshd and keys for 3 instances: {exact_pod - fast_pod:+.3f} s (target <= 0.3 s)")
    print(f"demo 3x2: fast {fast_demo:.2f} s, exact {exact_demo:.2f} s")
    print(f"exact / fast: {exact_demo / fast_demo:.2f}x (target <= 1.5x)")


if __name__ == "__main__":
    main()
