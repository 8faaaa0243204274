"""Local-run overhead: `smmpi run demo -N 3 -n 2` against bare `mpirun -np 6 ... demo.py`.

Runs alternate (bare, smmpi, bare, smmpi, ...) so that machine noise hits both
alike; the figure is the ratio of the medians. Also times `smmpi --help`, which
must not import the SageMaker SDK. Prints a JSON summary on the last line.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BIN = Path(sys.executable).parent


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env.setdefault("SMMPI_LOCAL_JOBS", os.path.join(tempfile.gettempdir(), "smmpi-bench-jobs"))
    env.update(
        OMPI_ALLOW_RUN_AS_ROOT="1",
        OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
        PATH=f"{BIN}{os.pathsep}{env.get('PATH', '')}",
    )
    return env


def _time(argv: list[str], cwd: Path | None = None) -> float:
    start = time.perf_counter()
    subprocess.run(
        argv, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=_env(), cwd=cwd
    )
    return time.perf_counter() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=7)
    opts = parser.parse_args()
    from smmpi.catalog import entry_points_dir

    demo_dir = entry_points_dir()
    bare_argv = [
        str(BIN / "mpirun"),
        "--oversubscribe",
        "-np",
        "6",
        sys.executable,
        "-m",
        "mpi4py",
        "demo.py",
    ]
    smmpi_argv = [str(BIN / "smmpi"), "run", "demo", "--instances", "3", "--ppn", "2"]
    help_argv = [str(BIN / "smmpi"), "--help"]
    # Local mode builds the SageMaker request first (SDK import + estimator), then runs it.
    local_argv = [*smmpi_argv[:1], "submit", *smmpi_argv[2:], "--local"]
    _time(bare_argv, demo_dir)  # warm the page cache for both
    _time(smmpi_argv)
    bare, wrapped, helps, local = [], [], [], []
    for _ in range(opts.runs):
        bare.append(_time(bare_argv, demo_dir))
        wrapped.append(_time(smmpi_argv))
        helps.append(_time(help_argv))
        local.append(_time(local_argv))
    result = {
        "runs": opts.runs,
        "bare_mpirun_median_s": round(statistics.median(bare), 3),
        "smmpi_run_median_s": round(statistics.median(wrapped), 3),
        "ratio_of_medians": round(statistics.median(wrapped) / statistics.median(bare), 3),
        "paired_ratio_median": round(
            statistics.median(w / b for w, b in zip(wrapped, bare, strict=True)), 3
        ),
        "smmpi_help_median_s": round(statistics.median(helps), 3),
        "submit_local_median_s": round(statistics.median(local), 3),
        "targets": {"ratio": 1.2, "help_s": 0.3},
    }
    print(f"bare mpirun -np 6 demo.py : median {result['bare_mpirun_median_s']} s")
    print(f"smmpi run demo -N 3 -n 2  : median {result['smmpi_run_median_s']} s")
    print(f"ratio (target <= 1.2)     : {result['ratio_of_medians']}")
    print(f"smmpi --help (target <= 0.3 s): median {result['smmpi_help_median_s']} s")
    print(f"smmpi submit demo -N 3 -n 2 --local: median {result['submit_local_median_s']} s")
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
