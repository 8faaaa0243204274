"""Exact mode: what sshd and the run's keys cost per run, and the demo against the fast mode.

    python benchmarks/bench_exact.py [--runs 5]

- set-up and teardown: a 3-instance pod that runs ``true`` on algo-1, with and without
  exact mode's sshd (keys made, copied into each instance, sshd listening, all torn down);
  the difference is what exact mode adds;
- the demo, 3 x 2: ``smmpi run demo`` against ``--exact`` without the toolkit
  (``SMMPI_TOOLKIT_VENV=none``: sshd and the container's mpirun line) and against ``--exact``
  with the toolkit (the default: its ``train`` on every instance), for the TensorFlow image the
  demo stands for and for a PyTorch image. With the toolkit, the toolkit's documented 30 s sleep
  on algo-1 after mpirun (``MasterRunner``: ``time.sleep(30)`` before ``train`` ends) is
  subtracted, and its own log's timestamps split the rest: start (``train`` importing the
  framework toolkit), the time to mpirun's end, and the tail.

Every figure is a median of ``--runs`` alternating runs (``--toolkit-runs`` with the toolkit,
which take a minute each) taken in this one invocation. The toolkit's environments are what
``--exact`` uses by default (smmpi's build, or ``SMMPI_TOOLKIT_VENV``/``SMMPI_TOOLKIT_TF``).
"""

from __future__ import annotations

import argparse
import datetime
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from smmpi.instances.hosts import launch  # noqa: E402

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


def demo_seconds(mode: str, framework: str = "tensorflow") -> tuple[float, str]:
    """``mode``: fast, sshd (exact mode without the toolkit) or toolkit; seconds and stderr."""
    argv = [str(BIN / "smmpi"), "run", "demo", "-N", "3", "-n", "2", "--framework", framework]
    env = dict(ENV)
    if mode == "sshd":
        env["SMMPI_TOOLKIT_VENV"] = "none"
    start = time.perf_counter()
    done = subprocess.run(
        [*argv, *(["--exact"] if mode != "fast" else [])], env=env, capture_output=True, timeout=600
    )
    if done.returncode != 0:
        raise SystemExit(done.stderr.decode(errors="replace"))
    return time.perf_counter() - start, done.stderr.decode(errors="replace")


TOOLKIT_SLEEP = 30.0  # algo-1's time.sleep(30) after mpirun (sagemaker_training/mpi.py)
_STAMP = re.compile(r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}) sagemaker-training-toolkit")


def _stamps(stderr: str) -> list[tuple[float, str]]:
    out = []
    for line in stderr.splitlines():
        m = _STAMP.match(line)
        if m:
            when = datetime.datetime.strptime(m[1], "%Y-%m-%d %H:%M:%S,%f")
            out.append((when.replace(tzinfo=datetime.timezone.utc).timestamp(), line))
    return out


def toolkit_split(framework: str) -> dict[str, float]:
    """One demo run with the toolkit: wall time, minus the sleep, and where it went."""
    began = time.time()
    seconds, stderr = demo_seconds("toolkit", framework)
    stamps = _stamps(stderr)
    first = stamps[0][0] if stamps else began
    ended = next((t for t, ln in stamps if "Begin writing status file" in ln), first)
    last = stamps[-1][0] if stamps else ended
    return {
        "wall": seconds,
        "minus_sleep": seconds - TOOLKIT_SLEEP,
        "start": first - began,
        "to_mpirun_end": ended - first,
        "tail": last - ended,
        "after_train": began + seconds - last,
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--toolkit-runs", type=int, default=1)
    args = parser.parse_args()
    pods: dict[bool, list[float]] = {False: [], True: []}
    demos: dict[str, list[float]] = {"fast": [], "sshd": []}
    for _ in range(args.runs):
        for exact in (False, True):
            pods[exact].append(pod_seconds(exact))
        for mode in demos:
            demos[mode].append(demo_seconds(mode)[0])
    splits: dict[str, list[dict[str, float]]] = {"tensorflow": [], "pytorch": []}
    fast_pt: list[float] = []
    for _ in range(args.toolkit_runs):
        for framework in splits:
            splits[framework].append(toolkit_split(framework))
        fast_pt.append(demo_seconds("fast", "pytorch")[0])
    fast_pod, exact_pod = statistics.median(pods[False]), statistics.median(pods[True])
    fast, sshd = statistics.median(demos["fast"]), statistics.median(demos["sshd"])
    print(f"pod of 3, set-up + teardown: fast {fast_pod:.3f} s, exact {exact_pod:.3f} s")
    print(f"sshd and keys for 3 instances: {exact_pod - fast_pod:+.3f} s (target <= 0.3 s)")
    print(f"demo 3x2: fast {fast:.2f} s, exact without the toolkit {sshd:.2f} s")
    print(f"exact without the toolkit / fast: {sshd / fast:.2f}x (target <= 1.5x)")
    for framework, runs in splits.items():
        base = fast if framework == "tensorflow" else statistics.median(fast_pt)
        med = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
        print(
            f"demo 3x2 {framework} image with the toolkit: {med['wall']:.1f} s, minus its "
            f"{TOOLKIT_SLEEP:.0f} s sleep {med['minus_sleep']:.1f} s = "
            f"{med['minus_sleep'] / base:.1f}x fast ({base:.2f} s; target <= 1.5x); "
            f"start {med['start']:.1f} s, to mpirun's end {med['to_mpirun_end']:.1f} s, "
            f"status files and sleep {med['tail']:.1f} s, after train's last line "
            f"{med['after_train']:.1f} s"
        )


if __name__ == "__main__":
    main()
