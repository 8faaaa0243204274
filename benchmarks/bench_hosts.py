"""Isolated hosts: set-up and teardown cost, a whole run against processes mode and bare mpirun,
and pingpong between instances (TCP over veth) and within one (shared memory), C beside mpi4py.

    python benchmarks/bench_hosts.py [--runs 5]

Every figure is a median of ``--runs`` alternating runs taken in this one invocation, so the
ratios compare like with like on a shared machine.
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
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from smmpi.instances.hosts import launch  # noqa: E402

BIN = Path(sys.executable).parent
HERE = Path(__file__).resolve().parent / "hosts"
ENV = {
    "PATH": f"{BIN}:/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin",
    "OMPI_ALLOW_RUN_AS_ROOT": "1",
    "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
    "HOME": os.environ.get("HOME", "/root"),
}
CONTAINER_FLAGS = [
    *("-mca", "btl_tcp_if_include", "eth0", "-mca", "oob_tcp_if_include", "eth0"),
    *("-mca", "plm_rsh_no_tree_spawn", "1", "-bind-to", "none", "-map-by", "slot"),
    *("-mca", "pml", "ob1", "-mca", "btl", "^openib"),
    *("-mca", "orte_abort_on_non_zero_status", "1"),
    *("-mca", "btl_vader_single_copy_mechanism", "none"),
]


def make_pod(root: Path, count: int) -> launch.Pod:
    hosts = tuple(f"algo-{k}" for k in range(1, count + 1))
    trees = tuple(root / h / "opt" / "ml" for h in hosts)
    for tree in trees:
        (tree / "code").mkdir(parents=True)
    return launch.Pod(hosts, trees, root)


def timed(action: Callable[[], None]) -> float:
    start = time.perf_counter()
    action()
    return time.perf_counter() - start


def median(values: list[float]) -> float:
    return statistics.median(values)


def setup_teardown(runs: int) -> None:
    """A pod running ``true`` against starting ``true`` alone: the instances' whole cost."""
    print("## set-up + teardown (pod running `true`, minus `true` alone)")
    for count in (1, 3, 32):
        pod_times, bare_times = [], []
        for _ in range(runs):
            folder = Path(tempfile.mkdtemp(prefix="smmpi-bench-"))
            pod = make_pod(folder, count)
            pod_times.append(timed(lambda p=pod: check(launch.start(p, ["true"], ENV, "/").wait())))
            bare_times.append(timed(lambda: check(subprocess.run(["true"]).returncode)))
            shutil.rmtree(folder)
        added = median(pod_times) - median(bare_times)
        print(
            f"{count:3d} instances: {median(pod_times):.3f} s vs {median(bare_times):.3f} s"
            f" -> adds {added:.3f} s"
        )


def demo_in_pod() -> Callable[[], None]:
    """The container's line for 3 x 2 run in a fresh pod, without smmpi: the emulated cluster's
    own cost (instances, an orted per remote instance, TCP between them)."""

    def run() -> None:
        folder = Path(tempfile.mkdtemp(prefix="smmpi-bench-"))
        try:
            pod = make_pod(folder, 3)
            for tree in pod.opt_ml:
                for module in (ROOT / "entry_points").glob("*.py"):
                    shutil.copy2(module, tree / "code")
            argv = ["mpirun", "--host", "algo-1:2,algo-2:2,algo-3:2", "-np", "6"]
            argv += [*CONTAINER_FLAGS, "-mca", "plm_rsh_agent", str(launch.agent_path(pod))]
            argv += ["-wdir", "/opt/ml/code", sys.executable, "-m", "mpi4py", "demo.py"]
            proc = launch.start(pod, argv, ENV, "/", stdout=subprocess.DEVNULL)
            check(proc.wait())
        finally:
            shutil.rmtree(folder)

    return run


