"""Scale: `smmpi run demo -N 16 -n 4` (64 ranks) in each mode against a bare mpirun of 64 ranks,
and `-N 200 -n 1` (200 emulated hosts, which must run; above 64 instances `auto` runs processes
mode).

    python benchmarks/bench_scale.py [--runs 3] [--skip-200]

Every figure is a median of ``--runs`` alternating runs taken in this one invocation.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
ENV = {
    **os.environ,
    "PATH": f"{BIN}:{os.environ.get('PATH', '')}",
    "OMPI_ALLOW_RUN_AS_ROOT": "1",
    "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
    "SAGEMAKER_SUPPRESS_V2_WARNING": "1",
}


def timed(argv: list[str], cwd: Path) -> float:
    start = time.perf_counter()
    done = subprocess.run(argv, cwd=cwd, env=ENV, capture_output=True, text=True)
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(argv)}: exit {done.returncode}\n{done.stderr[-2000:]}")
    return elapsed


def compare(title: str, cases: dict[str, tuple[list[str], Path]], runs: int) -> None:
    print(f"## {title} (median of {runs} alternating runs)")
    times: dict[str, list[float]] = {name: [] for name in cases}
    for _ in range(runs):
        for name, (argv, cwd) in cases.items():
            times[name].append(timed(argv, cwd))
    first = statistics.median(times[next(iter(cases))])
    for name, values in times.items():
        value = statistics.median(values)
        print(f"{name:58s} {value:7.2f} s  {value / first:5.2f}x")


def smmpi(instances: int, ppn: int, mode: str) -> tuple[list[str], Path]:
    argv = [str(BIN / "smmpi"), "run", "demo", "-N", str(instances), "-n", str(ppn)]
    return [*argv, "--isolation", mode, "--timeout", "600"], ROOT


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--skip-200", action="store_true", help="only the 64-rank comparison")
    args = parser.parse_args()
    bare = [str(BIN / "mpirun"), "--oversubscribe", "-np", "64", sys.executable, "-m", "mpi4py"]
    compare(
        "64 ranks: demo on 16 emulated hosts x 4 against bare mpirun -np 64",
        {
            "bare mpirun --oversubscribe -np 64 python -m mpi4py demo.py": (
                [*bare, "demo.py"],
                ROOT / "entry_points",
            ),
            "smmpi run demo -N 16 -n 4 --isolation processes": smmpi(16, 4, "processes"),
            "smmpi run demo -N 16 -n 4 --isolation hosts": smmpi(16, 4, "hosts"),
        },
        args.runs,
    )
    if not args.skip_200:
        bare200 = [str(BIN / "mpirun"), "--oversubscribe", "-np", "200", sys.executable]
        compare(
            "200 emulated hosts x 1 process",
            {
                "bare mpirun --oversubscribe -np 200 python -m mpi4py demo.py": (
                    [*bare200, "-m", "mpi4py", "demo.py"],
                    ROOT / "entry_points",
                ),
                # isolated hosts run at most 64 instances: auto runs processes mode here
                "smmpi run demo -N 200 -n 1 (auto: processes mode)": smmpi(200, 1, "auto"),
            },
            1,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
