"""A rank that computes while the others wait: its wall time against its CPU time.

    python benchmarks/bench_cpu_share.py [--runs 5]

Rank 0 runs a fixed loop (about 0.15 s of CPU) while ranks 1-3 wait in a barrier, polling as
Open MPI's ranks do. Plain ``mpirun --oversubscribe -np 4``, ``smmpi run -N 1 -n 4`` and
``smmpi run -N 2 -n 2`` run it alternately; each row gives the median of ``--runs`` of rank 0's
wall time and CPU time for the loop. On a machine with fewer cores than ranks, the loop's
wall time is its CPU time when the waiting ranks yield to it; when they do not (each
instance's session an equal share of the cores, Linux's autogroups), it is about twice that.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

BIN = Path(sys.executable).parent
PROGRAM = """\
import time
from mpi4py import MPI
comm = MPI.COMM_WORLD
comm.Barrier()
if comm.rank == 0:
    wall, cpu, x = time.perf_counter(), time.process_time(), 0
    for i in range(3_000_000):
        x += i
    print(f"loop {time.perf_counter() - wall:.4f} {time.process_time() - cpu:.4f}", flush=True)
comm.Barrier()
"""


def _loop(argv: list[str], cwd: str, env: dict[str, str]) -> tuple[float, float]:
    r = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=300)
    if r.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed: {r.stderr[-800:]}")
    line = next(x for x in r.stdout.splitlines() if "loop " in x)
    wall, cpu = line.split("loop ", 1)[1].split()
    return float(wall), float(cpu)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=5)
    runs = parser.parse_args().runs
    env = {
        **os.environ,
        "PATH": f"{BIN}:{os.environ.get('PATH', '')}",
        "OMPI_ALLOW_RUN_AS_ROOT": "1",
        "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
        "SMMPI_ISOLATION": "hosts",
    }
    smmpi = [str(BIN / "smmpi"), "run", "loop.py", "--framework", "pytorch"]
    rows = {
        "mpirun --oversubscribe -np 4": [
            "mpirun",
            "--oversubscribe",
            "-np",
            "4",
            "python",
            "loop.py",
        ],
        "smmpi run -N 1 -n 4": [*smmpi, "-N", "1", "-n", "4"],
        "smmpi run -N 2 -n 2": [*smmpi, "-N", "2", "-n", "2"],
    }
    print(f"load average before: {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    with tempfile.TemporaryDirectory() as folder:
        Path(folder, "loop.py").write_text(PROGRAM)
        times: dict[str, list[tuple[float, float]]] = {name: [] for name in rows}
        for _ in range(runs):
            for name, argv in rows.items():
                times[name].append(_loop(argv, folder, env))
    print("| run | rank 0's loop, wall | its CPU | wall / CPU |")
    print("|---|---|---|---|")
    for name, got in times.items():
        wall = statistics.median(w for w, _ in got)
        cpu = statistics.median(c for _, c in got)
        print(f"| `{name}` | {wall:.3f} s | {cpu:.3f} s | {wall / cpu:.2f} |")
    print(f"load average after: {' '.join(f'{x:.1f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