def demo_runs(runs: int) -> None:
    """`smmpi run demo -N 3 -n 2` in each mode against a bare mpirun of the same Open MPI, and
    against the container's line in a pod without smmpi (what isolated hosts cost by themselves)."""
    print("## smmpi run demo -N 3 -n 2 (median of runs, alternating)")
    env = {**os.environ, **ENV, "SAGEMAKER_SUPPRESS_V2_WARNING": "1"}
    smmpi = str(BIN / "smmpi")

    def command(argv: list[str], cwd: Path) -> Callable[[], None]:
        return lambda: check(subprocess.run(argv, cwd=cwd, env=env, capture_output=True).returncode)

    bare = [str(BIN / "mpirun"), "--oversubscribe", "-np", "6", sys.executable, "-m", "mpi4py"]
    cases = {
        "bare mpirun --oversubscribe -np 6 python -m mpi4py demo.py": command(
            [*bare, "demo.py"], ROOT / "entry_points"
        ),
        "the container's line in a pod of 3, no smmpi": demo_in_pod(),
        "smmpi run demo -N 3 -n 2 --isolation hosts": command(
            [smmpi, "run", "demo", "-N", "3", "-n", "2", "--isolation", "hosts"], ROOT
        ),
        "smmpi run demo -N 3 -n 2 --isolation processes": command(
            [smmpi, "run", "demo", "-N", "3", "-n", "2", "--isolation", "processes"], ROOT
        ),
    }
    times: dict[str, list[float]] = {name: [] for name in cases}
    for _ in range(runs):
        for name, case in cases.items():
            times[name].append(timed(case))
    names = list(cases)
    bare_s, pod_s = median(times[names[0]]), median(times[names[1]])
    for name, values in times.items():
        print(
            f"{name:52s} {median(values):6.3f} s  {median(values) / bare_s:5.2f}x bare"
            f"  {median(values) / pod_s:5.2f}x the pod's line"
        )


def check(code: int) -> None:
    if code != 0:
        raise SystemExit(f"exit status {code}")


def mpicc_pingpong(folder: Path) -> Path:
    exe = folder / "pingpong"
    subprocess.run(
        [str(BIN / "mpicc"), "-O2", str(HERE / "pingpong.c"), "-o", str(exe)], check=True
    )
    return exe


def _parse(out: str) -> dict[int, float]:
    rows = [line.split() for line in out.splitlines() if line and line[0].isdigit()]
    return {int(size): float(us) for size, us in rows}


def pingpong_in_pod(pod: launch.Pod, hosts: str, program: list[str]) -> dict[int, float]:
    argv = ["mpirun", "--host", hosts, "-np", "2", *CONTAINER_FLAGS]
    argv += ["-mca", "plm_rsh_agent", str(launch.agent_path(pod)), *program]
    proc = launch.start(pod, argv, ENV, "/", stdout=subprocess.PIPE)
    out, _ = proc.communicate(timeout=600)
    check(proc.returncode)
    return _parse(out.decode())


def pingpong_bare(program: list[str]) -> dict[int, float]:
    argv = [str(BIN / "mpirun"), "--oversubscribe", "-np", "2", *program]
    done = subprocess.run(argv, env=ENV, capture_output=True, text=True, check=True)
    return _parse(done.stdout)


def pingpong(runs: int) -> None:
    print("## pingpong, one-way µs (median of runs); same Open MPI for every column")
    folder = Path(tempfile.mkdtemp(prefix="smmpi-bench-"))
    try:
        exe = str(mpicc_pingpong(folder))
        py = [sys.executable, "-m", "mpi4py", str(HERE / "pingpong.py")]
        pod = make_pod(folder, 2)
        cases = {
            "C, 2 instances (TCP/veth)": lambda: pingpong_in_pod(pod, "algo-1:1,algo-2:1", [exe]),
            "mpi4py, 2 instances (TCP/veth)": lambda: pingpong_in_pod(pod, "algo-1:1,algo-2:1", py),
            "C, 1 instance (shm)": lambda: pingpong_in_pod(pod, "algo-1:2", [exe]),
            "mpi4py, 1 instance (shm)": lambda: pingpong_in_pod(pod, "algo-1:2", py),
            "C, bare mpirun (shm)": lambda: pingpong_bare([exe]),
            "mpi4py, bare mpirun (shm)": lambda: pingpong_bare(py),
        }
        results: dict[str, list[dict[int, float]]] = {name: [] for name in cases}
        for _ in range(runs):
            for name, case in cases.items():
                results[name].append(case())
        print(f"{'':34s}{'8 B':>10s}{'64 KiB':>10s}{'4 MiB':>10s}")
        for name, rows in results.items():
            cells = [median([r[size] for r in rows]) for size in (8, 65536, 4194304)]
            print(f"{name:34s}" + "".join(f"{c:10.2f}" for c in cells))
    finally:
        shutil.rmtree(folder)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--only", choices=("setup", "demo", "pingpong"), help="one part only")
    args = parser.parse_args()
    parts = {"setup": setup_teardown, "demo": demo_runs, "pingpong": pingpong}
    for name, part in parts.items():
        if args.only in (None, name):
            part(args.runs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
