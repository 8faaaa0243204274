"""Buffer API against pickle API: pingpong bandwidth at 4 MiB and latency at 8 B, side by side.

Drives ``entry_points/bench.py`` under ``mpirun -np 2``; in every run both APIs
are measured back to back at each size, so the ratio is taken within one run.
Several runs are made and the median of each figure is printed.

    python benchmarks/bench_pingpong.py [--runs 3]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent


def one_run(workdir: Path) -> dict[str, float]:
    mpirun = str(BIN / "mpirun") if (BIN / "mpirun").exists() else "mpirun"
    cmd = [mpirun, "--oversubscribe", "-np", "2", sys.executable, "-m", "mpi4py"]
    cmd += [str(ROOT / "entry_points" / "bench.py"), "--sizes", "8,4M", "--budget", "512M"]
    cmd += ["--max-reps", "20000", "--no-plot"]
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    subprocess.run(cmd, cwd=workdir, env=env, check=True, capture_output=True, text=True)
    data = json.loads((workdir / "output" / "data" / "bench.json").read_text())
    pp = data["pingpong"]
    return {
        "latency_8B_buffer_us": pp["buffer"]["latency_s"][0] * 1e6,
        "latency_8B_pickle_us": pp["pickle"]["latency_s"][0] * 1e6,
        "bandwidth_4MiB_buffer_GBps": pp["buffer"]["bandwidth_Bps"][1] / 1e9,
        "bandwidth_4MiB_pickle_GBps": pp["pickle"]["bandwidth_Bps"][1] / 1e9,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    runs = []
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(args.runs):
            runs.append(one_run(Path(tmp)))
            print(f"run {i + 1}: " + ", ".join(f"{k} {v:.3f}" for k, v in runs[-1].items()))
    med = {key: statistics.median(r[key] for r in runs) for key in runs[0]}
    # Ratios are taken within each run (both APIs measured back to back), then the median.
    lat_ratio = statistics.median(
        r["latency_8B_pickle_us"] / r["latency_8B_buffer_us"] for r in runs
    )
    bw_ratio = statistics.median(
        r["bandwidth_4MiB_buffer_GBps"] / r["bandwidth_4MiB_pickle_GBps"] for r in runs
    )
    print(f"median of {args.runs} runs (mpirun -np 2, one host):")
    print(
        f"  latency 8 B     buffer {med['latency_8B_buffer_us']:.2f} us, "
        f"pickle {med['latency_8B_pickle_us']:.2f} us; pickle/buffer per run: median "
        f"{lat_ratio:.2f}x"
    )
    print(
        f"  bandwidth 4 MiB buffer {med['bandwidth_4MiB_buffer_GBps']:.2f} GB/s, "
        f"pickle {med['bandwidth_4MiB_pickle_GBps']:.2f} GB/s; buffer/pickle per run: median "
        f"{bw_ratio:.2f}x"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
