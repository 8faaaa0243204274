"""Run every benchmark in turn (`make bench`); each prints its own ratios.

Results are recorded by hand, with their commands, in benchmarks/RESULTS.md:
the machines are shared, so a figure is only meaningful with its conditions.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
SCRIPTS = [
    "bench_local.py",
    "bench_submit.py",
    "bench_pingpong.py",
    "bench_train.py",
    "bench_hosts.py",
    "bench_scale.py",
    "bench_model_trainer.py",
    "bench_cpu_share.py",
    "bench_warm.py",
    "bench_warm_sdk.py",
]


def main() -> int:
    failed = []
    for name in SCRIPTS:
        print(f"== {name}", flush=True)
        if subprocess.run([sys.executable, str(HERE / name)]).returncode != 0:
            failed.append(name)
    if failed:
        print("failed: " + ", ".join(failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
