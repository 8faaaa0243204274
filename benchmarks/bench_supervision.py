"""What supervision costs: bare `mpirun -np 6 demo.py` against the same under smmpi's watchers.

Three commands alternate (order reversed every other run, so machine noise hits
all alike): bare mpirun; mpirun with every rank started by ``watch.py rank``
(its host file, exit record); and that under the run's reaper (``watch.py run``),
as ``smmpi run`` starts it. The ratio of medians to bare mpirun isolates the
watchers from the rest of ``smmpi run`` (CLI start-up, host trees). Prints a
JSON summary on the last line.
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


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=9)
    opts = parser.parse_args()
    from smmpi.catalog import entry_points_dir
    from smmpi.runners.local.hostfiles import WATCH

    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    with tempfile.TemporaryDirectory(prefix="smmpi-bench-") as tmp:
        host = Path(tmp) / "algo-1.env"
        host.write_bytes(f"SMMPI_STACK_DIR={tmp}\0SM_CURRENT_HOST=algo-1".encode())
        mpirun = [str(BIN / "mpirun"), "--oversubscribe", "-np", "6"]
        demo = [sys.executable, "-m", "mpi4py", str(entry_points_dir() / "demo.py")]
        ranks = [sys.executable, "-I", "-S", str(WATCH), "rank", str(host), "--", *demo]
        reaper = [sys.executable, "-I", "-S", str(WATCH), "run", "--parent", str(os.getpid())]
        reaper += ["--record", tmp, "--ranks", "6", "--"]
        commands = {
            "bare": [*mpirun, *demo],
            "rank watchers": [*mpirun, *ranks],
            "reaper + rank watchers": [*reaper, *mpirun, *ranks],
        }
        times: dict[str, list[float]] = {name: [] for name in commands}
        for i in range(opts.runs):
            order = list(commands.items())
            for name, argv in order if i % 2 == 0 else order[::-1]:
                start = time.perf_counter()
                subprocess.run(
                    argv, env=env, check=True, stdin=subprocess.DEVNULL, capture_output=True
                )
                times[name].append(time.perf_counter() - start)
    medians = {name: statistics.median(t) for name, t in times.items()}
    for name, median in medians.items():
        print(f"{name:<24}: median {median:.3f} s  ({median / medians['bare']:.3f}x)")
    summary = {name: round(m, 3) for name, m in medians.items()}
    summary["ratio"] = round(medians["reaper + rank watchers"] / medians["bare"], 3)
    print(json.dumps({"runs": opts.runs, **summary}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
