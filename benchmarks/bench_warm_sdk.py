"""The SageMaker SDK kept imported (``SMMPI_WARM_SDK``): ``submit --dry-run`` and ``submit
--local`` of the demo with the SDK imported by each command (cold) and by a kept one (warm),
side by side in one invocation.

    python benchmarks/bench_warm_sdk.py [--runs 7]

Runs alternate (cold, warm, cold, warm, ...) so that the machine's load hits both alike; figures
are medians of wall seconds and of CPU seconds. A warm run's CPU is the command's own (and its
children's) plus what the keeper's child for its build spent (read from the keeper's
``/proc/PID/stat``: it reaps its children). Prints a JSON summary on the last line.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_local import BIN, _env

SHAPE = ["demo", "-N", "2", "-n", "1"]
COMMANDS = {"dry-run": [*SHAPE, "--dry-run"], "local": [*SHAPE, "--local"]}


def _children_cpu() -> float:
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def _keeper_cpu(folder: Path) -> float:
    """CPU seconds of the keeper and its reaped children (0 when there is none)."""
    tick = os.sysconf("SC_CLK_TCK")
    total = 0.0
    for line in subprocess.run(
        ["pgrep", "-f", f"smmpi.sdk.keeper.*{folder}"], capture_output=True, text=True
    ).stdout.split():
        fields = Path(f"/proc/{line}/stat").read_text().rsplit(")", 1)[1].split()
        total += sum(int(fields[i]) for i in (11, 12, 13, 14)) / tick
    return total


def _one(argv: list[str], env: dict[str, str], folder: Path) -> tuple[float, float]:
    cpu, kept, start = _children_cpu(), _keeper_cpu(folder), time.perf_counter()
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    wall = time.perf_counter() - start
    return wall, _children_cpu() - cpu + _keeper_cpu(folder) - kept


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=7)
    opts = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="smmpi-bench-warm-sdk-"))
    cold_env = {**_env(), "SMMPI_LOCAL_JOBS": str(folder / "jobs")}
    cold_env.pop("SMMPI_WARM_SDK", None)
    warm_env = {**cold_env, "SMMPI_WARM_SDK": "600", "SMMPI_WARM_DIR": str(folder / "warm")}
    figures: dict[str, Any] = {}
    try:
        subprocess.run(
            [str(BIN / "smmpi"), "submit", *COMMANDS["dry-run"]],
            env=warm_env,
            check=True,
            stdout=subprocess.DEVNULL,
        )  # fmt: skip  (starts the keeper)
        for name, args in COMMANDS.items():
            rows: dict[str, list[tuple[float, float]]] = {"cold": [], "warm": []}
            for _ in range(opts.runs):
                for kind, env in (("cold", cold_env), ("warm", warm_env)):
                    rows[kind].append(_one([str(BIN / "smmpi"), "submit", *args], env, folder))
            medians = {
                kind: {
                    "wall_s": round(statistics.median(w for w, _ in runs), 3),
                    "cpu_s": round(statistics.median(c for _, c in runs), 3),
                }
                for kind, runs in rows.items()
            }
            medians["warm_over_cold_wall"] = round(
                medians["warm"]["wall_s"] / medians["cold"]["wall_s"], 3
            )
            medians["warm_over_cold_cpu"] = round(
                medians["warm"]["cpu_s"] / medians["cold"]["cpu_s"], 3
            )
            figures[name] = medians
            print(f"submit --{name}: {medians}")
    finally:
        subprocess.run([str(BIN / "smmpi"), "run", "--keep-warm", "0"], env=warm_env,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
        shutil.rmtree(folder, ignore_errors=True)
    print(json.dumps({"runs": opts.runs, "load": os.getloadavg()[0], **figures}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
